"""The real langchain-openai path: judges, decomposer and answerer built by api.Models from spec strings,
talking HTTP to FakeOpenAIServer on 127.0.0.1, which answers by output schema name.

The server's rules (never by prompt wording): decompositions and the answer are fixed lists; a
BinaryJudgements batch says "yes" to every listed item; a LinkJudgements batch links every item to the first
listed target (ctx_0, or Q1 for claim -> sub-query). Item and target ids are read from the "[ID] " line
starts the batch prompt lists them with.

Worked out by hand: sub-queries Q1 "Who founded Acme?", Q2 "When was Acme founded?"; retrieval (top 2 of a
two-chunk chromadb index, HashingEmbedding) ctx_0 = the Acme chunk, ctx_1 = the bananas chunk.
  covers: ctx_0 [Q1 yes, Q2 yes], ctx_1 [no, no] -> r = [1, 0] -> C-Prec@2 = 1/2, C-nDCG@2 = 1
  claims C1, C2 both serve Q1 only; both sub-queries "answered" -> Q1 covered, Q2 not (no claim serves it)
    -> Completeness 1/2, Conciseness 2/2 = 1; both supported by ctx_0 -> Verifiableness 1
  elements: both in context and in the answer -> answered, both coverages 1 (no loose run)
  checks: 2 + 2 element, 2x2 sub-query/chunk, 2 answered, 2x2 supported, 2x2 serves = 18
  requests: sub-queries, elements, answer, claims + 6 judge batches = 10
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fakes.openai_server import CHAT_PATH, ChatRequest, FakeOpenAIServer

from ragcourt.analysis.summary import summarize
from ragcourt.prompts.library import PromptId, load_prompt
from ragcourt.runs.models import Models
from ragcourt.runs.models import eval_context as _context
from ragcourt.runs.runner import Runner
from ragcourt.runs.workspace import Workspace
from ragcourt.schema import (
    CheckKind,
    Chunk,
    ElementStatus,
    Sample,
    UnscoredReason,
    VerdictStatus,
)
from ragcourt.schema.config import Batching, EvalConfig, JudgeSpec, Method
from ragcourt.stores.embeddings import HashingEmbedding
from ragcourt.stores.vectors import VectorStore
from ragcourt.systems import ReferenceRAG

SAMPLE = Sample(id="acme", question="Who founded Acme? When was Acme founded?",
                reference_answer="Ada Lovelace founded Acme in 1990.")
CORPUS = [Chunk(id="acme-doc", text="Ada Lovelace founded Acme in 1990.", title="Acme"),
          Chunk(id="banana-doc", text="Bananas are yellow.", title="Bananas")]
SHOWN_ID = re.compile(r"^\[([A-Za-z_]+\d+)\] ", re.MULTILINE)
GARBAGE = "Sure! {not json at all"
EXPECTED = {"c_prec@2": 0.5, "c_ndcg@2": 1.0, "completeness": 0.5, "conciseness": 1.0, "verifiableness": 1.0,
            "element_answer_coverage": 1.0, "element_coverage": 1.0}


def user_text(request: ChatRequest) -> str:
    return "\n".join(str(m.get("content") or "") for m in request.messages if m.get("role") == "user")


def shown_ids(request: ChatRequest) -> list[str]:
    return list(dict.fromkeys(SHOWN_ID.findall(user_text(request))))


def items_and_targets(request: ChatRequest) -> tuple[list[str], list[str]]:
    """Of a LinkJudgements batch: the items, and the targets (chunks ctx_N, or sub-queries QN for claims)."""
    shown = shown_ids(request)
    if any(s.startswith("ctx_") for s in shown):
        return [s for s in shown if not s.startswith("ctx_")], [s for s in shown if s.startswith("ctx_")]
    return [s for s in shown if s.startswith("C")], [s for s in shown if s.startswith("Q")]


def binary(request: ChatRequest) -> dict:
    items = shown_ids(request)
    return {"judgements": [{"item_id": i, "reasoning": "stated", "verdict": "yes"} for i in items]}


def links(request: ChatRequest) -> dict:
    items, targets = items_and_targets(request)
    return {"judgements": [{"item_id": i, "reasoning": "first one", "ids": targets[:1]} for i in items]}


BUILDERS = {
    "QueryDecomposition": lambda r: {"query_type": "multi_aspect",
                                     "sub_queries": ["Who founded Acme?", "When was Acme founded?"]},
    "ElementList": lambda r: {"elements": ["Ada Lovelace founded Acme.", "Acme was founded in 1990."]},
    "GroundedAnswer": lambda r: {"answer": "Ada Lovelace founded Acme. Acme sells anvils.", "used_ids": ["ctx_0"],
                                 "confidence": 0.8},
    "ClaimList": lambda r: {"claims": ["Ada Lovelace founded Acme.", "Acme sells anvils."]},
    "BinaryJudgements": binary,
    "LinkJudgements": links,
}


def config_for(server: FakeOpenAIServer) -> EvalConfig:
    url = server.base_url
    return EvalConfig(judges=(JudgeSpec(model=f"openai:judge-model@{url}"),), decomposer=f"openai:decomp@{url}",
                      answerer=f"openai:gen@{url}", top_k=2, methods=(Method.QCARE, Method.ELEMENTS),
                      batching=Batching.PER_KIND)  # the request counts below are per check kind


async def evaluate(home: Path, config: EvalConfig, run_id: str):
    """What api.astream does, with a chromadb index on HashingEmbedding."""
    workspace = Workspace(home)
    vectors = VectorStore.persistent(workspace.chroma_path, HashingEmbedding())
    if not vectors.has_collection("corpus"):
        vectors.index("corpus", CORPUS)
    store = workspace.open_store()
    try:
        models = Models(config, store)
        system = ReferenceRAG(vectors, "corpus", models.generator())
        runner = Runner(_context(config, system, store, models, vectors, "corpus"), run_id, workspace.run_dir(run_id))
        (diagnostics,) = [d async for d in runner.astream([SAMPLE])]
        checks = store.checks_for(run_id)
        verdicts = store.get_verdicts([c.id for c in checks])
        return diagnostics, checks, verdicts, summarize(store, run_id), store.get_retrievals(run_id)
    finally:
        store.close()


def values(diagnostics) -> dict[str, float | None]:
    return {m.name: m.value for m in diagnostics.metrics}


async def test_openai_judges_decomposer_and_answerer_over_http_then_a_rerun_makes_no_request(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    openai_server.builders.update(BUILDERS)
    config = config_for(openai_server)
    diagnostics, checks, verdicts, summary, retrievals = await evaluate(tmp_path, config, "run-1")

    assert openai_server.responder_errors == []
    assert [c.id for c in retrievals[0].chunks] == ["acme-doc", "banana-doc"]
    assert values(diagnostics) == pytest.approx(EXPECTED)
    assert diagnostics.uncovered_subqueries == ()
    assert diagnostics.unsupported_claims == ()
    assert [(e.text, e.status) for e in diagnostics.elements] == [
        ("Ada Lovelace founded Acme.", ElementStatus.ANSWERED), ("Acme was founded in 1990.", ElementStatus.ANSWERED)]
    # 17: no claim serves "When was Acme founded?" (each claim links the first sub-query), so its sufficiency on
    # R(q) is not asked (18 when sufficiency was asked on all claims)
    assert (diagnostics.n_checks, diagnostics.n_unscored, diagnostics.escalations) == (17, 0, ())
    assert openai_server.count(CHAT_PATH) == 10
    names = sorted(r.schema_name for r in openai_server.chat_requests())
    assert names == sorted(["QueryDecomposition", "ElementList", "GroundedAnswer", "ClaimList",
                            *["BinaryJudgements"] * 3, *["LinkJudgements"] * 3])
    assert {r.model for r in openai_server.chat_requests()} == {"decomp", "gen", "judge-model"}

    # every stored verdict says which model and which prompt (by content hash) produced it
    judge_id = f"openai:judge-model@{openai_server.base_url}"
    assert len(verdicts) == len(checks) == 17
    assert {(v.judge_id, v.model_id, v.status) for v in verdicts} == {(judge_id, judge_id, VerdictStatus.OK)}
    prompt_of = {CheckKind.SUBQUERY_IN_CHUNK: PromptId.JUDGE_SUBQUERY_IN_CHUNK,
                 CheckKind.CLAIM_SUPPORTED: PromptId.JUDGE_CLAIM_SUPPORTED,
                 CheckKind.ELEMENT_IN_ANSWER: PromptId.JUDGE_ELEMENT_IN_ANSWER}
    kinds = {c.id: c.kind for c in checks}
    for verdict in verdicts:
        assert verdict.prompt_hash and verdict.raw_output
        if kinds[verdict.check_id] in prompt_of:
            assert verdict.prompt_hash == load_prompt(prompt_of[kinds[verdict.check_id]]).hash
    assert summary.n_checks == 17 and summary.n_unscored == 0

    # The same work again under a new run id on the same store: frozen decompositions, the LLM cache (answer)
    # and the stored verdicts answer everything.
    again, _, _, _, _ = await evaluate(tmp_path, config, "run-2")
    assert openai_server.count(CHAT_PATH) == 10
    assert values(again) == values(diagnostics)
    assert [e.status for e in again.elements] == [e.status for e in diagnostics.elements]


async def test_malformed_judge_output_is_unscored_with_its_raw_text_and_counted(tmp_path: Path) -> None:
    def binary_or_garbage(request: ChatRequest) -> dict | str:
        items = shown_ids(request)
        # the "is this sub-query answered" batch (item Q1, its claims A1, A2) gets garbage, first try and repair
        return GARBAGE if items and items[0].startswith("Q") else binary(request)

    with FakeOpenAIServer(builders={**BUILDERS, "BinaryJudgements": binary_or_garbage}) as server:
        diagnostics, checks, verdicts, summary, _ = await evaluate(tmp_path, config_for(server), "run-bad")
        requests = server.count(CHAT_PATH)

    assert requests == 10 + 1  # one repair attempt for the malformed batch
    answered = {c.id for c in checks if c.kind is CheckKind.SUBQUERY_ANSWERED}
    assert len(answered) == 1  # Q1's R(q); no claim serves Q2, so its sufficiency is not asked (it was 2)
    bad = [v for v in verdicts if v.check_id in answered]
    assert [(v.status, v.unscored_reason, v.label) for v in bad] == [
        (VerdictStatus.UNSCORED, UnscoredReason.PARSE_FAILURE, None)]
    assert {v.raw_output for v in bad} == {GARBAGE}
    assert all(v.detail for v in bad)
    assert all(v.status is VerdictStatus.OK for v in verdicts if v.check_id not in answered)

    # answered = [undecided, not asked]: Q1 covered = yes AND undecided = undecided, Q2 = no claim serves it = no
    # -> Completeness 0/1 (one sub-query left out); every claim's conciseness undecided -> n/a
    completeness, conciseness = diagnostics.metric("completeness"), diagnostics.metric("conciseness")
    assert (completeness.value, completeness.n, completeness.n_unscored) == (0.0, 1, 1)
    assert (conciseness.value, conciseness.n_unscored) == (None, 2)
    assert conciseness.na_reason == "every claim is undecided"
    assert values(diagnostics)["verifiableness"] == 1.0 and values(diagnostics)["c_prec@2"] == 0.5
    assert diagnostics.n_unscored == 1
    assert set(diagnostics.escalations) == answered  # no scored verdict: escalated for a person

    assert (summary.n_checks, summary.n_verdicts, summary.n_unscored) == (17, 17, 1)
    assert (summary.n_escalated, summary.n_pending) == (1, 1)


def test_a_runs_clients_of_one_endpoint_share_one_connection_pool(tmp_path: Path) -> None:
    """Judges, decomposer and answerer on one server reuse connections (and TLS set-up) instead of each
    opening its own; a second endpoint gets its own pool."""
    config = EvalConfig(judges=(JudgeSpec(model="openai:judge@http://127.0.0.1:9/v1"),),
                        decomposer="openai:split@http://127.0.0.1:9/v1", answerer="openai:gen@http://127.0.0.1:8/v1")
    with Workspace(tmp_path).open_store() as store:
        models = Models(config, store)
        (judge,), decomposer, generator = models.judges(), models.decomposer(), models.generator()
        pools = [client.model.root_async_client._client
                 for client in (judge.client, decomposer.client, generator.client)]
    assert pools[0] is pools[1]
    assert pools[2] is not pools[0]
