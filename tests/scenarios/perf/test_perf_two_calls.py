"""Batching joint through the per-sample graph: one split call and one judgement per sample, with every RAGAS
metric's counterpart (method reference), a scripted decomposer and judge counting their calls; a long reply
that loses an item gets one follow-up call and no verdict is lost.

Hand-computed figures of the sample (chunks k1 "Paris lies on the Seine.", k2 "Rome is old.", k3 "Berlin has
many museums."; elements e1 "Paris is on the Seine", e2 "Berlin has museums"; claims c1 "Paris is on the
Seine.", c2 "Madrid is sunny."; the judge's table below):
  claim precision 1/2 (the reference supports c1, not c2); element recall 1/2 (the answer states e1, not e2);
  factual F1 = 2 * 1/2 * 1/2 / 1 = 1/2; context precision with reference: k1 (e1) relevant, k2 not, k3 (e2)
  relevant: (1/1 + 2/3) / 2 = 5/6; element coverage 1 (both in the context); verifiableness 1/2 (k1 supports c1);
  completeness 1/2 (q1 served by c1 and answered, q2 served by none); conciseness 1/2 (c2 serves nothing).
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from fakes.scripted_model import ScriptedChatModel, ScriptedRequest

from ragcourt.graphs.sample import build_sample_graph
from ragcourt.judging import LLMJudge
from ragcourt.judging.combined_checks import ANSWERED_FROM_LINKS
from ragcourt.judging.decomposers import LLMDecomposer
from ragcourt.llm.client import LLMClient
from ragcourt.nodes.names import ANSWER, PLAN_CHECKS, RECONCILE, RETRIEVE, SCORE, SPLIT_INPUTS
from ragcourt.nodes.names import JUDGE as JUDGE_NODE
from ragcourt.nodes.state import EvalContext
from ragcourt.schema import CheckKind, Chunk, Label, Sample, VerdictStatus
from ragcourt.schema.config import Batching, EvalConfig, JudgeSpec, Method
from ragcourt.stores.records import RecordStore
from ragcourt.systems import Precomputed

_BLOCK = re.compile(r"(?:\[(\w+)\] (?:\([^)]*\) )?)?<<<([A-Z_]+)-([0-9a-f]+)>>>\n(.*?)\n<<<END-\2-\3>>>", re.DOTALL)
JUDGE = "scripted-judge"
SAMPLE = Sample(
    id="s1", question="Where is Paris, and what does Berlin have?",
    reference_answer="Paris is on the Seine. Berlin has museums.", answer="Paris is on the Seine. Madrid is sunny.",
    contexts=(Chunk(id="k1", text="Paris lies on the Seine.", rank=1), Chunk(id="k2", text="Rome is old.", rank=2),
              Chunk(id="k3", text="Berlin has many museums.", rank=3)),
)
SUBQUERIES = ["Where is Paris?", "What does Berlin have?"]
ELEMENTS = ["Paris is on the Seine", "Berlin has museums"]
CLAIMS = ["Paris is on the Seine.", "Madrid is sunny."]
# (item, target) pairs that hold, targets as shown: chunk texts, sub-query texts, "context", "answer", "reference"
HOLDS = {
    ("Paris is on the Seine", "Paris lies on the Seine."), ("Berlin has museums", "Berlin has many museums."),
    ("Paris is on the Seine", "context"), ("Berlin has museums", "context"), ("Paris is on the Seine", "answer"),
    ("Paris is on the Seine.", "reference"),
    ("Where is Paris?", "Paris lies on the Seine."), ("What does Berlin have?", "Berlin has many museums."),
    ("Paris is on the Seine.", "Paris lies on the Seine."), ("Paris is on the Seine.", "Where is Paris?"),
}
ANSWERED = {"Where is Paris?"}


def shown(request: ScriptedRequest) -> dict[str, list[tuple[str, str]]]:
    of: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for match in _BLOCK.finditer(str(request.messages[-1].content)):
        of[match.group(2)].append((match.group(1), match.group(4)))
    return of


def joint_split(request: ScriptedRequest) -> dict[str, Any]:
    of = shown(request)
    return {"query_type": "multi_aspect", "sub_queries": SUBQUERIES,
            "elements": ELEMENTS if of["REFERENCE"] else None, "claims": CLAIMS if of["ANSWER"] else None}


def combined(request: ScriptedRequest, drop: set[str]) -> dict[str, Any]:
    """The judge's table, for every field the reply model has; a claim in `drop` is left out of a long reply."""
    of = shown(request)
    chunks, subqueries = of["CHUNK"], of["SUBQUERY"]
    prompt = str(request.messages[-1].content)
    long = len(of["ELEMENT"]) + len(subqueries) + len(of["CLAIM"]) > 4

    def ids(text: str, targets: list[tuple[str, str]]) -> list[str]:
        return [sid for sid, target in targets if (text, target) in HOLDS]

    def yes(text: str, target: str) -> str:
        return "yes" if (text, target) in HOLDS else "no"

    return {
        "elements": [{"item_id": e, "reasoning": "table", "in_context": yes(t, "context"),
                      "in_answer": yes(t, "answer"), "chunk_ids": ids(t, chunks)} for e, t in of["ELEMENT"]],
        "subqueries": [{"item_id": q, "reasoning": "table", "chunk_ids": ids(t, chunks),
                        "answered": ("yes" if t in ANSWERED else "no") if ANSWERED_FROM_LINKS in prompt else None}
                       for q, t in subqueries],
        "claims": [{"item_id": c, "reasoning": "table", "supporting_chunk_ids": ids(t, chunks),
                    "served_subquery_ids": ids(t, subqueries), "in_reference": yes(t, "reference")}
                   for c, t in of["CLAIM"] if not (long and t in drop)],
    }


