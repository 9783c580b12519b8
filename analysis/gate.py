"""Quality gates over run figures: a run's means against minimum values (`ragcourt run --fail-under`, the
config's `fail_under`, the pytest plugin's thresholds), and a comparison's drops against the noise band
(`ragcourt compare --fail-on-regression`).

A gate never passes a figure it cannot see: a mean that is n/a fails with the reason it is n/a (unless n/a
is allowed), and every failure line carries the counts behind the figure (samples, unscored checks,
escalated checks), so a CI log says how much to trust the number that stopped the build. A sample's figure
judged without a split that failed (flagged, `InputFlag`) counts as that sample's n/a: the gated mean is the
other samples' (unless flagged figures are counted), so no figure a fault of the decomposer made decides it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from ragcourt.analysis.noise import PAIRED_BAND, is_known_metric, known_metric_names
from ragcourt.analysis.summary import MetricRow, RunSummary
from ragcourt.metrics.values import MetricName
from ragcourt.schema import SampleDiagnostics, SampleStatus

# Lower is better for these: a drop of quality is a rise of the figure, and a minimum makes no sense.
LOWER_IS_BETTER = frozenset({MetricName.CONFIDENCE_ERROR.value})
# Counts of what a rule left out, not quality: no direction, so no gate.
NO_DIRECTION = frozenset({MetricName.POINTER_ELEMENTS_DROPPED.value})


class GateError(ValueError):
    """A threshold that cannot be checked: an unknown metric, a metric without a minimum, a malformed item."""


def parse_threshold_items(items: Iterable[str], source: str = "--fail-under") -> dict[str, float]:
    """`METRIC=VALUE` items (as the CLI takes them, repeatable) -> {metric: minimum}, validated."""
    out: dict[str, float] = {}
    for item in items:
        name, sign, value = item.partition("=")
        try:
            if not sign or not name.strip():
                raise ValueError
            out[name.strip()] = float(value)
        except ValueError:
            raise GateError(f"{source} {item!r}: expected METRIC=VALUE, e.g. element_coverage=0.6") from None
    check_thresholds(out, source)
    return out


def check_thresholds(thresholds: Mapping[str, float], source: str = "fail_under") -> None:
    """Raise GateError naming every threshold no run can check, with the valid metric names."""
    unknown = [name for name in thresholds if not is_known_metric(name)]
    if unknown:
        raise GateError(f"{source}: unknown metric(s) {', '.join(unknown)}; valid names: "
                        f"{', '.join(gateable_metric_names())} (K a positive integer, the retrieval's top_k)")
    for name, value in thresholds.items():
        base = name.partition("@")[0]
        if base in LOWER_IS_BETTER or base in NO_DIRECTION:
            why = "lower is better" if base in LOWER_IS_BETTER else "it counts what a rule left out, not quality"
            raise GateError(f"{source}: {name} has no minimum to fail under ({why})")
        if value != value:  # NaN: every comparison with it is false, so the gate would never fail
            raise GateError(f"{source}: {name}: the threshold is not a number")


def gateable_metric_names() -> list[str]:
    """The metric names a minimum can be set on, for messages."""
    return [name for name in known_metric_names() if name.partition("@")[0] not in LOWER_IS_BETTER | NO_DIRECTION]


@dataclass(frozen=True)
class GateFailure:
    """One figure that did not pass, with the counts behind it."""

    metric: str
    value: float | None
    threshold: float
    n_samples: int = 0
    n_unscored: int = 0
    n_escalated: int = 0
    n_na: int = 0
    na_reason: str | None = None
    n_flagged: int = 0  # flagged figures left out of `value` (as n/a)

    def line(self) -> str:
        counts = f"n={self.n_samples}, {self.n_unscored} unscored, {self.n_escalated} escalated"
        if self.n_flagged:
            counts += f", {self.n_flagged} flagged left out"
        if self.value is None:
            return f"FAIL {self.metric} n/a (minimum {self.threshold:.3f}): {self.na_reason} ({counts})"
        return f"FAIL {self.metric} {self.value:.3f} < {self.threshold:.3f} ({counts})"


def na_reasons(diagnostics: Iterable[SampleDiagnostics], metrics: Iterable[str]) -> dict[str, str]:
    """Per metric, why it is n/a over the run: its samples' reasons, most frequent first, with counts."""
    wanted = set(metrics)
    found: dict[str, Counter[str]] = {name: Counter() for name in wanted}
    for d in diagnostics:
        for m in d.metrics:
            if m.name in wanted and m.value is None:
                found[m.name][m.na_reason or "no reason given"] += 1
    return {name: "; ".join(f"{n} sample(s): {reason}"  # ties by reason, not by which sample came first
                            for reason, n in sorted(counts.items(), key=lambda item: (-item[1], item[0])))
            for name, counts in sorted(found.items()) if counts}


