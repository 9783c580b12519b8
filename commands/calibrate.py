"""`ragcourt calibrate`: agreement between the judges (and the jury) and human labels."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import numpy as np
import typer
from rich.markup import escape
from rich.table import Table

from ragcourt.commands.elements import fail_all
from ragcourt.commands.endpoints import require_endpoints
from ragcourt.commands.judge_help import judge_help
from ragcourt.commands.output import console, print_table
from ragcourt.commands.output import fail as _fail
from ragcourt.commands.progress import Tracker, track_progress
from ragcourt.commands.validity_tables import figure, print_jury_fit, print_suite
from ragcourt.data.loaders import (
    BundledDataset,
    DatasetError,
    DatasetErrors,
    HumanAspect,
    bundled,
    load_ragchecker_pairs,
)
from ragcourt.judging.baseline import Embed
from ragcourt.judging.features import FeatureExtractor
from ragcourt.runs.models import Models, check_judge_options, check_model_specs
from ragcourt.runs.workspace import DEFAULT_HOME, Workspace
from ragcourt.schema import MetricValue, content_id
from ragcourt.schema.calibration import (
    STORED_LABELS,
    CalibrationProfile,
    LearnedThreshold,
    ThresholdObjective,
)
from ragcourt.schema.config import ConfigError, EvalConfig, JudgeSpec, load_config
from ragcourt.schema.stacking import StackedModel
from ragcourt.stores.records import RecordStore
from ragcourt.validity.calibration import (
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
from ragcourt.validity.measure import WICE_LENIENT, WICE_STRICT, PairwiseJuryFit, Suite, file_sha256
from ragcourt.validity.profile import load_profile
from ragcourt.validity.review_fit import AGREED, fit_stored_thresholds, labelled_checks, labels_sha256
from ragcourt.validity.stacking import fit_labelled, fit_suite_file
from ragcourt.validity.suite import (
    JURY_NEEDS_TWO_JUDGES,
    NO_THRESHOLD,
    SuiteProgress,
    fit_ragchecker_jury,
    run_suite,
)


def print_calibration(report: KindCalibration) -> None:
    title = escape(f"{report.kind}: {report.n_items} items; annotators: {', '.join(report.annotators) or 'none'}; "
                   "95% bootstrap intervals over items")
    if report.agreements or report.ceiling:
        print_table(Table(title=title), ["rater", "reference", "n", "rater undecided", "no reference label",
                                         "accuracy", "Cohen's kappa"],
                    [[row.rater, row.reference, str(row.accuracy.n), str(row.n_rater_undecided),
                      str(row.n_without_reference), figure(row.accuracy, row.accuracy_ci), figure(row.kappa, row.kappa_ci)]
                     for row in (*report.agreements, *report.ceiling)])
        if report.ceiling:
            console.print("(annotator rows at the bottom: human against human, the ceiling for a judge; for "
                          "'agreeing annotators' an item has no reference label when the annotators disagree)")
        console.print(f"Fleiss' kappa among the judges: {figure(report.fleiss_judges)} "
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
                    [[row.rater, row.reference, str(row.pearson.n), figure(row.pearson),
                      figure(row.spearman, row.spearman_ci)] for row in report.correlations])


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
    suite: Annotated[Suite | None, typer.Option(help="the validity suite: a public human-labelled set in its "
                                                    "published format, given with --file: ragchecker "
                                                    "(human_labeled_data.json), wice (entailment_retrieval/claim "
                                                    "*.jsonl), hotpotqa (distractor, IRCoT format), xquad (SQuAD "
                                                    "format: a folder of xquad.LANG.json, or one)")] = None,
    file: Annotated[Path | None, typer.Option(help="with --suite: the set's file (xquad: or its folder)")] = None,
    baseline_file: Annotated[list[Path] | None, typer.Option(help="repeatable, with --suite ragchecker: "
                                                                    "RAGChecker's baseline_*.json (their "
                                                                    "evaluators' scores on the same instances), "
                                                                    "reported beside ragcourt's as its meta_eval "
                                                                    "computes them")] = None,
    config_file: Annotated[Path | None, typer.Option("--config", help="with --suite: a YAML or TOML EvalConfig "
                                                                       "whose judges are measured (--judge "
                                                                       "overrides them)")] = None,
    limit: Annotated[int | None, typer.Option(help="with --suite: only the first N claims, questions or pairs",
                                              min=1)] = None,
    json_path: Annotated[Path | None, typer.Option("--json", help="with --suite: write the figures as JSON "
                                                                   "here")] = None,
    fit_threshold: Annotated[ThresholdObjective | None, typer.Option(
        help="with --suite wice|hotpotqa, or --run RUN (its review decisions, or --labels FILE, on its judges' "
             "stored P(yes)): learn per judge and kind the P(yes) threshold maximising this against the "
             "labels; with --suite ragchecker, --ragchecker or --pairs FILE (two judges or more): the pairwise "
             "jury's tie margin on P_B - P_A against the annotators' mean label of the first --label (for `rank "
             "--calibration-profile`); each with a k-fold cross-validated figure")] = None,
    fit_stacked: Annotated[bool, typer.Option(
        help="with --suite wice|hotpotqa, --run RUN or --labels FILE: fit the stacked offline judge (a logistic "
             "regression over the offline judges' features) per binary kind, with k-fold cross-validated AUROC and "
             "kappa; needs scikit-learn (the learn extra) and 30 labels of each class")] = False,
    fit_on: Annotated[str | None, typer.Option(help="with --fit-threshold or --fit-stacked on wice: 'strict' (default) or "
                                                    "'lenient' labels")] = None,
    folds: Annotated[int, typer.Option(help="cross-validation folds of --fit-threshold", min=2)] = 5,
    save_profile: Annotated[Path | None, typer.Option(help="with --fit-threshold and/or --fit-stacked: save the "
                                                           "thresholds and stacked models as a calibration profile "
                                                           "(JSON) for `ragcourt run --calibration-profile` (the "
                                                           "jury member `learned` applies its stacked models); the "
                                                           "pairwise jury's tie margin (--suite ragchecker, "
                                                           "--ragchecker or --pairs) for `ragcourt rank "
                                                           "--calibration-profile`")] = None,
    ragchecker: Annotated[bool, typer.Option(help="the worked example: RAGChecker human-labelled pairs")] = False,
    pairs: Annotated[Path | None, typer.Option(help="a RAGChecker pairs file (default: the bundled one); with "
                                                    "--fit-threshold and two judges or more it learns the pairwise "
                                                    "jury's tie margin as --suite ragchecker --file does")] = None,
    labels: Annotated[Path | None, typer.Option(help="JSONL of {check_id, label | score, annotator?} for "
                                                        "checks in the store: label yes/no (binary checks) or "
                                                        "A/B/Tie (pairwise), score 0-10 (dimension_score); one "
                                                        "line per check and annotator. Check ids (and kinds): "
                                                        f"{CHECK_IDS_HINT}")] = None,
    run_id: Annotated[str | None, typer.Option("--run", help="use the review decisions of this run (with "
                                                             "--labels: the run whose judges --fit-threshold "
                                                             "fits); these cover only escalated checks, "
                                                             "the ones the judges disagreed on, so they understate "
                                                             "agreement: label a random sample with --labels for "
                                                             "an unbiased estimate")] = None,
    judge: Annotated[list[str] | None, typer.Option(help=judge_help(
        "learned needs --suite and a --config whose calibration_profile holds stacked models; with --labels/--run: "
        "judge ids in the store"))] = None,
    logprobs: Annotated[bool, typer.Option(help="ask LLM judges for logprobs")] = False,
    label: Annotated[list[HumanAspect] | None, typer.Option(help="repeatable, with --ragchecker/--pairs: which "
                                                                "human label the judges are compared with "
                                                                "(default: overall); each is reported")] = None,
    seed: Annotated[int, typer.Option(help="bootstrap seed (and the folds' of --fit-threshold and --fit-stacked)")] = 0,
    bootstrap: Annotated[int, typer.Option(help="bootstrap resamples")] = 1000,
    home: Annotated[Path, typer.Option(help="workspace folder: record store, chroma, runs")] = DEFAULT_HOME,
) -> None:
    """Agreement of judges with human labels: accuracy, Cohen's / Fleiss' kappa, correlations, confusion.

    Labels for stored checks come from a file (--labels; check ids: the check_id column of decisions.csv from
    `ragcourt report RUN --export DIR`) or from a run's review decisions (--run); with --fit-threshold (and
    --fit-stacked) they refit a calibration profile for later runs of the jury (--save-profile).

    The validity suite (--suite NAME --file PATH) measures any judge configuration against a public set in its
    published format: per check kind n, unscored, accuracy, balanced accuracy, Cohen's kappa, AUROC of P(yes)
    where the judge gives probabilities, correlations with graded labels, bootstrap 95% intervals, and the
    annotators' own agreement as the ceiling; --fit-threshold learns thresholds, --save-profile keeps them.
    On the RAGChecker pairs (--suite ragchecker, --ragchecker or --pairs FILE) it learns the pairwise jury's tie
    margin instead, the same either way.
    """
    if suite is not None:
        if save_profile is not None and fit_threshold is None and not fit_stacked:
            _fail("--save-profile saves what is learned: give --fit-threshold balanced_accuracy|kappa, "
                  "--fit-stacked or both")
        thresholds = _suite(suite, file, baseline_file or [], config_file, judge, logprobs, label, limit, json_path,
                            fit_threshold, fit_on, folds, seed, bootstrap, home)
        assert file is not None  # _suite refused the suite without one
        stacked = _stacked(suite, file, fit_on, limit, folds, seed) if fit_stacked else []
        if save_profile is not None and fit_threshold is not None and not thresholds:
            _fail(NO_THRESHOLD)
        if save_profile is not None:
            _save(_file_profile(suite, file, thresholds, tuple(stacked)), save_profile)
        return
    if file or baseline_file or config_file or json_path:
        _fail("--file, --baseline-file, --config and --json go with --suite NAME")
    from_store = not (ragchecker or pairs)
    if from_store and labels is None and run_id is None:
        _fail("give --ragchecker (or --pairs FILE), --labels FILE or --run RUN_ID")
    if fit_stacked and not from_store:
        _fail("--fit-stacked fits a stacked judge per binary kind, and the RAGChecker pairs are pairwise: it and "
              "its profile go with --suite wice|hotpotqa, --run RUN or --labels FILE (on the pairs, "
              "--fit-threshold learns the pairwise jury's tie margin)")
    refit = fit_threshold is not None or fit_stacked
    if save_profile is not None and not refit:
        _fail("--save-profile saves what is learned: give --fit-threshold balanced_accuracy|kappa"
              + (", --fit-stacked or both" if from_store else ""))
    if fit_threshold is not None and from_store and run_id is None:
        _fail("--fit-threshold on stored labels needs --run RUN: the run whose judges' thresholds are learned (its "
              "configuration names their models)")
    if fit_on is not None and fit_threshold is not None and not from_store:
        _fail("--fit-on chooses among WiCE's labels: it goes with --suite wice")
    if label and from_store:
        _fail("--label chooses among the RAGChecker annotators' labels: it needs --ragchecker or --pairs FILE")
    if not from_store:  # with --labels or --run, --judge names judge ids in the store, not judges to build
        try:
            check_judge_options(judge or ())
        except ConfigError as error:
            _fail(str(error))
    workspace = Workspace(home)
    if from_store and not workspace.has_store():  # labels and reviews name stored checks
        _fail(f"no record store at {workspace.store_path}")
    store = workspace.open_store()
    try:
        by_aspect: dict[HumanAspect | None, list[CalibrationItem]]
        jury_fit: PairwiseJuryFit | None = None
        if not from_store:
            pairs_file = pairs or bundled(BundledDataset.RAGCHECKER_PAIRS)
            try:
                loaded = load_ragchecker_pairs(pairs_file)
            except DatasetError as error:
                _fail(str(error))
            config = EvalConfig(judges=tuple(JudgeSpec(model=j, logprobs=logprobs) for j in (judge or ["lexical"])))
            try:
                judges = Models(config, store).judges()
            except ConfigError as error:
                _fail(str(error))
            if fit_threshold is not None and len(judges) < 2:
                _fail(JURY_NEEDS_TWO_JUDGES)
            require_endpoints(config)
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
            if fit_threshold is not None:  # on the first aspect asked, as the suite: one margin per profile
                jury_fit = fit_ragchecker_jury(judged[aspects[0]], outcomes,
                                               {spec.judge_id: spec.model for spec in config.judges},
                                               fit_threshold, folds=folds, seed=seed)
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
        if jury_fit is not None:
            print_jury_fit(jury_fit)
            if save_profile is not None:
                _save(_file_profile(Suite.RAGCHECKER, pairs_file, (jury_fit.margin,)), save_profile)
        if refit and from_store:  # on the pairs the refit is the jury's margin, above
            source = (str(labels) if labels is not None else f"review decisions of run {run_id}",
                      file_sha256(labels) if labels is not None else labels_sha256(human))
            _refit(store, human, run_id, judge, source, fit_threshold, fit_stacked, fit_on, folds, seed, save_profile)
    except ValueError as error:
        _fail(str(error))
    except OSError as error:  # a missing or unreadable labels file
        _fail(f"{error.filename}: {error.strerror}")
    finally:
        store.close()


def _refit(store: RecordStore, human: list[HumanLabel], run_id: str | None, judge: list[str] | None,
           source: tuple[str, str], objective: ThresholdObjective | None, fit_stacked: bool, fit_on: str | None,
           folds: int, seed: int, save_profile: Path | None) -> None:
    """Thresholds (and stacked models) fit on the labels of stored checks, printed, and saved as a profile."""
    if fit_on is not None:
        _fail("--fit-on chooses among WiCE's labels: it goes with --suite wice")
    labelled = labelled_checks(store, human)
    thresholds: list[LearnedThreshold] = []
    if objective is not None:
        assert run_id is not None  # refused before anything was read
        run = store.get_run(run_id)
        if run is None:
            _fail(f"no run '{run_id}' in the store")
        models = {spec.judge_id: spec.model for spec in EvalConfig.of_stored_run(run.config).judges
                  if not judge or spec.judge_id in judge}
        thresholds, refused = fit_stored_thresholds(store, labelled, models, objective, folds=folds, seed=seed)
        for threshold in thresholds:
            console.print(escape(f"learned: {threshold.describe()}"))
        for reason in refused:
            console.print(escape(reason))
        if not thresholds:
            console.print(escape(NO_THRESHOLD))
    stacked: list[StackedModel] = []
    if fit_stacked:
        embed = _embedder()
        try:
            stacked, refused = fit_labelled(labelled, AGREED, FeatureExtractor(embed), data_sha256=source[1],
                                            folds=folds, seed=seed)
        except (ValueError, RuntimeError) as error:
            _fail(str(error))
        _print_stacked(stacked, refused, f"the agreed labels of {source[0]}")
    if save_profile is not None:
        _save(CalibrationProfile(suite=STORED_LABELS, data_file=source[0], data_sha256=source[1],
                                 thresholds=tuple(thresholds), stacked=tuple(stacked)), save_profile)


_FIT_ON = {"strict": WICE_STRICT, "lenient": WICE_LENIENT}
# What the suite's progress counts (validity.suite.SuiteProgress)
_JUDGED = {Suite.WICE: "judging WiCE claims", Suite.HOTPOTQA: "judging HotpotQA questions",
           Suite.XQUAD: "judging XQuAD questions (all languages)",
           Suite.RAGCHECKER: "judging RAGChecker pairs (pairwise verdicts asked; stored ones are reused)"}


def _told(tracker: Tracker) -> SuiteProgress:
    def progress(done: int, total: int | None) -> None:
        if total is not None and tracker.total != total:
            tracker.set_total(total)
        tracker.advance(done - tracker.completed)

    return progress


def _suite(suite: Suite, file: Path | None, baselines: list[Path], config_file: Path | None, judge: list[str] | None,
           logprobs: bool, aspects: list[HumanAspect] | None, limit: int | None, json_path: Path | None,
           objective: ThresholdObjective | None, fit_on: str | None, folds: int, seed: int, bootstrap: int,
           home: Path) -> tuple[LearnedThreshold, ...]:
    """Measure the judges on the set and print it; the thresholds learned (none without `objective`)."""
    if file is None:
        _fail(f"--suite {suite} needs --file PATH (the set in its published format)")
    if fit_on is not None and (suite is not Suite.WICE or fit_on not in _FIT_ON):
        _fail("--fit-on is 'strict' or 'lenient', for --suite wice")
    if aspects and suite is not Suite.RAGCHECKER:
        _fail("--label chooses among the RAGChecker annotators' labels: it goes with --suite ragchecker")
    try:
        config = load_config(config_file) if config_file else EvalConfig()
        if judge:
            check_judge_options(judge)
            config = config.with_overrides(judges=[{"model": j, "logprobs": logprobs} for j in judge])
        check_model_specs(config, str(config_file) if config_file else "options", "--judge" if judge else None)
    except (ConfigError, ValueError) as error:
        _fail(str(error))
    try:
        profile = load_profile(config)
    except ConfigError as error:
        _fail(str(error))
    if suite is Suite.RAGCHECKER and profile is not None:
        # The pairs are pairwise: judges' thresholds (binary kinds) never decide them, and the profile's tie margin
        # is the jury's, measured by the suite (a transfer row), so the judges are built without the profile.
        config = config.with_overrides(calibration_profile=None)
    store = Workspace(home).open_store()
    try:
        try:
            judges = Models(config, store).judges()
        except ConfigError as error:
            _fail(str(error))
        require_endpoints(config)
        models = {spec.judge_id: spec.model for spec in config.judges}
        with track_progress(_JUDGED[suite], total=None) as tracker:
            report = asyncio.run(run_suite(
                suite, file, judges, models, store, limit=limit, baselines=baselines,
                aspects=tuple(dict.fromkeys(aspects or [HumanAspect.OVERALL])), seed=seed, n_resamples=bootstrap,
                fit=objective, fit_on=_FIT_ON[fit_on] if fit_on else None, folds=folds,
                concurrency=config.llm_concurrency, progress=_told(tracker), profile=profile))
    except DatasetErrors as error:
        fail_all(error, "fix them and calibrate again")
    except DatasetError as error:
        _fail(str(error))
    except ValueError as error:
        _fail(str(error))
    except OSError as error:
        _fail(f"{error.filename}: {error.strerror}")
    finally:
        store.close()
    print_suite(report)
    if json_path is not None:
        json_path.write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
        console.print(escape(f"figures written to {json_path}"))
    return report.thresholds


def _file_profile(suite: Suite, file: Path, thresholds: tuple[LearnedThreshold, ...],
                  stacked: tuple[StackedModel, ...] = ()) -> CalibrationProfile:
    """The profile of what was learned on a set's file, which it names with its content hash."""
    return CalibrationProfile(suite=str(suite), data_file=str(file), data_sha256=file_sha256(file),
                              thresholds=thresholds, stacked=stacked)


