"""The validity suite's tables (`ragcourt calibrate --suite`, bench/validity_suite.py)."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from ragcourt.commands.output import console, print_table
from ragcourt.metrics.agreement import ConfidenceInterval
from ragcourt.runs.validity import REFERENCE_NOTES, KindValidity, ValidityRow
from ragcourt.runs.validity_suite import SuiteReport
from ragcourt.schema import MetricValue


def figure(metric: MetricValue, interval: ConfidenceInterval | None = None) -> str:
    if metric.value is None:
        return f"n/a ({metric.na_reason})"
    text = f"{metric.value:.3f}"
    if interval is not None and interval.low is not None and interval.high is not None:
        text += f" [{interval.low:.3f}, {interval.high:.3f}]"
    return text


def _cells(row: ValidityRow) -> list[str]:
    return [row.rater, row.reference, str(row.n), str(row.unscored), "-" if row.without_probability is None else str(row.without_probability),
            figure(row.accuracy, row.accuracy_ci), figure(row.balanced_accuracy, row.balanced_accuracy_ci),
            figure(row.kappa, row.kappa_ci), figure(row.auroc, row.auroc_ci)]


def print_kind(report: KindValidity) -> None:
    title = escape(f"{report.title}: {report.kind}, {report.n_items} checks; 95% bootstrap intervals over items")
    print_table(Table(title=title), ["rater", "reference", "n", "unscored", "no P(yes)", "accuracy",
                                     "balanced accuracy", "Cohen's kappa", "AUROC"],
                [_cells(row) for row in (*report.rows, *report.ceiling)])
    if report.ceiling:
        console.print("(the last rows are annotator against annotator: the ceiling for a judge)")
    if report.graded:
        print_table(Table(title=escape(f"{report.title}: correlation with graded labels")),
                    ["rater", "reference", "Pearson", "Spearman"],
                    [[g.rater, g.reference, figure(g.pearson, g.pearson_ci), figure(g.spearman, g.spearman_ci)]
                     for g in report.graded])


def print_suite(report: SuiteReport) -> None:
    console.print(escape(f"{report.suite} suite: {report.file} (sha256 {report.data_sha256[:12]}), "
                         f"{report.n_items} of {report.n_in_file} items; judges: {', '.join(report.judges)}"))
    notes = [f"{name}: {note}" for name, note in REFERENCE_NOTES.items()
             if any(name in (*k.references, *(g.reference for g in k.graded)) for k in report.kinds)]
    if notes:
        console.print(escape("labels: " + "; ".join(notes)))
    for kind in report.kinds:
        print_kind(kind)
    if report.meta_eval:
        print_table(Table(title="RAGChecker meta_eval: correlation with both annotators' labels pooled "
                                "(meta_eval prints them x100)"),
                    ["aspect", "source", "rater", "n", "filled with the median", "Pearson", "Spearman"],
                    [[str(r.aspect), r.source, r.rater, str(r.n), str(r.n_filled), figure(r.pearson),
                      figure(r.spearman)] for r in report.meta_eval])
    if report.thresholds:
        print_table(Table(title=escape(f"learned thresholds (against {report.fit_reference}; yes when P(yes) >= "
                                       "threshold)")),
                    ["judge", "kind", "threshold", "objective", "in-sample", "cross-validated", "n", "positive",
                     "no P(yes)"],
                    [[t.judge_id, str(t.kind), f"{t.threshold:.3f}", str(t.objective),
                      "n/a" if t.in_sample is None else f"{t.in_sample:.3f}",
                      f"{t.cross_validated:.3f} ({t.folds}-fold)" if t.cross_validated is not None
                      else f"n/a ({t.cross_validated_na})", str(t.n), str(t.n_positive), str(t.n_without_probability)]
                     for t in report.thresholds])
