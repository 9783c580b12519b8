"""The benchmark's simulated server: valid instances of every output schema ragcourt uses, ids that map
back, and a re-run of an unchanged run that makes no LLM call."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures import REPO, bench_module
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel

from ragcourt.judging import (
    BinaryJudgements,
    DimensionScore,
    LinkJudgements,
    PairwiseDecision,
    render_batch,
)
from ragcourt.judging.combined_checks import CombinedJudgements, read_labels, render_combined
from ragcourt.judging.decomposers import ClaimList, ElementList, QueryDecomposition
from ragcourt.runs import api
from ragcourt.schema import NORMAL, Check, CheckKind, Chunk, Sample
from ragcourt.schema.config import Batching, EvalConfig, JudgeSpec
from ragcourt.systems import GroundedAnswer, Precomputed

BENCH = REPO / "bench"


sim = bench_module("sim_server")

OUTPUT_SCHEMAS: list[type[BaseModel]] = [
    BinaryJudgements, LinkJudgements, DimensionScore, PairwiseDecision, CombinedJudgements,
    QueryDecomposition, ClaimList, ElementList, GroundedAnswer,
]


@pytest.mark.parametrize("schema", OUTPUT_SCHEMAS, ids=lambda s: s.__name__)
def test_perf_sim_instances_validate_as_tool_and_json_schema(schema: type[BaseModel]) -> None:
    as_tool = sim.schema_instance(convert_to_openai_tool(schema)["function"]["parameters"], "a prompt")
    as_json_schema = sim.schema_instance(schema.model_json_schema(), "a prompt")
    schema.model_validate(as_tool)
    schema.model_validate(as_json_schema)


def checks_of(kind: CheckKind, subjects: list[tuple[str, str]], targets: list[tuple[str, str]]) -> list[Check]:
    return [Check(kind=kind, sample_id="s", condition=NORMAL, subject_id=s[0], subject_text=s[1], target_id=t[0],
                  target_text=t[1], question="q?") for s in subjects for t in targets]


def test_perf_sim_item_ids_come_from_the_prompt_so_every_check_maps_back() -> None:
    chunks = [("k1", "alpha text"), ("k2", "beta text")]
    checks = [
        *checks_of(CheckKind.ELEMENT_IN_ANSWER, [("e1", "one"), ("e2", "two"), ("e3", "three")], [("answer", "a")]),
        *checks_of(CheckKind.SUBQUERY_IN_CHUNK, [("q1", "sq one")], chunks),
        *checks_of(CheckKind.CLAIM_SUPPORTED, [("c1", "claim one"), ("c2", "claim two")], chunks),
    ]
    batch = render_combined(checks)
    reply = CombinedJudgements.model_validate(
        sim.schema_instance(convert_to_openai_tool(CombinedJudgements)["function"]["parameters"], batch.prompt))
    assert [e.item_id for e in reply.elements] == ["E1", "E2", "E3"]
    assert [q.item_id for q in reply.subqueries] == ["Q1"]
    assert [c.item_id for c in reply.claims] == ["C1", "C2"]
    assert all(set(c.supporting_chunk_ids or ()) <= {"ctx_0", "ctx_1"} and c.supporting_chunk_ids for c in reply.claims)
    assert None not in read_labels(batch, reply, checks).values()

    # per kind: sub-query items (Q ids) although the field's example names E1; chunk targets as ids
    prompt, shown_items, shown_targets = render_batch(CheckKind.SUBQUERY_IN_CHUNK, checks[3:5])
    linked = LinkJudgements.model_validate(
        sim.schema_instance(convert_to_openai_tool(LinkJudgements)["function"]["parameters"], prompt))
    assert [j.item_id for j in linked.judgements] == list(shown_items) == ["Q1"]
    assert set(linked.judgements[0].ids) <= set(shown_targets) and linked.judgements[0].ids


def test_perf_sim_finds_a_schema_written_into_a_prompt() -> None:
    prompt = f"Answer in JSON following this schema: {json.dumps(ClaimList.model_json_schema())} Thanks."
    answer = sim.answer_for({"messages": [{"role": "user", "content": prompt}]})
    assert answer.tool is None and answer.name == "ClaimList"
    assert len(ClaimList.model_validate_json(answer.text).claims) == 2
    plain = sim.answer_for({"messages": [{"role": "user", "content": "Say something about rivers please"}]})
    assert plain.name == "text" and plain.text == "something about rivers please"  # words of 4+ letters


def test_perf_sim_latency_draws_follow_the_distribution() -> None:
    fixed = sim.Latency(0.2).draws()
    assert [next(fixed) for _ in range(3)] == [0.2, 0.2, 0.2]
    uniform = sim.Latency(0.2, 0.05, "uniform", seed=1).draws()
    assert all(0.15 <= next(uniform) <= 0.25 for _ in range(100))
    assert sim.Latency(0.0, tokens_per_s=100).token_time(50) == 0.5


@pytest.fixture
def sim_url() -> Iterator[str]:
    with sim.running() as url:
        yield url


def requests_served(url: str) -> int:
    return int(sim.stats(url)["requests"])


def bench_sample(index: int) -> Sample:
    chunks = tuple(Chunk(id=f"k{index}-{i}", text=f"Fact {i} about topic {index}.", title=f"T{i}", rank=i + 1)
                   for i in range(3))
    return Sample(id=f"s{index}", question=f"What about topic {index}?", reference_answer=f"Topic {index} is old.",
                  contexts=chunks, answer=f"Topic {index} is old. It has facts.")


async def test_perf_rerun_of_an_unchanged_run_makes_no_llm_call(sim_url: str, tmp_path: Path) -> None:
    model = f"openai:sim@{sim_url}"
    config = EvalConfig(judges=(JudgeSpec(model=model, id="sim-judge"),), decomposer=model,
                        batching=Batching.PER_SAMPLE)
    samples = [bench_sample(i) for i in range(3)]

    async def run(run_id: str) -> int:
        before = requests_served(sim_url)
        finished = [d async for d in api.astream(samples, Precomputed(), config=config, home=tmp_path, run_id=run_id)]
        assert len(finished) == 3 and all(d.n_unscored == 0 and d.n_checks > 0 for d in finished)
        return requests_served(sim_url) - before

    # sub-queries, elements, claims, one combined judge call, then Q-CARE's sufficiency on R(q) once the serve
    # checks are reconciled: 5 per sample (12, 4 per sample, when sufficiency was judged on all claims at once)
    assert await run("first") == 15
    assert await run("first") == 0  # the same run: finished samples come from the store
    assert await run("second") == 0  # a new run over the same store: every call is in the LLM cache