def _save(profile: CalibrationProfile, path: Path) -> None:
    if not profile.thresholds and not profile.stacked:
        _fail(f"nothing was learned, so no profile is written to {path}")
    profile.save(path)
    if profile.tie_margin() is not None:  # the jury's margin decides a tournament's verdicts, not a run's judges'
        console.print(escape(f"calibration profile written to {path}: apply its pairwise jury's tie margin with "
                             f"`ragcourt rank --calibration-profile {path}`"))
        return
    learned = " (`--judge learned` applies its stacked models)" if profile.stacked else ""
    console.print(escape(f"calibration profile written to {path}: apply it with `ragcourt run "
                         f"--calibration-profile {path}` or `calibration_profile:` in the config{learned}"))


def _embedder() -> Embed:
    """The stacked judge's sentence embedding (MiniLM, as a run's `learned` judge embeds)."""
    # Here, not at the top: stores.embeddings imports chromadb, which `ragcourt --help` should not load.
    from ragcourt.stores.embeddings import MiniLMEmbedding

    embedding = MiniLMEmbedding()

    def embed(texts: list[str]) -> np.ndarray:
        return np.asarray(embedding(texts), dtype=np.float32)

    return embed


def _stacked(suite: Suite, file: Path, fit_on: str | None, limit: int | None, folds: int,
             seed: int) -> list[StackedModel]:
    """Fit and print the stacked judge of each binary kind of the set (validity.stacking), or why it is refused."""
    try:
        reference, fitted, refused = fit_suite_file(suite, file, _embedder(), limit=limit, folds=folds,
                                                    seed=seed, reference=_FIT_ON[fit_on] if fit_on else None)
    except (ValueError, RuntimeError) as error:
        _fail(str(error))
    _print_stacked(fitted, refused, f"'{reference}'")
    return fitted


def _print_stacked(fitted: Sequence[StackedModel], refused: Sequence[str], labels: str) -> None:
    """Each stacked model fit, with its held-out and in-sample figures, and each refusal."""
    for model in fitted:
        console.print(escape(f"{model.describe()} against {labels}; in-sample AUROC {model.in_sample_auroc:.3f}, "
                             f"kappa {model.in_sample_kappa:.3f}; C {model.regularisation:g}"))
    for reason in refused:
        console.print(escape(reason))


def register(app: typer.Typer) -> None:
    app.command("calibrate")(calibrate_command)
