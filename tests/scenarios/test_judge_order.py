"""The order the judges are listed in changes no figure (seed 003 averages the two judges; issue 19, item 2).

A run with the real no-LLM `lexical` and `semantic` judges on precomputed HotpotQA samples built from the
bundled dev sample (contexts: each question's ten paragraphs; answer: the extractive baseline's one sentence;
reference: the answer span), once per order: every per-sample figure, element outcome, escalation, loose
trigger and the run's gap shares and summary are identical. bench/judge_order.py prints the same figures.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from fixtures import REPO

from ragcourt.analysis.qcare_tables import gap_share_frame
from ragcourt.analysis.summary import summarize
from ragcourt.metrics.elements import needs_loose
from ragcourt.runs.api import aevaluate
from ragcourt.runs.workspace import Workspace
from ragcourt.schema import ElementStatus, ElementVerdict
from ragcourt.schema.config import EvalConfig, JudgeSpec
from ragcourt.systems import Precomputed

sys.path.insert(0, str(REPO / "bench"))
from judge_order import precomputed_hotpot  # the bench builds the same samples

N_QUESTIONS = 10  # bench/judge_order.py runs 20


@pytest.mark.slow
async def test_lexical_and_semantic_judges_give_the_same_figures_in_either_order(tmp_path: Path) -> None:
    samples = await asyncio.to_thread(precomputed_hotpot, N_QUESTIONS)
    runs = {}
    for order in (("lexical", "semantic"), ("semantic", "lexical")):
        config = EvalConfig(judges=tuple(JudgeSpec(model=m) for m in order))
        runs[order] = await aevaluate(samples, Precomputed(), config=config, home=tmp_path, run_id="-".join(order))
    listed, swapped = runs.values()
    assert [d.sample_id for d in listed.diagnostics] == [d.sample_id for d in swapped.diagnostics]
    for a, b in zip(listed.diagnostics, swapped.diagnostics, strict=True):
        assert (a.metrics, a.elements, a.escalations) == (b.metrics, b.elements, b.escalations)
        coverage = a.metric("element_coverage")
        assert needs_loose(coverage.value if coverage else None) == needs_loose(
            b.metric("element_coverage").value if b.metric("element_coverage") else None)
    frames = [gap_share_frame(r.diagnostics).to_dict("records") for r in (listed, swapped)]
    assert frames[0] == frames[1]
    store = Workspace(tmp_path).open_store()
    try:
        summaries = [summarize(store, r.run_id) for r in (listed, swapped)]
    finally:
        store.close()
    assert summaries[0].metrics == summaries[1].metrics
    assert summaries[0].element_shares == summaries[1].element_shares
    # the judges do split on this data (what made the figures depend on the order): averaged, not dropped
    split = [e for d in listed.diagnostics for e in d.elements if e.split]
    assert split and any(e.status is ElementStatus.JUDGES_SPLIT for e in split)
    # each split is escalated, and counted by the coverage of its side: the answer, or the (loose) context
    for d in listed.diagnostics:
        splits = {verdict for e in d.elements for verdict in e.split}
        if ElementVerdict.IN_ANSWER in splits:
            assert d.metric("element_answer_coverage").n_escalated
        if splits & {ElementVerdict.IN_CONTEXT, ElementVerdict.IN_LOOSE_CONTEXT}:
            assert d.metric("element_coverage").n_escalated
