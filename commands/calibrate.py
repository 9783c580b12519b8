"""`ragcourt calibrate`: agreement between the judges (and the jury) and human labels."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from ragcourt.commands.elements import fail_all
from ragcourt.commands.output import console, print_table
from ragcourt.commands.output import fail as _fail
from ragcourt.data.loaders import (
    BundledDataset,
    DatasetError,
    DatasetErrors,
    HumanAspect,
    bundled,
    load_ragchecker_pairs,
)
from ragcourt.metrics.agreement import ConfidenceInterval
from ragcourt.runs.calibration import (
    CHECK_IDS_HINT,
    JURY,
    CalibrationItem,
    HumanLabel,
    KindCalibration,
    calibrate,
    items_from_store,
    judge_ragchecker,
    load_labels,
    review_labels,
)
from ragcourt.runs.models import Models
from ragcourt.runs.workspace import DEFAULT_HOME, Workspace
from ragcourt.schema import MetricValue, content_id
from ragcourt.schema.config import ConfigError, EvalConfig, JudgeSpec
from ragcourt.stores.records import RecordStore


def _value(metric: MetricValue, interval: ConfidenceInterval | None = None) -> str:
    if metric.value is None:
        return f"n/a ({metric.na_reason})"
    text = f"{metric.value:.3f}"
    if interval is not None and interval.low is not None and interval.high is not None:
        text += f" [{interval.low:.3f}, {interval.high:.3f}]"
    return text


def print_calibration(report: KindCalibration) -> None:
    title = escape(f"{report.kind}: {report.n_items} items; annotators: {', '.join(report.annotators) or 'none'}; "
                   "95% bootstrap intervals over items")
    if report.agreements or report.ceiling:
        print_table(Table(title=title), ["rater", "reference", "n", "rater undecided", "no reference label",
                                         "accuracy", "Cohen's kappa"],
                    [[row.rater, row.reference, str(row.accuracy.n), str(row.n_rater_undecided),
                      str(row.n_without_reference), _value(row.accuracy, row.accuracy_ci), _value(row.kappa, row.kappa_ci)]
                     for row in (*report.agreements, *report.ceiling)])
        if report.ceiling:
            console.print("(annotator rows at the bottom: human against human, the ceiling for a judge; for "
                          "'agreeing annotators' an item has no reference label when the annotators disagree)")
        console.print(f"Fleiss' kappa among the judges: {_value(report.fleiss_judges)} "
                      f"(items every judge decided: {report.fleiss_judges.n})")
        shown = [a for a in report.agreements if a.rater == report.raters[-1]]
        for row in shown:
            labels = [str(label) for label in row.labels]
            matrix = Table(title=f"confusion: {escape(row.rater)} (columns) vs {escape(row.reference)} (rows)")
            matrix.add_column("")
            for label in labels:
                matrix.add_column(label)
            for label, counts in zip(labels, row.confusion, strict=True):
                matrix.add_row(label, *(str(c) for c in counts))
            console.print(matrix)
    if report.correlations:
        title = (f"{report.kind}: correlation with human scores"
                 + (" (pairwise: preference for B)" if str(report.kind) == "pairwise" else ""))
        print_table(Table(title=title), ["rater", "reference", "n", "Pearson", "Spearman"],
                    [[row.rater, row.reference, str(row.pearson.n), _value(row.pearson),
                      _value(row.spearman, row.spearman_ci)] for row in report.correlations])


def _short(metric: MetricValue) -> str:
    return "n/a" if metric.value is None else f"{metric.value:.3f}"


def _figures(report: KindCalibration) -> str:
    """One line of a kind's headline figures: each rater's accuracy (or Pearson) and the judges' Fleiss' kappa."""
    several = len(report.annotators) > 1

    def rater(name: str, reference: str) -> str:
        return f"{name} vs {reference}" if several else name

    rows = [a for a in report.agreements if a.reference in report.annotators]
    if rows:
        parts = ["accuracy " + ", ".join(f"{rater(a.rater, a.reference)} {_short(a.accuracy)}" for a in rows),
                 f"Fleiss' kappa among the judges {_short(report.fleiss_judges)}"]
    else:  # dimension scores: correlations only
        parts = ["Pearson " + ", ".join(f"{rater(c.rater, c.reference)} {_short(c.pearson)}"
                                        for c in report.correlations if c.reference in report.annotators)]
    return f"{report.kind} ({report.n_items} check{'s' * (report.n_items != 1)}): " + "; ".join(parts)


def print_review_caveat(store: RecordStore, run_id: str, human: list[HumanLabel],
                        reports: list[KindCalibration]) -> None:
    """Review labels are a biased sample: only escalated checks are reviewed, the ones the judges disagreed on."""
    labelled = len({h.check_id for h in human})
    console.print(
        "[yellow]caveat:[/yellow] review labels cover only escalated checks (where the judges disagreed or no "
        f"judge scored): these are {labelled} of the run's {store.count_escalated(run_id)} escalated checks (of "
        f"its {store.count_checks(run_id)} checks), so agreement on them is not the judges' agreement on all "
        "checks. On these checks:"
    )
    for report in reports:
        console.print(f"  - {escape(_figures(report))}")
    jury_na = any(a.rater == JURY and a.accuracy.value is None for r in reports for a in r.agreements)
    console.print(
        ("(the jury is n/a where the judges split: a split jury has no label of its own.) " if jury_na else "")
        + "For an unbiased estimate, label a random sample of the run's checks and give them with --labels FILE "
        f"(check ids: {escape(CHECK_IDS_HINT)})."
    )


def calibrate_command(
    ragchecker: Annotated[bool, typer.Option(help="the worked example: RAGChecker human-labelled pairs")] = False,
    pairs: Annotated[Path | None, typer.Option(help="a RAGChecker pairs file (default: the bundled one)")] = None,
    labels: Annotated[Path | None, typer.Option(help="JSONL of {check_id, label | score, annotator?} for "
                                                        "checks in the store: label yes/no (binary checks) or "
                                                        "A/B/Tie (pairwise), score 0-10 (dimension_score); one "
                                                        "line per check and annotator. Check ids (and kinds): "
                                                        f"{CHECK_IDS_HINT}")] = None,
    run_id: Annotated[str | None, typer.Option("--run", help="use the review decisions of this run (ignored "
                                                             "with --labels); these cover only escalated checks, "
                                                             "the ones the judges disagreed on, so they understate "
                                                             "agreement: label a random sample with --labels for "
                                                             "an unbiased estimate")] = None,
    judge: Annotated[list[str] | None, typer.Option(help="repeatable: lexical, semantic, openai:MODEL\\[@URL]; "
                                                            "with --labels/--run: judge ids in the store")] = None,
    logprobs: Annotated[bool, typer.Option(help="ask LLM judges for logprobs")] = False,
    label: Annotated[list[HumanAspect] | None, typer.Option(help="repeatable, with --ragchecker/--pairs: which "
                                                                "human label the judges are compared with "
                                                                "(default: overall); each is reported")] = None,
    seed: Annotated[int, typer.Option(help="bootstrap seed")] = 0,
    bootstrap: Annotated[int, typer.Option(help="bootstrap resamples")] = 1000,
    home: Annotated[Path, typer.Option(help="workspace folder: record store, chroma, runs")] = DEFAULT_HOME,
) -> None:
    """Agreement of judges with human labels: accuracy, Cohen's / Fleiss' kappa, correlations, confusion.

    Labels for stored checks come from a file (--labels; check ids: the check_id column of decisions.csv from
    `ragcourt report RUN --export DIR`) or from a run's review decisions (--run).
    """
    if not (ragchecker or pairs) and labels is None and run_id is None:
        _fail("give --ragchecker (or --pairs FILE), --labels FILE or --run RUN_ID")
    if label and not (ragchecker or pairs):
        _fail("--label chooses among the RAGChecker annotators' labels: it needs --ragchecker or --pairs FILE")
    workspace = Workspace(home)
    from_store = not (ragchecker or pairs)
    if from_store and not workspace.store_path.exists():  # labels and reviews name stored checks
        _fail(f"no record store at {workspace.store_path}")
    store = workspace.open_store()
    try:
        by_aspect: dict[HumanAspect | None, list[CalibrationItem]]
        if ragchecker or pairs:
            try:
                loaded = load_ragchecker_pairs(pairs or bundled(BundledDataset.RAGCHECKER_PAIRS))
            except DatasetError as error:
                _fail(str(error))
            config = EvalConfig(judges=tuple(JudgeSpec(model=j, logprobs=logprobs) for j in (judge or ["lexical"])))
            try:
                judges = Models(config, store).judges()
            except ConfigError as error:
                _fail(str(error))
            judge_ids = [j.judge_id for j in judges]
            run = f"calibrate-{content_id([p.sample_id for p in loaded], judge_ids)[:10]}"
            aspects = tuple(dict.fromkeys(label or [HumanAspect.OVERALL]))
            judged, outcomes = asyncio.run(judge_ragchecker(loaded, judges, store, run, aspects))
            by_aspect = {aspect: items for aspect, items in judged.items()}
            flagged = {j: sum(d.position_bias for o in outcomes for d in o.decisions if d.judge_id == j)
                       for j in judge_ids}
            console.print(f"RAGChecker human-labelled pairs: {len(loaded)} pairs, "
                          f"{sum(len(p.annotations) for p in loaded)} annotations; model1 = A, model2 = B "
                          f"(human {'/'.join(aspects)} label: negative A better, positive B better, 0 Tie); every "
                          f"pair judged in both orders; position-bias Ties per judge: {flagged}")
        else:
            if labels is not None:
                try:
                    human = load_labels(labels, store)
                except DatasetErrors as error:
                    fail_all(error, "fix them and calibrate again")
            else:
                assert run_id is not None
                if store.get_run(run_id) is None:
                    _fail(f"no run '{run_id}' in {workspace.store_path}")
                human = review_labels(store, run_id)
                if not human:
                    _fail(f"run '{run_id}' has no review decisions to use as human labels: review its "
                          f"escalated checks first (`ragcourt review {run_id}`), or give --labels FILE")
            items, judge_ids = items_from_store(store, human, judge)
            by_aspect = {None: items}
        for aspect, aspect_items in by_aspect.items():
            if aspect is not None and len(by_aspect) > 1:
                console.print(f"[bold]human label: {aspect}[/bold]")
            reports = calibrate(aspect_items, judge_ids, seed=seed, n_resamples=bootstrap)
            for report in reports:
                print_calibration(report)
        if from_store and labels is None:
            assert run_id is not None
            print_review_caveat(store, run_id, human, reports)
    except ValueError as error:
        _fail(str(error))
    except OSError as error:  # a missing or unreadable labels file
        _fail(f"{error.filename}: {error.strerror}")
    finally:
        store.close()


def register(app: typer.Typer) -> None:
    app.command("calibrate")(calibrate_command)