def binary(request: ScriptedRequest) -> dict[str, Any]:  # the sufficiency round, when it has to ask
    return {"judgements": [{"item_id": i, "reasoning": "table", "verdict": "yes" if t in ANSWERED else "no"}
                           for i, t in shown(request)["ITEM"]]}


async def evaluate(store: RecordStore, drop: set[str],
                   steps: list[str] | None = None) -> tuple[dict, ScriptedChatModel, ScriptedChatModel]:
    """The sample through the graph; `steps`, if given, gets the nodes that ran, in order."""
    decomposer = ScriptedChatModel(builders={"JointSplit": joint_split})
    judge = ScriptedChatModel(builders={"CombinedReferenceJudgements": lambda r: combined(r, drop),
                                        "CombinedJudgements": lambda r: combined(r, drop),
                                        "BinaryJudgements": binary})
    config = EvalConfig(judges=(JudgeSpec(model=JUDGE),), methods=(Method.QCARE, Method.ELEMENTS, Method.REFERENCE),
                        batching=Batching.JOINT, top_k=3)
    context = EvalContext(config=config, system=Precomputed(), store=store,
                          judges=[LLMJudge(LLMClient(judge, model_id="scripted:judge"), judge_id=JUDGE)],
                          decomposer=LLMDecomposer(LLMClient(decomposer, model_id="scripted:decomposer")))
    state: dict[str, Any] = {}
    async for mode, chunk in build_sample_graph().astream({"run_id": "run-joint", "sample": SAMPLE}, context=context,
                                                          stream_mode=["updates", "values"]):
        if mode == "values":
            state = chunk
        elif steps is not None:
            steps.extend(chunk)
    return state, decomposer, judge


@pytest.fixture
def store(tmp_path: Path):
    with RecordStore(tmp_path / "store.sqlite") as opened:
        yield opened


EXPECTED = {"claim_precision": 0.5, "element_recall": 0.5, "factual_f1": 0.5, "context_precision_ref": 5 / 6,
            "element_coverage": 1.0, "verifiableness": 0.5, "completeness": 0.5, "conciseness": 0.5}


async def test_perf_joint_makes_two_calls_a_sample_with_every_ragas_counterpart(store: RecordStore) -> None:
    state, decomposer, judge = await evaluate(store, drop=set())
    assert (decomposer.calls, judge.calls) == (1, 1)
    assert [r.schema_name for r in [*decomposer.requests, *judge.requests]] == ["JointSplit",
                                                                                 "CombinedReferenceJudgements"]
    figures = {m.name: m.value for m in state["diagnostics"].metrics}
    assert {name: figures[name] for name in EXPECTED} == pytest.approx(EXPECTED)
    assert figures["follow_up_calls"] == 0
    assert state["diagnostics"].n_unscored == 0


async def test_perf_joint_decides_sufficiency_from_the_one_reply_without_a_round_of_its_own(
    store: RecordStore,
) -> None:
    """The reply's serve links give R(q), and its sufficiency verdicts are on the checks R(q) makes: reconciliation
    plans and decides those checks itself, so the sample takes no second planning and reconciliation step."""
    steps: list[str] = []
    state, _, judge = await evaluate(store, drop=set(), steps=steps)
    assert steps == [RETRIEVE, ANSWER, SPLIT_INPUTS, PLAN_CHECKS, JUDGE_NODE, RECONCILE, SCORE]
    answered = [c for c in state["checks"].values() if c.kind is CheckKind.SUBQUERY_ANSWERED]
    assert [c.subject_text for c in answered] == ["Where is Paris?"]  # q2: no claim serves it, nothing to ask
    assert state["reconciled"][answered[0].id].label is Label.YES and judge.calls == 1
    assert answered[0].id in {c.id for c in store.checks_of_samples("run-joint", ["s1"])}  # planned as any check


async def test_perf_joint_asks_again_for_what_a_long_reply_drops_and_loses_no_verdict(store: RecordStore) -> None:
    state, decomposer, judge = await evaluate(store, drop={"Madrid is sunny."})
    # the split, the long reply without c2, the follow-up for c2's checks alone; then the sufficiency round
    # asks on its own: the first reply's serve links were incomplete, so it could not be decided from them
    assert [r.schema_name for r in judge.requests] == ["CombinedReferenceJudgements", "CombinedReferenceJudgements",
                                                       "BinaryJudgements"]
    follow_up = shown(judge.requests[1])
    assert [t for _, t in follow_up["CLAIM"]] == ["Madrid is sunny."] and not follow_up["ELEMENT"]
    diagnostics = state["diagnostics"]
    assert diagnostics.n_unscored == 0 and all(v.status is VerdictStatus.OK for v in state["verdicts"].values())
    figures = {m.name: m for m in diagnostics.metrics}
    assert {name: figures[name].value for name in EXPECTED} == pytest.approx(EXPECTED)
    # one follow-up call; c2's checks asked again: 3 chunks, 2 sub-queries, the reference
    assert (figures["follow_up_calls"].value, figures["follow_up_calls"].n) == (1.0, 6)
    assert (diagnostics.usage.follow_up_calls, diagnostics.usage.follow_up_checks) == (1, 6)
