"""Q-CARE on a conversation (issue 19.5, seed 002 section 6 / Table 7): examples/multi_turn.jsonl through the
per-sample graph, with a scripted LLM decomposer and a scripted LLM judge answering by output schema.

The decomposer resolves the latest question against the history only when the history reaches its prompt
("where is its headquarters" -> "Where is Acme's headquarters?"); the judge decides from a fixed table of
(item, target) texts and records every prompt. Hand-computed figures (precomputed contexts count whole):

mt1, chunks k1 "Acme's headquarters are in Springfield.", k2 "Bananas are yellow.", k3 "Acme employs 300
people."; sub-queries q1 headquarters, q2 how many people; k1 covers q1, k3 covers q2, so r = (1/2, 0, 1/2):
  C-Prec = (1/2 + 0 + 1/2) / 3 = 1/3; C-nDCG = (1/2 + 1/2 / log2 4) / (1/2 + 1/2 / log2 3) = 0.75 / 0.815465.
  Claims c1 headquarters (serves q1, supported by k1), c2 300 people (serves q2, supported by k3), c3 rockets
  (serves none, unsupported); R(q1) = {c1} and R(q2) = {c2} are judged sufficient: Completeness 2/2,
  Conciseness 2/3, Verifiableness 2/3.
mt2, chunks k1 "The Springfield zoo charges 10 dollars for entry.", k2 "The Springfield museum is free.";
  one sub-query "Is entry to the Springfield zoo free?" covered by k1: r = (1, 0), C-Prec 1/2, C-nDCG 1.
  One claim "Entry to the Springfield zoo is free." serves it and answers it (it need not be true):
  Completeness 1, Conciseness 1; no chunk supports it: Verifiableness 0.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from fakes.scripted_model import ScriptedChatModel, ScriptedRequest

from ragcourt.data.loaders import load_samples
from ragcourt.graphs.sample import build_sample_graph
from ragcourt.judging import LLMJudge
from ragcourt.judging.combined_checks import ANSWERED_FROM_LINKS
from ragcourt.judging.decomposers import LLMDecomposer
from ragcourt.judging.llm_judge import HISTORY_KINDS
from ragcourt.llm.client import LLMClient
from ragcourt.nodes.state import EvalContext
from ragcourt.schema import Sample
from ragcourt.schema.config import Batching, EvalConfig, JudgeSpec, Method
from ragcourt.stores.records import RecordStore
from ragcourt.systems import Precomputed

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "multi_turn.jsonl"
JUDGE = "scripted-judge"
_BLOCK = re.compile(r"(?:\[(\w+)\] (?:\([^)]*\) )?)?<<<([A-Z_]+)-([0-9a-f]+)>>>\n(.*?)\n<<<END-\2-\3>>>", re.DOTALL)

# What the decomposer gives when it sees the conversation: sub-queries and claims resolved against it.
RESOLVED_SUBQUERIES = {
    "Where is its headquarters, and how many people work there?":
        ("multi_aspect", ["Where is Acme's headquarters?", "How many people work at Acme?"]),
    "And the zoo?": ("single_focus", ["Is entry to the Springfield zoo free?"]),
}
RESOLVED_CLAIMS = {
    "The headquarters are in Springfield. About 300 people work there. Acme also sells rockets.":
        ["Acme's headquarters are in Springfield.", "About 300 people work at Acme.", "Acme sells rockets."],
    "The zoo is free as well.": ["Entry to the Springfield zoo is free."],
}
# The judge's table: (item, target) pairs that hold (chunk covers sub-query, claim supported by chunk, claim
# serves sub-query), and the sub-queries whose related claims answer them.
LINKS = {
    ("Where is Acme's headquarters?", "Acme's headquarters are in Springfield."),
    ("How many people work at Acme?", "Acme employs 300 people."),
    ("Acme's headquarters are in Springfield.", "Acme's headquarters are in Springfield."),
    ("About 300 people work at Acme.", "Acme employs 300 people."),
    ("Acme's headquarters are in Springfield.", "Where is Acme's headquarters?"),
    ("About 300 people work at Acme.", "How many people work at Acme?"),
    ("Is entry to the Springfield zoo free?", "The Springfield zoo charges 10 dollars for entry."),
    ("Entry to the Springfield zoo is free.", "Is entry to the Springfield zoo free?"),
}
ANSWERED = {"Where is Acme's headquarters?", "How many people work at Acme?", "Is entry to the Springfield zoo free?"}


def blocks(request: ScriptedRequest) -> list[tuple[str | None, str, str]]:
    prompt = str(request.messages[-1].content)
    return [(m.group(1), m.group(2), m.group(4)) for m in _BLOCK.finditer(prompt)]


def labelled(request: ScriptedRequest, label: str) -> list[str]:
    return [text for _, block_label, text in blocks(request) if block_label == label]


def sub_queries(request: ScriptedRequest, always_resolve: bool = False) -> dict:
    (question,) = labelled(request, "QUESTION")
    if not labelled(request, "HISTORY_USER") and not always_resolve:  # unresolved: the question as it stands
        return {"query_type": "single_focus", "sub_queries": [question]}
    query_type, items = RESOLVED_SUBQUERIES[question]
    return {"query_type": query_type, "sub_queries": items}


def claims(request: ScriptedRequest, always_resolve: bool = False) -> dict:
    (answer,) = labelled(request, "ANSWER")
    return {"claims": RESOLVED_CLAIMS[answer] if labelled(request, "HISTORY_USER") or always_resolve else [answer]}


def joint_split(request: ScriptedRequest, always_resolve: bool = False) -> dict:
    """Batching joint's one split call: the same splits, those the prompt asks for."""
    asked = sub_queries(request, always_resolve)
    return {**asked, **(claims(request, always_resolve) if labelled(request, "ANSWER") else {})}


