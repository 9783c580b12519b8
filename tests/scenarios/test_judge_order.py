"""The order the judges are listed in changes no figure (seed 003 averages the two judges; issue 19, item 2).

A run with the real no-LLM `lexical` and `semantic` judges on precomputed HotpotQA samples built from the
bundled dev sample (contexts: each question's ten paragraphs; answer: the extractive baseline's one sentence;
reference: the answer span), once per order: every per-sample figure, element outcome, escalation, loose
trigger and the run's gap shares and summary are identical. bench/judge_order.py prints the same figures.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from ragcourt.analysis.qcare_tables import gap_share_frame
from ragcourt.analysis.summary import summarize
from ragcourt.data.loaders import BundledDataset, bundled, load_hotpotqa, paragraph_id
from ragcourt.metrics.elements import needs_loose
from ragcourt.runs.api import aevaluate
from ragcourt.runs.workspace import Workspace
from ragcourt.schema import Chunk, ElementStatus, Sample
from ragcourt.schema.config import EvalConfig, JudgeSpec
from ragcourt.systems import ExtractiveGenerator, Precomputed

N_QUESTIONS = 10  # bench/judge_order.py runs 20


def precomputed_hotpot(n: int) -> list[Sample]:
    path = bundled(BundledDataset.HOTPOTQA_DEV_100)
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[:n]]
    out = []
    for sample, row in zip(load_hotpotqa(path).samples[:n], rows, strict=True):
        contexts = tuple(
            Chunk(id=paragraph_id(p["title"], p["paragraph_text"]), text=p["paragraph_text"], title=p["title"], rank=rank)
            for rank, p in enumerate(row["contexts"], start=1)
        )
        answer = asyncio.run(ExtractiveGenerator().generate(sample.question, contexts)).text
        out.append(sample.model_copy(update={"contexts": contexts, "answer": answer}))
    return out


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
    assert all(d.metric("element_coverage").n_escalated for d in listed.diagnostics
               if any(e.split for e in d.elements))
