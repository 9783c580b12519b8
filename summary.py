"""Run-level figures from the store: means per metric with their honesty counts, element gap shares."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from ragcourt.metrics.elements import status_shares
from ragcourt.schema import SampleStatus, VerdictStatus
from ragcourt.stores.records import RecordStore


@dataclass(frozen=True)
class MetricRow:
    name: str
    mean: float | None
    n_samples: int  # samples with a value
    n_na: int  # samples where the metric was n/a
    n_unscored: int  # units left out over all samples because their checks were unscored
    n_escalated: int  # escalated checks behind the figure


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


def summarize(store: RecordStore, run_id: str) -> RunSummary:
    diagnostics = store.get_diagnostics(run_id)
    values: dict[str, list[float]] = defaultdict(list)
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for d in diagnostics:
        for m in d.metrics:
            if m.value is not None:
                values[m.name].append(m.value)
            else:
                counts[m.name][0] += 1
            counts[m.name][1] += m.n_unscored
            counts[m.name][2] += m.n_escalated
    rows = tuple(
        MetricRow(name, sum(values[name]) / len(values[name]) if values[name] else None, len(values[name]),
                  counts[name][0], counts[name][1], counts[name][2])
        for name in sorted(set(values) | set(counts))
    )
    checks = store.checks_for(run_id)
    verdicts = store.get_verdicts([c.id for c in checks]) if checks else []
    reconciled = store.get_reconciled(run_id)
    shares = status_shares(e.status for d in diagnostics for e in d.elements)
    return RunSummary(
        run_id=run_id, n_samples=len(diagnostics),
        n_failed=sum(d.status is SampleStatus.FAILED for d in diagnostics),
        n_checks=len(checks), n_verdicts=len(verdicts),
        n_unscored=sum(v.status is VerdictStatus.UNSCORED for v in verdicts),
        n_escalated=sum(r.escalated for r in reconciled), n_pending=len(store.pending_escalations(run_id)),
        metrics=rows,
        element_shares={str(status): m.value for status, m in shares.gap_shares.items() if m.value is not None},
        failures=tuple((d.sample_id, d.error or "") for d in diagnostics if d.status is SampleStatus.FAILED),
    )
