"""Quality gates: thresholds parsed and checked, run means against them, and drops of a comparison against
the noise band, with hand-made summaries and frames."""

from __future__ import annotations

import pandas as pd
import pytest

from ragcourt.analysis.gate import (
    GateError,
    check_thresholds,
    gate_summary,
    is_drop,
    na_reasons,
    parse_threshold_items,
    regressions,
)
from ragcourt.analysis.noise import PAIRED_BAND
from ragcourt.analysis.summary import MetricRow, RunSummary
from ragcourt.schema import MetricValue, SampleDiagnostics


def summary(*rows: MetricRow) -> RunSummary:
    return RunSummary(run_id="r", n_samples=30, n_failed=0, n_checks=90, n_verdicts=90, n_unscored=2,
                      n_escalated=1, n_pending=1, metrics=rows, element_shares={}, failures=())


def test_items_parse_and_bad_ones_name_themselves() -> None:
    assert parse_threshold_items(["completeness=0.5", "c_prec@5=.25"]) == {"completeness": 0.5, "c_prec@5": 0.25}
    for bad in ("completeness", "=0.5", "completeness=high"):
        with pytest.raises(GateError, match=f"--fail-under '{bad}': expected METRIC=VALUE"):
            parse_threshold_items([bad])
    with pytest.raises(GateError, match="the threshold is not a number"):
        check_thresholds({"completeness": float("nan")})
    with pytest.raises(GateError, match="unknown metric.s. c_prec@0"):
        check_thresholds({"c_prec@0": 0.5})


def test_a_mean_below_its_minimum_or_na_fails_with_its_counts() -> None:
    run = summary(MetricRow("completeness", 0.412, 30, 0, 2, 1), MetricRow("element_coverage", None, 0, 30, 0, 0),
                  MetricRow("verifiableness", 0.5, 30, 0, 0, 0))
    failures = gate_summary(run, {"completeness": 0.5, "verifiableness": 0.5, "element_coverage": 0.1,
                                  "c_prec@5": 0.2}, reasons={"element_coverage": "30 sample(s): no reference"})
    assert [f.line() for f in failures] == [
        "FAIL completeness 0.412 < 0.500 (n=30, 2 unscored, 1 escalated)",
        "FAIL element_coverage n/a (minimum 0.100): 30 sample(s): no reference (n=0, 0 unscored, 0 escalated)",
        "FAIL c_prec@5 n/a (minimum 0.200): this run reports no c_prec@5 (its metrics: completeness, "
        "element_coverage, verifiableness; a method or condition that computes it is not configured) "
        "(n=0, 0 unscored, 0 escalated)",
    ]  # verifiableness 0.5 is not below 0.5
    assert [f.metric for f in gate_summary(run, {"element_coverage": 0.1, "c_prec@5": 0.2}, allow_na=True)] == []


def compared(metric: str, a: float, b: float, band: float | None, band_from: str) -> pd.DataFrame:
    return pd.DataFrame([{"metric": metric, "n_questions": 25, "mean_a": a, "mean_b": b, "difference": b - a,
                          "band": band, "band_from": band_from, "verdict": None, "na_reason": None}], dtype=object)


def test_a_drop_is_judged_against_a_measured_noise_band_only() -> None:
    # seed 003: sd 0.14 over 25 questions gives the band 1.96 x 0.14 / 5 = 0.0549
    (inside,) = regressions(compared("element_coverage", 0.70, 0.66, 0.0549, "repeat runs x / y"))
    assert not inside.failed and "inside the noise band ±0.055" in inside.line
    (beyond,) = regressions(compared("element_coverage", 0.70, 0.60, 0.0549, "repeat runs x / y"))
    assert beyond.failed and beyond.line.startswith("FAIL element_coverage 0.700 -> 0.600 (-0.100; n=25)")
    (paired,) = regressions(compared("element_coverage", 0.70, 0.60, 0.0549, PAIRED_BAND))
    assert not paired.failed and "no noise band is known" in paired.line
    (strict,) = regressions(compared("element_coverage", 0.70, 0.69, None, PAIRED_BAND), fail_on_any_drop=True)
    assert strict.failed
    assert regressions(compared("element_coverage", 0.60, 0.70, 0.0549, "repeat runs x / y")) == []  # a rise