def linked(request: ScriptedRequest) -> dict:
    found = blocks(request)
    items = [(shown, text) for shown, label, text in found if label == "ITEM"]
    targets = [(shown, text) for shown, label, text in found if label == "TARGET"]
    return {"judgements": [{"item_id": shown, "reasoning": "table", "ids": [t for t, tt in targets if (text, tt) in LINKS]}
                           for shown, text in items]}


def binary(request: ScriptedRequest) -> dict:
    return {"judgements": [{"item_id": shown, "reasoning": "table", "verdict": "yes" if text in ANSWERED else "no"}
                           for shown, label, text in blocks(request) if label == "ITEM"]}


def combined(request: ScriptedRequest) -> dict:
    """The per-sample batching's one reply: the same table, for every kind the prompt asks."""
    found = blocks(request)
    chunks = [(shown, text) for shown, label, text in found if label == "CHUNK"]
    subqueries = [(shown, text) for shown, label, text in found if label == "SUBQUERY"]
    asked_answered = {shown for shown, label, _ in found if label == "CLAIMS"}
    if ANSWERED_FROM_LINKS in str(request.messages[-1].content):  # joint: on the reply's own serve links
        asked_answered = {shown for shown, _ in subqueries}
    return {
        "subqueries": [{"item_id": q, "reasoning": "table",
                        "chunk_ids": [c for c, ct in chunks if (text, ct) in LINKS] if chunks else None,
                        "answered": ("yes" if text in ANSWERED else "no") if q in asked_answered else None}
                       for q, text in subqueries],
        "claims": [{"item_id": c, "reasoning": "table",
                    "supporting_chunk_ids": [k for k, kt in chunks if (text, kt) in LINKS] if chunks else None,
                    "served_subquery_ids": [q for q, qt in subqueries if (text, qt) in LINKS]}
                   for c, label, text in found if label == "CLAIM"],
    }


async def run(samples: list[Sample], store: RecordStore, batching: Batching,
              always_resolve: bool = False) -> tuple[dict, ScriptedChatModel, ScriptedChatModel]:
    """always_resolve: the scripted decomposer gives the resolved splits even without history (to compare
    like with like)."""
    decomposer_model = ScriptedChatModel(builders={
        "QueryDecomposition": lambda request: sub_queries(request, always_resolve),
        "ClaimList": lambda request: claims(request, always_resolve),
        "JointSplit": lambda request: joint_split(request, always_resolve)})
    judge_model = ScriptedChatModel(builders={"LinkJudgements": linked, "BinaryJudgements": binary,
                                              "CombinedJudgements": combined})
    context = EvalContext(
        config=EvalConfig(judges=(JudgeSpec(model=JUDGE),), methods=(Method.QCARE,), top_k=3, batching=batching),
        system=Precomputed(), judges=[LLMJudge(LLMClient(judge_model, model_id="scripted:judge"), judge_id=JUDGE)],
        decomposer=LLMDecomposer(LLMClient(decomposer_model, model_id="scripted:decomposer")), store=store,
    )
    graph = build_sample_graph()
    states = {s.id: await graph.ainvoke({"run_id": "run-mt", "sample": s}, context=context) for s in samples}
    return states, decomposer_model, judge_model


@pytest.fixture
def store(tmp_path: Path):
    with RecordStore(tmp_path / "store.sqlite") as opened:
        yield opened