def gate_summary(summary: RunSummary, thresholds: Mapping[str, float], *, allow_na: bool = False,
                 reasons: Mapping[str, str] | None = None, diagnostics: Sequence[SampleDiagnostics] = (),
                 count_flagged: bool = False) -> list[GateFailure]:
    """The figures of `summary` below their minimum, in the order of `thresholds`. A metric that is n/a
    (no sample has a value, or the run does not report it) fails with its reason unless `allow_na`;
    `reasons` (from `na_reasons`) say why per metric, `diagnostics` name the failed samples. A flagged figure
    is its sample's n/a (`MetricRow.gated_mean`) unless `count_flagged`."""
    rows: dict[str, MetricRow] = {row.name: row for row in summary.metrics}
    failed = [d.sample_id for d in diagnostics if d.status is SampleStatus.FAILED]
    failures = []
    for name, minimum in thresholds.items():
        row = rows.get(name)
        mean = row.gated_mean(count_flagged) if row is not None else None
        left_out = 0 if row is None or count_flagged else row.n_flagged
        if row is None or mean is None:
            if allow_na:
                continue
            if row is None:
                why = (f"this run reports no {name} (its metrics: {', '.join(sorted(rows)) or 'none'}; "
                       "a method or condition that computes it is not configured)")
            elif row.mean is not None:  # every value is flagged
                why = (f"all {row.n_flagged} sample value(s) are flagged: judged without a split that failed "
                       "(ragcourt run --count-flagged counts them)")
            else:
                why = (reasons or {}).get(name) or f"{row.n_na} sample(s) n/a"
            if failed:
                why += f"; {len(failed)} sample(s) failed: {', '.join(failed[:5])}{', ...' if len(failed) > 5 else ''}"
            failures.append(GateFailure(name, None, minimum, 0, row.n_unscored if row else 0,
                                        row.n_escalated if row else 0, row.n_na if row else 0, why, left_out))
        elif mean < minimum:
            failures.append(GateFailure(name, mean, minimum, row.n_samples - left_out, row.n_unscored,
                                        row.n_escalated, row.n_na, n_flagged=left_out))
    return failures


@dataclass(frozen=True)
class Regression:
    """A metric of a comparison that dropped: `failed` when the drop fails the gate, `line` says why."""

    metric: str
    failed: bool
    line: str


def is_drop(metric: str, difference: float) -> bool:
    """Whether B - A = `difference` is a loss of quality for `metric` (a rise where lower is better)."""
    base = metric.partition("@")[0]
    if base in NO_DIRECTION:
        return False
    return difference > 0 if base in LOWER_IS_BETTER else difference < 0


def regressions(frame: pd.DataFrame, *, fail_on_any_drop: bool = False) -> list[Regression]:
    """The drops of a `compare_frame`: beyond a noise band measured on repeat runs, a drop fails; where
    the band is only the paired band of the compared runs (or none), no run-to-run noise is known, so the
    drop is noted and fails only with `fail_on_any_drop`. A metric both runs cannot compare is noted."""
    out = []
    for row in frame.to_dict("records"):
        metric, difference = str(row["metric"]), row["difference"]
        if difference is None:
            out.append(Regression(metric, False, f"note {metric}: not compared ({row['na_reason']})"))
            continue
        if not is_drop(metric, difference):
            continue
        moved = f"{row['mean_a']:.3f} -> {row['mean_b']:.3f} ({difference:+.3f}; n={row['n_questions']})"
        band = row["band"]
        if band is not None and row["band_from"] != PAIRED_BAND:
            beyond = abs(difference) > band
            out.append(Regression(metric, beyond, f"{'FAIL' if beyond else 'ok  '} {metric} {moved}: "
                                  f"{'beyond' if beyond else 'inside'} the noise band ±{band:.3f} "
                                  f"({row['band_from']})"))
        elif fail_on_any_drop:
            out.append(Regression(metric, True, f"FAIL {metric} {moved}: a drop, and no noise band is known "
                                  "(--fail-on-any-drop)"))
        else:
            out.append(Regression(metric, False, f"note {metric} {moved}: a drop, but no noise band is known for "
                                  "it (measure one with `ragcourt noise`, or give --noise RUN_X --noise RUN_Y); "
                                  "not failed (--fail-on-any-drop fails on it)"))
    return out
