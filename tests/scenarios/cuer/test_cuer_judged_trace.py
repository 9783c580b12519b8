"""CUE-R through the LangChain example app: a black-box system reports no trace, so U is judged from the answer's
claims, per condition (issue 19, item 3).

The app is examples/langchain_app's answer chain (its prompt, ChatOpenAI, StrOutputParser) on a FakeOpenAIServer
whose model answers with the context sentence sharing most content words with the question; the retriever
returns fixed documents; the decomposer splits sentences; the lexical judge says a chunk supports a claim when
it holds at least half of the claim's content words. Worked out by hand (k = 3):

A "Who designed the Eiffel Tower?" (gold title "Eiffel Tower"), shown a1 (gold), a2, a3.
  normal: a1's sentence; its claim {eiffel, tower, designed, company, gustave} is in a1 (5/5), not a2 (2/5) or a3:
  U = {a1}, G = 1. remove a1: a2's "Its tower is the Eiffel Tower." ({tower, eiffel}: in a2 only): U = {a2},
  divergence 1, G 0. remove a2 / a3: the normal answer, U = {a1}: divergence 0, G 1.
B "Who wrote Hamlet?" (gold title "Hamlet"), shown b1 (gold), b2.
  normal: b2's "William Shakespeare wrote Hamlet." ({william, shakespeare, wrote, hamlet}: 3/4 in b1, 4/4 in b2):
  U = {b1, b2}, G = 1/2. remove b1: the same answer, U = {b2}: divergence 1/2, G 0. remove b2: b1's "Hamlet was
  written by William Shakespeare.", U = {b1}: divergence 1/2, G 1.
So the mean divergence under remove is 1/3 for A and 1/2 for B (the old every-shown-chunk trace gave
1 - (k-1)/k whatever the answer), and grounding depends on the condition.

Claim x chunk checks: a pair is judged once per sample (the first condition showing it): A normal 3 + remove:a1
2 (its new claim against a2 and a3); B normal 2 + remove:b2 1; remove:a2, remove:a3 and remove:b1 need none.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from fakes.openai_server import FakeOpenAIServer
from fixtures import REPO
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

sys.path.insert(0, str(REPO / "tests" / "scenarios" / "live"))

from live_helpers import best_sentence, example_app

import ragcourt
from ragcourt.analysis.cuer_tables import cuer_condition_frame, cuer_frame
from ragcourt.runs.workspace import Workspace
from ragcourt.schema import (
    NORMAL,
    CheckKind,
    ConditionKind,
    ConfidenceSource,
    Sample,
    SampleDiagnostics,
    TraceSource,
)
from ragcourt.schema.config import EvalConfig, JudgeSpec, Method, PerturbationSpec

DOCUMENTS = {
    "Who designed the Eiffel Tower?": [
        ("a1", "Eiffel Tower", "The Eiffel Tower was designed by the company of Gustave Eiffel."),
        ("a2", "Paris", "Paris is the capital of France. Its tower is the Eiffel Tower."),
        ("a3", "Lyon", "Lyon has a large cathedral."),
    ],
    "Who wrote Hamlet?": [
        ("b1", "Hamlet", "Hamlet was written by William Shakespeare."),
        ("b2", "Shakespeare", "William Shakespeare wrote Hamlet. He was born in Stratford."),
    ],
}
SAMPLES = [
    Sample(id="A", question="Who designed the Eiffel Tower?", gold_answers=("Gustave Eiffel",),
           gold_titles=("Eiffel Tower",)),
    Sample(id="B", question="Who wrote Hamlet?", gold_answers=("William Shakespeare",), gold_titles=("Hamlet",)),
]


class Shelf(BaseRetriever):
    """The app's retriever stand-in: fixed documents per question, cut to k."""

    k: int = 3

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return [Document(id=i, page_content=text, metadata={"title": title})
                for i, title, text in DOCUMENTS[query][: self.k]]


def config(**changes: Any) -> EvalConfig:
    return EvalConfig(judges=(JudgeSpec(model="lexical"),), methods=(Method.CUER,), top_k=3,
                      perturbations=PerturbationSpec(kinds=(ConditionKind.REMOVE,)), **changes)


async def evaluate(tmp_path: Path, openai_server: Any, run_id: str, **changes: Any) -> dict[str, SampleDiagnostics]:
    openai_server.responder = best_sentence
    chain = example_app.build_answer_chain(example_app.build_llm(openai_server.base_url, "fake-model"))
    result = await ragcourt.aevaluate(SAMPLES, retriever=Shelf(), chain=chain, config=config(**changes),
                                      home=tmp_path, run_id=run_id)
    return {d.sample_id: d for d in result.diagnostics}


