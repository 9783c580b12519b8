"""Run-level figures from the store: means per metric with their honesty counts, element gap shares."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ragcourt.metrics.elements import split_attribution, status_shares
from ragcourt.schema import SampleDiagnostics, SampleStatus, VerdictStatus
from ragcourt.stores import MetricTotals, RecordStore, VerdictTally


@dataclass(frozen=True)
class MetricRow:
    name: str
    mean: float | None
    n_samples: int  # samples with a value
    n_na: int  # samples where the metric was n/a
    n_unscored: int  # units left out over all samples because their checks were unscored
    n_escalated: int  # escalated checks behind the figure
    n_flagged: int = 0  # samples whose value was judged without a split that failed (InputFlag), in the mean
    unflagged_mean: float | None = None  # the mean of the other samples' values (when n_flagged)

    def gated_mean(self, count_flagged: bool = False) -> float | None:
        """The mean a gate compares: without the flagged values (as if they were n/a) unless `count_flagged`."""
        return self.mean if count_flagged or not self.n_flagged else self.unflagged_mean


@dataclass(frozen=True)
class RunSummary:
    run_id: str
    n_samples: int
    n_failed: int
    n_checks: int
    n_verdicts: int
    n_unscored: int
    n_escalated: int
    n_pending: int
    metrics: tuple[MetricRow, ...]
    element_shares: dict[str, float]
    failures: tuple[tuple[str, str], ...]
    # (judge id, unscored verdicts, all its verdicts) for every judge with an unscored verdict: the checks it
    # left were decided by the rest of the jury alone (if any of it scored them), which no per-check figure shows
    unscored_by_judge: tuple[tuple[str, int, int], ...] = ()
    # the judges with at least one scored verdict: only they can have decided a check another judge left
    scored_judges: tuple[str, ...] = ()
    n_failed_splits: int = 0  # splits the samples needed that the decomposer gave no scored result for
    n_flagged_samples: int = 0  # samples with a figure judged without such a split (MetricRow.n_flagged)

    @property
    def n_flagged_figures(self) -> int:
        return sum(row.n_flagged for row in self.metrics)

    def header(self) -> str:
        """The run's counts in one line (the title of its summary table); failed splits beside unscored verdicts:
        either leaves work undecided, a failed split all the checks of its units."""
        return (f"run {self.run_id}: {self.n_samples} samples ({self.n_failed} failed), {self.n_checks} checks, "
                f"{self.n_unscored} unscored verdicts, {self.n_failed_splits} failed splits, {self.n_escalated} "
                f"escalated ({self.n_pending} awaiting review)")

    def flagged_line(self) -> str | None:
        """What the flagged figures are and how a gate reads them; None when there is none."""
        if not self.n_flagged_figures:
            return None
        return (f"flagged: {self.n_flagged_figures} figures of {self.n_flagged_samples} samples were judged in a call "
                "without the units of a split that failed (their sample's failed_splits); they are in the means "
                "above, and --fail-under leaves them out as n/a unless --count-flagged")
    # samples whose system answered nothing (the empty answer, scored as stating nothing) under the normal condition
    n_empty_answers: int = 0


def metric_totals(diagnostics: Iterable[SampleDiagnostics]) -> list[MetricTotals]:
    """`RecordStore.metric_totals` over diagnostics already read."""
    values: dict[str, list[float]] = {}
    flagged: dict[str, list[bool]] = {}
    counts: dict[str, list[int]] = {}
    for d in diagnostics:
        for m in d.metrics:
            found = values.setdefault(m.name, [])
            marks = flagged.setdefault(m.name, [])
            tally = counts.setdefault(m.name, [0, 0, 0])
            if m.value is None:
                tally[0] += 1
            else:
                found.append(m.value)
                marks.append(m.flag is not None)
            tally[1] += m.n_unscored
            tally[2] += m.n_escalated
    return [MetricTotals(name=name, values=tuple(values[name]), n_na=counts[name][0], n_unscored=counts[name][1],
                         n_escalated=counts[name][2], flagged=tuple(flagged[name]) if any(flagged[name]) else ())
            for name in sorted(values)]


def _row(t: MetricTotals) -> MetricRow:
    # fsum is exactly rounded: a mean must not depend on the order the samples finished in (the store's order)
    unflagged = [v for v, flagged in zip(t.values, t.flagged, strict=True) if not flagged] if t.flagged else []
    return MetricRow(t.name, math.fsum(t.values) / len(t.values) if t.values else None, len(t.values), t.n_na,
                     t.n_unscored, t.n_escalated, n_flagged=sum(t.flagged),
                     unflagged_mean=math.fsum(unflagged) / len(unflagged) if unflagged else None)


def summarize(store: RecordStore, run_id: str, tallies: Sequence[VerdictTally] | None = None,
              diagnostics: Sequence[SampleDiagnostics] | None = None) -> RunSummary:
    """The run's figures from SQL aggregates of the store; no check, verdict or reconciled record is read
    (a 10,000-sample run has about 300,000 of each).

    A caller that has read them already passes tallies (`store.verdict_tallies(run_id)`) and diagnostics
    (all of `store.get_diagnostics(run_id)`; alignment graphs may be left out): the figures are the same.
    """
    if tallies is None:
        tallies = store.verdict_tallies(run_id)
    if diagnostics is None:
        totals = store.metric_totals(run_id)
        statuses = store.element_status_counts(run_id)
        split = store.element_split_attribution(run_id)
        failures = store.failed_samples(run_id)
        n_samples = store.count_diagnostics(run_id)
        n_failed_splits, n_flagged_samples = store.count_failed_splits(run_id), store.count_flagged_samples(run_id)
    else:
        totals = metric_totals(diagnostics)
        statuses = Counter(e.status for d in diagnostics for e in d.elements)
        split = split_attribution(e for d in diagnostics for e in d.elements)
        failures = [(d.sample_id, d.error) for d in diagnostics if d.status is SampleStatus.FAILED]
        n_samples = len(diagnostics)
        n_failed_splits = sum(len(d.failed_splits) for d in diagnostics)
        n_flagged_samples = sum(any(m.flag is not None and m.value is not None for m in d.metrics) for d in diagnostics)
    rows = tuple(_row(t) for t in totals)
    shares = status_shares(Counter(statuses).elements(), split)
    return RunSummary(
        run_id=run_id, n_samples=n_samples, n_failed=len(failures),
        n_checks=store.count_checks(run_id), n_verdicts=sum(t.n_verdicts for t in tallies),
        n_unscored=sum(t.n_verdicts for t in tallies if t.status is VerdictStatus.UNSCORED),
        n_escalated=store.count_escalated(run_id), n_pending=store.count_pending_escalations(run_id),
        metrics=rows,
        element_shares={str(status): m.value for status, m in shares.gap_shares.items() if m.value is not None},
        failures=tuple((sample_id, error or "") for sample_id, error in failures),
        unscored_by_judge=_unscored_by_judge(tallies),
        scored_judges=tuple(sorted({t.judge_id for t in tallies if t.status is VerdictStatus.OK and t.n_verdicts})),
        n_failed_splits=n_failed_splits, n_flagged_samples=n_flagged_samples,
        n_empty_answers=store.count_empty_answers(run_id),
    )


def _unscored_by_judge(tallies: Sequence[VerdictTally]) -> tuple[tuple[str, int, int], ...]:
    totals: dict[str, list[int]] = {}
    for t in tallies:
        counts = totals.setdefault(t.judge_id, [0, 0])
        counts[0] += t.n_verdicts if t.status is VerdictStatus.UNSCORED else 0
        counts[1] += t.n_verdicts
    return tuple((judge, unscored, n) for judge, (unscored, n) in sorted(totals.items()) if unscored)
