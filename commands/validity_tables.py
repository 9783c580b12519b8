"""The validity suite's tables (`ragcourt calibrate --suite`, bench/validity_suite.py)."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from ragcourt.commands.output import console, print_table
from ragcourt.metrics.agreement import ConfidenceInterval
from ragcourt.schema import CheckKind, MetricValue
from ragcourt.validity.measure import REFERENCE_NOTES, KindValidity, PairwiseJuryFit, ValidityRow
from ragcourt.validity.suite import SuiteReport


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
    if report.top1:
        print_table(Table(title="top-1 accuracy: the answer's paragraph has the highest P(yes) of its article's "
                                "(ties share the credit)"),
                    ["set", "rater", "questions", "top-1"],
                    [[r.title, r.rater, str(r.n), "n/a" if r.accuracy is None else f"{r.accuracy:.3f}"]
                     for r in report.top1])
    if report.meta_eval:
        print_table(Table(title="RAGChecker meta_eval: correlation with both annotators' labels pooled "
                                "(meta_eval prints them x100)"),
                    ["aspect", "source", "rater", "n", "filled with the median", "Pearson", "Spearman"],
                    [[str(r.aspect), r.source, r.rater, str(r.n), str(r.n_filled), figure(r.pearson),
                      figure(r.spearman)] for r in report.meta_eval])
    thresholds = [t for t in report.thresholds if t.kind is not CheckKind.PAIRWISE]  # the jury's: print_jury_fit
    if thresholds:
        print_table(Table(title=escape(f"learned thresholds (against {report.fit_reference}; yes when P(yes) >= "
                                       "threshold)")),
                    ["judge", "kind", "threshold", "objective", "in-sample", "cross-validated", "n", "positive",
                     "no P(yes)"],
                    [[t.judge_id, str(t.kind), f"{t.threshold:.3f}", str(t.objective),
                      "n/a" if t.in_sample is None else f"{t.in_sample:.3f}",
                      f"{t.cross_validated:.3f} ({t.folds}-fold)" if t.cross_validated is not None
                      else f"n/a ({t.cross_validated_na})", str(t.n), str(t.n_positive), str(t.n_without_probability)]
                     for t in thresholds])
    if report.jury_fit is not None:
        print_jury_fit(report.jury_fit)
    if report.profile_file is not None:
        print_transfer(report)


def print_transfer(report: SuiteReport) -> None:
    """The applied profile on this set: its held-out figure where it was fit beside the figure here, and a
    warning where the threshold does worse here than the judge's own labels."""
    if not report.transfer:
        console.print(escape(f"calibration profile (fit on {report.profile_file}): none of its thresholds' judges "
                             "and kinds decided a labelled check of this set: transfer not measured"))
        return
    print_table(Table(title=escape(f"calibration profile fit on {report.profile_file}, measured on {report.file}")),
                ["judge", "kind", "objective", "against", "cv where fit", "here, calibrated",
                 "here, uncalibrated (or the judge or jury rule named)"],
                [[r.judge_id, str(r.kind), str(r.objective), r.reference,
                  "n/a" if r.profile_cv is None else f"{r.profile_cv:.3f}", figure(r.calibrated),
                  figure(r.uncalibrated) + ("" if r.baseline is None else f" ({r.baseline})")]
                 for r in report.transfer])
    for row in report.transfer:
        if row.worse:
            if row.kind is CheckKind.PAIRWISE:
                what, against = "the profile's tie margin (mean_probability)", f"the {row.baseline} jury's"
            elif row.baseline is None:
                what, against = "the profile's threshold", "the uncalibrated judge's"
            else:
                what, against = "the profile's stacked model", f"the {row.baseline} judge's"
            console.print(escape(f"WARNING: {row.judge_id} {row.kind}: {what} gives {row.objective} "
                                 f"{figure(row.calibrated)} on this set, below {against} "
                                 f"{figure(row.uncalibrated)}: the profile does not transfer here"), style="yellow")

def print_jury_fit(fit: PairwiseJuryFit) -> None:
    """The pairwise jury before (majority_tie) and after (mean_probability, its margin fit k-fold)."""
    margin = fit.margin
    print_table(Table(title=escape(f"pairwise jury: majority_tie vs mean_probability (tie margin "
                                   f"{margin.threshold:.3f} on P_B - P_A, fit on {margin.labels} by "
                                   f"{margin.objective}; after = {margin.folds}-fold held-out labels)")),
                ["reference", "human Tie", "kappa before", "kappa after (cv)", "jury Tie before", "after"],
                [[reference, str(fit.n_human_tie[reference]), figure(before.kappa), figure(after.kappa),
                  str(before.n_tie), str(after.n_tie)]
                 for reference in fit.n_human_tie
                 for before, after in [[r for r in fit.rows if r.reference == reference]]])
    console.print(escape(f"Pearson of the jury's label (A -1, Tie 0, B +1) with the annotators' mean score: before "
                         f"{figure(fit.pearson_before)}, after (cv) {figure(fit.pearson_after)}"))