def effects(diagnostics: SampleDiagnostics) -> dict[str, tuple[float | None, float | None, float | None]]:
    return {p.condition.key: (p.trace_divergence, p.grounding, p.d_grounding) for p in diagnostics.perturbations}


async def test_a_black_box_trace_is_judged_per_condition_and_divergence_varies(tmp_path, openai_server) -> None:
    by_id = await evaluate(tmp_path, openai_server, "judged")
    a, b = by_id["A"], by_id["B"]
    assert (a.metric("grounding_score").value, b.metric("grounding_score").value) == (1.0, 0.5)
    assert a.trace_source is b.trace_source is TraceSource.JUDGED
    assert effects(a) == {"remove:a1": (1.0, 0.0, -1.0), "remove:a2": (0.0, 1.0, 0.0),
                          "remove:a3": (0.0, 1.0, 0.0)}
    assert effects(b) == {"remove:b1": (0.5, 0.0, -0.5), "remove:b2": (0.5, 1.0, 0.5)}
    assert {p.trace_source for d in (a, b) for p in d.perturbations} == {TraceSource.JUDGED}

    # trace divergence under "remove one chunk" is not a constant: its mean differs between the questions
    mean = {d.sample_id: sum(p.trace_divergence for p in d.perturbations) / len(d.perturbations) for d in (a, b)}
    assert mean == pytest.approx({"A": 1 / 3, "B": 1 / 2})
    # grounding depends on the condition: the run-level table per condition and chunk gold status
    table = {(r.perturbation, r.chunk): (r.trace, r.grounding, r.rows, r.n_grounding)
             for r in cuer_condition_frame([a, b]).itertuples(index=False)}
    assert table == {("normal", "none perturbed"): ("judged", 0.75, 2, 2),
                     ("remove", "gold"): ("judged", 0.0, 2, 2), ("remove", "non-gold"): ("judged", 1.0, 3, 3)}
    effects_table = {(r.perturbation, r.chunk): r.trace_divergence for r in cuer_frame([a, b]).itertuples()}
    assert effects_table == pytest.approx({("remove", "gold"): 0.75, ("remove", "non-gold"): 1 / 6})

    # the system reports no trace (not every shown chunk), and without a probe no confidence: CE n/a
    records = Workspace(tmp_path).open_store()
    try:
        answers = {(x.sample_id, x.condition.key): x for x in records.get_answers("judged")}
    finally:
        records.close()
    assert {(x.trace_source, x.used_chunk_ids, x.confidence_source) for x in answers.values()} == {
        (TraceSource.NONE, (), ConfidenceSource.NONE)}
    assert answers[("A", "remove:a1")].text == "Its tower is the Eiffel Tower."
    assert answers[("B", "remove:b2")].text == "Hamlet was written by William Shakespeare."
    assert a.metric("confidence_error").na_reason == "the model reported no confidence"
    assert all(p.confidence_error is None for p in a.perturbations)


async def test_claim_chunk_pairs_are_judged_once_per_sample(tmp_path, openai_server) -> None:
    await evaluate(tmp_path, openai_server, "cost")
    records = Workspace(tmp_path).open_store()
    try:
        planned = Counter((c.sample_id, c.condition.key) for c in records.checks_for("cost")
                          if c.kind is CheckKind.CLAIM_SUPPORTED)
    finally:
        records.close()
    assert planned == {("A", NORMAL.key): 3, ("A", "remove:a1"): 2, ("B", NORMAL.key): 2, ("B", "remove:b2"): 1}


async def test_the_optional_probe_gives_a_labelled_confidence_per_condition(tmp_path, openai_server) -> None:
    """With `confidence_probe` set, one call per answer of CUE-R's conditions asks for a confidence (0.8 here):
    every answer is wrong (soft correctness 0), so CE = |0.8 - 0| = 0.8 under every condition, labelled probed."""
    with FakeOpenAIServer(builders={"ProbedConfidence": lambda request: {"confidence": 0.8}}) as probe:
        by_id = await evaluate(tmp_path, openai_server, "probed", confidence_probe=f"openai:probe@{probe.base_url}")
        assert probe.count("/v1/chat/completions") == 9  # A: normal, closed book, 3 removals; B: 2 + 2
    a = by_id["A"]
    assert a.confidence_source is ConfidenceSource.PROBED
    assert a.metric("confidence_error").value == pytest.approx(0.8)
    assert {(p.condition.key, round(p.confidence_error, 9), p.d_confidence_error, p.confidence_source)
            for p in a.perturbations} == {(key, 0.8, 0.0, ConfidenceSource.PROBED)
                                          for key in ("remove:a1", "remove:a2", "remove:a3")}
    assert openai_server.count("/v1/chat/completions") == 9  # the app's answers: the probe never asks the app