def test_where_lower_is_better_a_rise_is_the_drop() -> None:
    assert is_drop("confidence_error", 0.1) and not is_drop("confidence_error", -0.1)
    assert is_drop("c_prec@5", -0.1) and not is_drop("pointer_elements_dropped", 3.0)
    (worse,) = regressions(compared("confidence_error", 0.10, 0.30, 0.05, "repeat runs x / y"))
    assert worse.failed
    with pytest.raises(GateError, match="confidence_error has no minimum to fail under .lower is better."):
        check_thresholds({"confidence_error": 0.2})


def flagged_run(tmp_path) -> RunSummary:  # noqa: ANN001 - pytest's tmp_path
    """Three samples: s1's element split failed, so its element coverage is n/a and its completeness and
    verifiableness were judged in a call without its elements (flagged); s2 and s3 are whole."""
    from ragcourt.analysis.summary import summarize
    from ragcourt.schema import DecompositionKind, FigureFlag, InputFlag, MetricValue, SampleDiagnostics
    from ragcourt.stores.records import RecordStore

    without = InputFlag(cause=FigureFlag.JUDGED_WITHOUT_SPLIT, splits=(DecompositionKind.ELEMENTS,))
    failed = InputFlag(cause=FigureFlag.SPLIT_FAILED, splits=(DecompositionKind.ELEMENTS,))
    diagnostics = [
        SampleDiagnostics(run_id="r", sample_id="s1", question="q1", failed_splits=(DecompositionKind.ELEMENTS,),
                          metrics=(MetricValue(name="completeness", value=1.0, n=2, flag=without),
                                   MetricValue(name="verifiableness", value=1.0, n=2, flag=without),
                                   MetricValue(name="element_coverage", value=None, na_reason="no split", flag=failed))),
        SampleDiagnostics(run_id="r", sample_id="s2", question="q2",
                          metrics=(MetricValue(name="completeness", value=0.5, n=2),
                                   MetricValue(name="element_coverage", value=0.5, n=2))),
        SampleDiagnostics(run_id="r", sample_id="s3", question="q3",
                          metrics=(MetricValue(name="completeness", value=0.4, n=5),
                                   MetricValue(name="element_coverage", value=0.7, n=3))),
    ]
    with RecordStore(tmp_path / "store.sqlite") as store:
        store.put(*diagnostics)
        return summarize(store, "r")


def test_a_flagged_figure_is_its_samples_n_a_unless_flagged_figures_are_counted(tmp_path) -> None:  # noqa: ANN001
    run = flagged_run(tmp_path)
    rows = {row.name: row for row in run.metrics}
    assert rows["completeness"].mean == pytest.approx(1.9 / 3) and rows["completeness"].n_flagged == 1
    assert (run.n_failed_splits, run.n_flagged_samples, run.n_flagged_figures) == (1, 1, 2)
    # s1's completeness 1.0 would lift the mean over the minimum; left out, s2 and s3 give 0.45
    gate = {"completeness": 0.6, "verifiableness": 0.5, "element_coverage": 0.5}
    assert [f.line() for f in gate_summary(run, gate)] == [
        "FAIL completeness 0.450 < 0.600 (n=2, 0 unscored, 0 escalated, 1 flagged left out)",
        "FAIL verifiableness n/a (minimum 0.500): all 1 sample value(s) are flagged: judged without a split that "
        "failed (ragcourt run --count-flagged counts them) (n=0, 0 unscored, 0 escalated, 1 flagged left out)",
    ]  # element_coverage: s1 n/a, s2 and s3 give 0.6
    assert gate_summary(run, gate, count_flagged=True) == []
    assert [f.metric for f in gate_summary(run, gate, allow_na=True)] == ["completeness"]


def test_na_reasons_list_the_most_frequent_first_and_ties_by_reason_whatever_the_question_order() -> None:
    def na(sample_id: str, reason: str) -> SampleDiagnostics:
        return SampleDiagnostics(run_id="r", sample_id=sample_id, question="q?",
                                 metrics=(MetricValue(name="completeness", value=None, na_reason=reason),))

    questions = [na("a", "the answer has no claims"), na("b", "no sub-query"), na("c", "no sub-query"),
                 na("d", "judges split")]
    expected = {"completeness": "2 sample(s): no sub-query; 1 sample(s): judges split; 1 sample(s): the answer has "
                                "no claims"}
    assert na_reasons(questions, ["completeness"]) == na_reasons(questions[::-1], ["completeness"]) == expected