def figures(state: dict) -> dict[str, float | None]:
    """The Q-CARE figures (batching joint also reports its follow-up calls, none here: every reply is whole)."""
    metrics = state["diagnostics"].metrics
    assert all(m.value == 0 for m in metrics if m.name == "follow_up_calls")
    return {m.name: m.value for m in metrics if m.name != "follow_up_calls"}


# Judge calls a sample: per kind, one per judged kind (chunks x sub-queries, claims x chunks, claims x
# sub-queries, then sufficiency on R(q)); per sample, the first three in one call, then sufficiency; joint, all
# in one call (sufficiency on the reply's own serve links, found in the store in its round).
JUDGE_CALLS = {Batching.PER_KIND: 4, Batching.PER_SAMPLE: 2, Batching.JOINT: 1}
# Decomposer calls a sample: sub-queries and claims, or (joint) both in one.
SPLIT_CALLS = {Batching.PER_KIND: 2, Batching.PER_SAMPLE: 2, Batching.JOINT: 1}


@pytest.mark.parametrize("batching", list(Batching))
async def test_the_multi_turn_example_gives_the_hand_computed_qcare_figures(store: RecordStore,
                                                                           batching: Batching) -> None:
    samples = list(load_samples(EXAMPLE).samples)
    states, decomposer_model, judge_model = await run(samples, store, batching)

    ndcg_mt1 = (0.5 + 0.5 / math.log2(4)) / (0.5 + 0.5 / math.log2(3))
    assert ndcg_mt1 == pytest.approx(0.919721, abs=1e-6)
    assert figures(states["mt1"]) == pytest.approx({
        "c_prec": 1 / 3, "c_ndcg": ndcg_mt1, "completeness": 1.0, "conciseness": 2 / 3, "verifiableness": 2 / 3})
    assert figures(states["mt2"]) == pytest.approx({
        "c_prec": 0.5, "c_ndcg": 1.0, "completeness": 1.0, "conciseness": 1.0, "verifiableness": 0.0})
    mt1, mt2 = states["mt1"]["diagnostics"], states["mt2"]["diagnostics"]
    assert (mt1.n_unscored, mt2.n_unscored, mt1.escalations, mt2.escalations) == (0, 0, (), ())
    assert mt1.unsupported_claims == ("Acme sells rockets.",)
    assert mt2.unsupported_claims == ("Entry to the Springfield zoo is free.",)
    assert [sq.text for sq in states["mt1"]["subqueries"]] == ["Where is Acme's headquarters?",
                                                               "How many people work at Acme?"]

    # Every Q-CARE check carries its sample's history, and every prompt showed it, turn by turn, delimited.
    for sample in samples:
        checks = [c for c in states[sample.id]["checks"].values() if c.sample_id == sample.id]
        assert checks and all(c.kind in HISTORY_KINDS and c.history == sample.history for c in checks)
    for request in [*decomposer_model.requests, *judge_model.requests]:
        (question,) = labelled(request, "QUESTION")
        sample = next(s for s in samples if s.question == question)
        turns = [(label, text) for _, label, text in blocks(request) if label.startswith("HISTORY_")]
        assert turns == [(f"HISTORY_{t.role.upper()}", t.content) for t in sample.history]
    # two decomposer calls a sample (sub-queries, claims; one when joint) and the judge's
    assert (decomposer_model.calls, judge_model.calls) == (2 * SPLIT_CALLS[batching], 2 * JUDGE_CALLS[batching])


@pytest.mark.parametrize("batching", list(Batching))
async def test_the_history_adds_no_llm_call(store: RecordStore, tmp_path: Path, batching: Batching) -> None:
    """The same samples with their history dropped, split the same way, cost the same calls and give the same
    figures: the history is shown, never an extra call."""
    samples = list(load_samples(EXAMPLE).samples)
    with RecordStore(tmp_path / "single-turn.sqlite") as other:
        single, decomposer_single, judge_single = await run([s.model_copy(update={"history": ()}) for s in samples],
                                                            other, batching, always_resolve=True)
    multi, decomposer_multi, judge_multi = await run(samples, store, batching)
    assert (decomposer_single.calls, judge_single.calls) == (decomposer_multi.calls, judge_multi.calls)
    assert judge_multi.calls == 2 * JUDGE_CALLS[batching]
    assert {k: figures(v) for k, v in single.items()} == {k: figures(v) for k, v in multi.items()}
    assert all(not c.history for state in single.values() for c in state["checks"].values())
    assert not any("HISTORY" in str(r.messages[-1].content) for r in [*decomposer_single.requests,
                                                                       *judge_single.requests])
