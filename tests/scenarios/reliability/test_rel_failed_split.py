"""A run whose decomposer fails one sample's element split: the figures it touched are flagged in that sample's
diagnostics, the run's header counts the failed split beside the unscored verdicts, the gate leaves the flagged
figures out, and the same call again (the split given now) mends the sample to the fault-free figures.

Two precomputed samples, each with two sub-queries ("Who built tower N? When was tower N built?"), two chunks
and an answer of two sentences; the sentence rules split them, except that the first call's decomposer fails
on s1's reference. The judge is asked once per sample (batching per_sample) and, like an LLM whose answer on
one item depends on the rest of its call, says a chunk covers a sub-query only when the call lists an element
too; every other check is yes. So s2 and the mended s1: every chunk covers both sub-queries, r = (1, 1), C-Prec
1, C-nDCG 1, completeness, conciseness, verifiableness 1, both element coverages 1. The first call's s1: r =
(0, 0), C-Prec 0 (C-nDCG n/a: no relevant chunk), the others 1, its element coverages n/a.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from ragcourt.analysis.gate import gate_summary
from ragcourt.analysis.summary import summarize
from ragcourt.commands.output import question_metrics
from ragcourt.judging.decomposers import SentenceDecomposer, Split
from ragcourt.runs.models import Models, eval_context
from ragcourt.runs.runner import Runner
from ragcourt.schema import (
    Check,
    CheckKind,
    Chunk,
    DecompositionKind,
    FigureFlag,
    InputFlag,
    Label,
    Sample,
    SampleDiagnostics,
    UnscoredReason,
    Verdict,
    VerdictStatus,
)
from ragcourt.schema.config import EvalConfig, Method
from ragcourt.stores.records import RecordStore
from ragcourt.systems import Precomputed

SAMPLES = [
    Sample(id=f"s{i}", question=f"Who built tower {i}? When was tower {i} built?",
           reference_answer=f"Mason{i} built tower {i}. Tower {i} was built in {1900 + i}.",
           contexts=(Chunk(id=f"s{i}-c0", text=f"Mason{i} built tower {i} in {1900 + i}."),
                     Chunk(id=f"s{i}-c1", text=f"Tower {i} stands since {1900 + i}, built by Mason{i}.")),
           answer=f"Mason{i} built tower {i}. It was built in {1900 + i}.")
    for i in (1, 2)
]
CONFIG = EvalConfig(methods=(Method.QCARE, Method.ELEMENTS))
QCARE = ("c_prec", "c_ndcg", "completeness", "conciseness", "verifiableness")
WITHOUT_ELEMENTS = InputFlag(cause=FigureFlag.JUDGED_WITHOUT_SPLIT, splits=(DecompositionKind.ELEMENTS,))
NO_ELEMENTS = InputFlag(cause=FigureFlag.SPLIT_FAILED, splits=(DecompositionKind.ELEMENTS,))


@dataclass
class TimesOutOnS1Reference(SentenceDecomposer):
    """The sentence rules, except that splitting s1's reference answer times out (all its tries used)."""

    async def split(self, kind: DecompositionKind, text: str, question: str) -> Split:
        if kind is DecompositionKind.ELEMENTS and "Mason1" in text:
            return Split(items=(), status=VerdictStatus.UNSCORED, unscored_reason=UnscoredReason.TIMEOUT)
        return await super().split(kind, text, question)


@dataclass
class BatchMindedJudge:
    """Yes to every check, except that in a call per sample a chunk covers a sub-query only when the call lists
    an element too (a judge whose answer on one item depends on the rest of its call)."""

    judge_id: str = "llm"

    async def judge(self, kind: CheckKind, checks: Sequence[Check]) -> list[Verdict]:
        return [self._verdict(c, Label.YES) for c in checks]

    async def judge_sample(self, checks: Sequence[Check], *, follow_up: bool = False, reply_limit: int | None = None,
                           sufficiency_from_links: bool = False) -> list[Verdict]:
        with_elements = any(c.kind is CheckKind.ELEMENT_IN_CONTEXT for c in checks)
        return [self._verdict(c, Label.NO if c.kind is CheckKind.SUBQUERY_IN_CHUNK and not with_elements
                              else Label.YES) for c in checks]

    def _verdict(self, check: Check, label: Label) -> Verdict:
        return Verdict(check_id=check.id, judge_id=self.judge_id, status=VerdictStatus.OK, label=label)


async def call(store: RecordStore, tmp_path: Path, run_id: str, decomposer: SentenceDecomposer) -> None:
    context = eval_context(CONFIG, Precomputed(), store, Models(CONFIG, store), None, None)
    context.judges, context.decomposer = [BatchMindedJudge()], decomposer
    _ = [d async for d in Runner(context, run_id, tmp_path / "runs" / run_id).astream(SAMPLES)]


def figures(d: SampleDiagnostics) -> dict[str, tuple[float | None, InputFlag | None]]:
    return {m.name: (m.value, m.flag) for m in d.metrics}


WHOLE = {**dict.fromkeys(QCARE, (1.0, None)), "element_coverage": (1.0, None), "element_answer_coverage": (1.0, None)}


@pytest.fixture
def store(tmp_path: Path) -> RecordStore:
    with RecordStore(tmp_path / "store.sqlite") as opened:
        yield opened


async def test_a_failed_split_flags_its_samples_figures_and_counts_in_the_header(store: RecordStore,
                                                                                 tmp_path: Path) -> None:
    await call(store, tmp_path, "faulty", TimesOutOnS1Reference())
    s1, s2 = sorted(store.get_diagnostics("faulty"), key=lambda d: d.sample_id)
    assert s1.failed_splits == (DecompositionKind.ELEMENTS,) and s1.n_unscored == 0
    found = figures(s1)
    assert found.pop("c_ndcg")[0] is None  # no chunk covers any sub-query: no ideal ranking to compare with
    assert found == {"c_prec": (0.0, WITHOUT_ELEMENTS),
                     **dict.fromkeys(("completeness", "conciseness", "verifiableness"), (1.0, WITHOUT_ELEMENTS)),
                     "element_coverage": (None, NO_ELEMENTS), "element_answer_coverage": (None, NO_ELEMENTS)}
    assert s2.failed_splits == () and figures(s2) == WHOLE
    assert question_metrics(s1).startswith("c_prec=0.00*  completeness=1.00*")
    assert question_metrics(s1).endswith("failed splits: elements (* judged without them)")

    summary = summarize(store, "faulty")
    assert "2 samples (0 failed)" in summary.header()
    assert "0 unscored verdicts, 1 failed splits, 0 escalated" in summary.header()
    assert (summary.n_flagged_figures, summary.n_flagged_samples) == (4, 1)
    assert summary.flagged_line().startswith("flagged: 4 figures of 1 samples were judged in a call without")
    # s1's C-Prec 0.0 stands on the failed split: the gate reads s2's 1.0 alone, unless told to count it
    assert gate_summary(summary, {"c_prec": 0.9}) == []
    assert [f.line() for f in gate_summary(summary, {"c_prec": 0.9}, count_flagged=True)] == [
        "FAIL c_prec 0.500 < 0.900 (n=2, 0 unscored, 0 escalated)"]

    # The same call again, the split given now: s1 is evaluated again and ends as a run without the fault
    await call(store, tmp_path, "faulty", SentenceDecomposer())
    mended = {d.sample_id: d for d in store.get_diagnostics("faulty")}
    assert mended["s1"].failed_splits == () and figures(mended["s1"]) == WHOLE
    again = summarize(store, "faulty")
    assert "0 unscored verdicts, 0 failed splits" in again.header() and again.flagged_line() is None
