"""One run of the validity suite: load a set, judge it with the configured judges, compute the figures
(validity.measure), RAGChecker's meta-evaluation beside them when its baseline files are given
(validity.meta_eval), and optionally learn thresholds (a calibration profile)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from ragcourt.data.loaders import HumanAspect, load_ragchecker_pairs
from ragcourt.data.validity_sets import (
    load_hotpotqa_paragraphs,
    load_ragchecker_baseline,
    load_wice,
    load_xquad,
)
from ragcourt.judging import BaselineJudge, Judge
from ragcourt.judging.learned import LearnedJudge
from ragcourt.metrics.dice import jury_label
from ragcourt.metrics.thresholds import objective_value
from ragcourt.nodes.tournament_state import QuestionOutcome
from ragcourt.schema import Check, CheckKind, Label, MetricValue, Verdict, content_id
from ragcourt.schema.calibration import CalibrationProfile, LearnedThreshold, ThresholdObjective
from ragcourt.schema.config import PairwiseJury
from ragcourt.stores.records import RecordStore
from ragcourt.validity.calibration import CONSENSUS, JURY, CalibrationItem, annotator_name, judge_ragchecker
from ragcourt.validity.measure import (
    ANNOTATORS_MEAN,
    HOTPOTQA_SUPPORTING,
    WICE_GRADE,
    WICE_LENIENT,
    WICE_STRICT,
    XQUAD_ANSWER,
    KindValidity,
    LabelledCheck,
    PairwiseJuryFit,
    Suite,
    TopOneRow,
    annotators_mean,
    file_sha256,
    fit_pairwise_jury,
    hotpotqa_checks,
    items_of,
    judge_checks,
    kind_validity,
    raters_of,
    top_one,
    wice_checks,
    xquad_checks,
)
from ragcourt.validity.measure import fit_thresholds as fit_kind_thresholds
from ragcourt.validity.meta_eval import MetaEvalRow, meta_eval
from ragcourt.validity.profile import CalibratedJudge

FIT_REFERENCES = {Suite.WICE: (WICE_STRICT, WICE_LENIENT), Suite.HOTPOTQA: (HOTPOTQA_SUPPORTING,),
                  Suite.XQUAD: (XQUAD_ANSWER,)}
# Told (done, total) as the suite judges: WiCE claims and HotpotQA questions every judge has decided, of all
# taken; for the RAGChecker pairs the pairwise verdicts asked so far, total None (the match reuses stored
# verdicts and judges identical answers once, so how many it asks is known only as it goes).
SuiteProgress = Callable[[int, int | None], None]


@dataclass
class _CountedJudge:
    """A pairwise judge that tells `progress` of every verdict it gives (the match graph asks one check a call)."""

    inner: Judge
    count: Callable[[int], None]

    @property
    def judge_id(self) -> str:
        return self.inner.judge_id

    async def judge(self, kind: CheckKind, checks: Sequence[Check]) -> list[Verdict]:
        verdicts = await self.inner.judge(kind, checks)
        self.count(len(verdicts))
        return verdicts


class TransferRow(BaseModel):
    """A profile's threshold measured on another labelled set: its cross-validated figure on the data it was fit
    on beside the objective on this set, with the threshold and with the judge's own labels."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    judge_id: str  # the uncalibrated judge; the calibrated one is `<judge>+cal-<tag>`; or the learned judge
    kind: CheckKind
    objective: ThresholdObjective
    reference: str  # the labels of this set the objective is taken against
    profile_file: str
    profile_cv: float | None
    calibrated: MetricValue
    uncalibrated: MetricValue
    # A stacked model has no uncalibrated self: it is measured against this offline judge of the same call
    # (uncalibrated then holds that judge's figure on the same checks).
    baseline: str | None = None

    @property
    def worse(self) -> bool:
        """The threshold does worse here than the judge it calibrates: the profile does not transfer."""
        return (self.calibrated.value is not None and self.uncalibrated.value is not None
                and self.calibrated.value < self.uncalibrated.value)


class SuiteReport(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    suite: Suite
    file: str
    data_sha256: str
    judges: tuple[str, ...]
    n_items: int  # claims, questions or pairs taken from the file (after --limit)
    n_in_file: int
    kinds: tuple[KindValidity, ...]
    meta_eval: tuple[MetaEvalRow, ...] = ()
    baseline_files: tuple[str, ...] = ()
    thresholds: tuple[LearnedThreshold, ...] = ()
    fit_reference: str | None = None
    jury_fit: PairwiseJuryFit | None = None  # RAGChecker with a fit: the jury's tie margin, before and after
    transfer: tuple[TransferRow, ...] = ()  # the applied profile's thresholds measured on this set
    profile_file: str | None = None  # the data the applied profile was fit on
    top1: tuple[TopOneRow, ...] = ()  # XQuAD: per language and rater, the answer's paragraph ranked first


def transfer_rows(profile: CalibrationProfile, judges: Sequence[Judge], labelled: Sequence[LabelledCheck],
                  verdicts: Mapping[tuple[str, str], Verdict], references: Sequence[str]) -> list[TransferRow]:
    """Per calibrated judge and kind of the set: the objective with the profile's threshold and without it, on
    the checks both labelled; against the threshold's own labels when this set has them, else its first."""
    rows = _stacked_rows(profile, judges, labelled, verdicts, references)
    for judge in judges:
        if not isinstance(judge, CalibratedJudge):
            continue
        for kind, threshold in judge.thresholds.items():
            reference = threshold.labels if threshold.labels in references else references[0]
            decided = []
            for entry in labelled:
                truth = entry.labels.get(reference)
                own, cal = (verdicts.get((entry.check.id, j)) for j in (judge.inner.judge_id, judge.judge_id))
                if entry.check.kind is kind and truth is not None and own and cal and own.label and cal.label:
                    decided.append((own.label is Label.YES, cal.label is Label.YES, truth is Label.YES))
            if not decided:
                continue
            truths = [t for _, _, t in decided]
            rows.append(TransferRow(
                judge_id=judge.inner.judge_id, kind=kind, objective=threshold.objective, reference=reference,
                profile_file=profile.data_file, profile_cv=threshold.cross_validated,
                calibrated=objective_value(threshold.objective, [c for _, c, _ in decided], truths),
                uncalibrated=objective_value(threshold.objective, [o for o, _, _ in decided], truths)))
    return rows


def _stacked_rows(profile: CalibrationProfile, judges: Sequence[Judge], labelled: Sequence[LabelledCheck],
                  verdicts: Mapping[tuple[str, str], Verdict], references: Sequence[str]) -> list[TransferRow]:
    """Per stacked model of the learned judge and offline rule judge of the call: kappa here of both on the checks
    both decided, beside the model's cross-validated kappa where it was fit."""
    learned = [j for j in judges if isinstance(j, LearnedJudge)]
    # An offline judge the profile also gives a threshold is measured by its own labels (its inner judge's, which
    # the suite judges too), as the judge the stacked model must beat: wrapped, it was left out, and so was the row.
    offline = [inner for j in judges if isinstance(inner := j.inner if isinstance(j, CalibratedJudge) else j,
                                                   BaselineJudge)]
    rows = []
    for judge, model, base in itertools.product(learned, profile.stacked, offline):
        reference = model.labels if model.labels in references else references[0]
        decided = []
        for entry in labelled:
            truth = entry.labels.get(reference)
            mine, theirs = (verdicts.get((entry.check.id, j.judge_id)) for j in (judge, base))
            if entry.check.kind is model.kind and truth is not None and mine and theirs and mine.label and theirs.label:
                decided.append((mine.label is Label.YES, theirs.label is Label.YES, truth is Label.YES))
        if not decided:
            continue
        truths = [t for _, _, t in decided]
        rows.append(TransferRow(
            judge_id=judge.judge_id, kind=model.kind, objective=ThresholdObjective.KAPPA, reference=reference,
            profile_file=profile.data_file, profile_cv=model.cross_validated_kappa,
            calibrated=objective_value(ThresholdObjective.KAPPA, [m for m, _, _ in decided], truths),
            uncalibrated=objective_value(ThresholdObjective.KAPPA, [b for _, b, _ in decided], truths),
            baseline=base.judge_id))
    return rows


def margin_transfer_row(profile: CalibrationProfile, margin: LearnedThreshold, items: Sequence[CalibrationItem],
                        outcomes: Sequence[QuestionOutcome]) -> TransferRow:
    """The profile's tie margin on these pairs: the mean_probability jury with it against the majority_tie jury
    (the uncalibrated rule), by the margin's objective against the annotators' mean label, beside its
    cross-validated figure where it was fit. Pairs without the jury's probabilities or a human score are left
    out, as the fit leaves them out."""
    _, truth = annotators_mean(items)
    kept = [i for i, t in enumerate(truth) if t is not None and outcomes[i].probabilities.na_reason is None]
    truths = [truth[i] for i in kept]
    after = [jury_label(outcomes[i].probabilities, PairwiseJury.MEAN_PROBABILITY, margin.threshold) for i in kept]
    before = [items[i].judges.get(JURY) for i in kept]
    return TransferRow(judge_id=margin.judge_id, kind=CheckKind.PAIRWISE, objective=margin.objective,
                       reference=ANNOTATORS_MEAN, profile_file=profile.data_file, profile_cv=margin.cross_validated,
                       calibrated=objective_value(margin.objective, after, truths),
                       uncalibrated=objective_value(margin.objective, before, truths),
                       baseline=str(PairwiseJury.MAJORITY_TIE))


def _with_consensus(item: CalibrationItem) -> CalibrationItem:
    given = set(item.human.values())
    if len(item.human) < 2 or len(given) != 1:
        return item
    return CalibrationItem(item_id=item.item_id, kind=item.kind, human={**item.human, CONSENSUS: given.pop()},
                           judges=item.judges, human_numbers=item.human_numbers, judge_numbers=item.judge_numbers)


def _references(annotators: Sequence[str]) -> list[str]:
    """The RAGChecker pairs' label references: each annotator, and with several the pairs they agree on."""
    return [*annotators, *([CONSENSUS] if len(annotators) > 1 else [])]


JURY_NEEDS_TWO_JUDGES = "the RAGChecker pairs learn the pairwise jury's tie margin: give at least two judges"


def fit_ragchecker_jury(items: Sequence[CalibrationItem], outcomes: Sequence[QuestionOutcome],
                        judge_models: Mapping[str, str], objective: ThresholdObjective, *, folds: int = 5,
                        seed: int = 0) -> PairwiseJuryFit:
    """The pairwise jury's tie margin learned on one aspect's items of the RAGChecker pairs and the tournament
    outcomes they were judged in (validity.calibration.judge_ragchecker), before and after against the
    annotators' mean, each annotator and the pairs they agree on. `calibrate --suite ragchecker` and
    `calibrate --ragchecker|--pairs` both learn it here, so one file gives one margin either way."""
    annotators = sorted({a for item in items for a in item.human})
    return fit_pairwise_jury([_with_consensus(item) for item in items], [o.probabilities for o in outcomes],
                             judge_models, _references(annotators), objective, folds=folds, seed=seed)


async def run_suite(suite: Suite, path: Path, judges: Sequence[Judge], judge_models: Mapping[str, str],
                    store: RecordStore, *, limit: int | None = None, baselines: Sequence[Path] = (),
                    aspects: Sequence[HumanAspect] = (HumanAspect.OVERALL,), seed: int = 0, n_resamples: int = 1000,
                    fit: ThresholdObjective | None = None, fit_on: str | None = None, folds: int = 5,
                    concurrency: int = 8, progress: SuiteProgress | None = None,
                    profile: CalibrationProfile | None = None) -> SuiteReport:
    """The suite's figures for `judges` on the set in `path` (its first `limit` items). `fit` learns a
    threshold per judge and binary kind against `fit_on` (a reference of the set: for WiCE strict or lenient;
    default: the first). `progress` is told how far the judging is (SuiteProgress). `profile`: the calibration
    profile `judges` apply (validity.profile), measured on this set against the judges' own labels (TransferRow)."""
    if baselines and suite is not Suite.RAGCHECKER:
        raise ValueError("baseline files are RAGChecker's meta-evaluation outputs: they go with --suite ragchecker")
    judge_ids = [j.judge_id for j in judges]
    options: dict[str, Any] = {"seed": seed, "n_resamples": n_resamples}
    kinds: list[KindValidity] = []
    meta_rows: list[MetaEvalRow] = []
    fitted: list[LearnedThreshold] = []
    reference: str | None = None
    jury_fit: PairwiseJuryFit | None = None
    transfer: list[TransferRow] = []
    top1: list[TopOneRow] = []
    if suite is Suite.RAGCHECKER:
        if fit is not None and len(judges) < 2:
            raise ValueError(JURY_NEEDS_TWO_JUDGES)
        pairs = load_ragchecker_pairs(path)
        loaded = [load_ragchecker_baseline(b) for b in baselines]
        taken = pairs[:limit] if limit else pairs
        run_id = f"validity-{content_id([p.sample_id for p in taken], judge_ids)[:10]}"
        asked = 0

        def count(n: int) -> None:
            nonlocal asked
            asked += n
            if progress is not None:
                progress(asked, None)

        counted = [_CountedJudge(j, count) for j in judges] if progress is not None else judges
        by_aspect, outcomes = await judge_ragchecker(taken, counted, store, run_id, aspects)
        annotators = sorted({annotator_name(i) for p in taken for i in range(len(p.annotations))})
        ceiling = list(itertools.combinations(annotators, 2))
        for aspect, items in by_aspect.items():
            items = [_with_consensus(item) for item in items]
            kinds.append(kind_validity(CheckKind.PAIRWISE, f"ragchecker {aspect}", items, judge_ids,
                                       references=_references(annotators), ceiling_pairs=ceiling,
                                       graded_references=annotators, **options))
        margin = None if profile is None else profile.tie_margin()
        if profile is not None and margin is None:
            raise ValueError(f"the calibration profile fit on {profile.data_file} has no pairwise tie margin: on the "
                             "RAGChecker pairs only a margin is measured (judges' thresholds decide binary checks)")
        if profile is not None and margin is not None:
            transfer = [margin_transfer_row(profile, margin, by_aspect[aspects[0]], outcomes)]
        if fit is not None:  # on the first aspect asked (overall by default): one margin per profile
            jury_fit = fit_ragchecker_jury(by_aspect[aspects[0]], outcomes,
                                           {j: judge_models.get(j, j) for j in judge_ids}, fit, folds=folds,
                                           seed=seed)
            fitted = [jury_fit.margin]
            reference = f"ragchecker {aspects[0]}: {ANNOTATORS_MEAN}"
        meta_rows = meta_eval(taken, by_aspect, raters_of(next(iter(by_aspect.values())), judge_ids), loaded)
        n_items, n_in_file = len(taken), len(pairs)
    else:
        groups: list[tuple[str, list[LabelledCheck]]]  # (title, checks): one per XQuAD language, else one
        if suite is Suite.WICE:
            claims = load_wice(path)
            taken_claims = claims[:limit] if limit else claims
            groups = [("wice claims", wice_checks(taken_claims))]
            n_items, n_in_file = len(taken_claims), len(claims)
            references, graded = [WICE_STRICT, WICE_LENIENT], [WICE_GRADE]
        elif suite is Suite.XQUAD:
            languages = load_xquad(path)
            groups = [(f"xquad {language.language}", _first_questions(xquad_checks(language), limit))
                      for language in languages]
            n_items = sum(len({e.check.sample_id for e in labelled}) for _, labelled in groups)
            n_in_file = sum(len({e.check.sample_id for e in xquad_checks(language)}) for language in languages)
            references, graded = [XQUAD_ANSWER], []
        else:
            questions = load_hotpotqa_paragraphs(path)
            taken_questions = questions[:limit] if limit else questions
            groups = [("hotpotqa paragraphs", hotpotqa_checks(taken_questions))]
            n_items, n_in_file = len(taken_questions), len(questions)
            references, graded = [HOTPOTQA_SUPPORTING], []
        labelled = [entry for _, group in groups for entry in group]
        checks = [entry.check for entry in labelled]
        n_samples, judged = len({c.sample_id for c in checks}), 0

        def item_done() -> None:
            nonlocal judged
            judged += 1
            if progress is not None:
                progress(judged, n_samples)

        if progress is not None:
            progress(0, n_samples)
        # A HotpotQA question is asked about each paragraph on its own (WiCE's claims have one evidence text
        # already): one target per call is where an LLM's list of linked ids gives a P(yes).
        # A calibrated judge's own labels too (its stored or cached verdicts): the transfer rows compare them.
        own = [j.inner for j in judges if isinstance(j, CalibratedJudge)] if profile is not None else []
        verdicts = await judge_checks(checks, [*judges, *own], concurrency=concurrency, on_item=item_done,
                                      one_target_per_call=True)
        if profile is not None:
            transfer = transfer_rows(profile, judges, labelled, verdicts, references)
        items = items_of(labelled, verdicts, judge_ids)
        for title, group in groups:
            of_group = items_of(group, verdicts, judge_ids)
            for kind in dict.fromkeys(item.kind for item in of_group):
                of_kind = [item for item in of_group if item.kind is kind]
                kinds.append(kind_validity(kind, title, of_kind, judge_ids, references=references,
                                           graded_references=graded, **options))
            if suite is Suite.XQUAD:
                top1 += top_one(title, of_group, group, XQUAD_ANSWER, raters_of(of_group, judge_ids))
        if fit is not None:
            allowed = FIT_REFERENCES[suite]
            reference = fit_on or allowed[0]
            if reference not in allowed:
                raise ValueError(f"--fit-on must name one of {', '.join(allowed)}, got '{fit_on}'")
            fitted = fit_kind_thresholds(items, {j: judge_models.get(j, j) for j in judge_ids}, reference, fit,
                                         folds=folds, seed=seed)
    return SuiteReport(suite=suite, file=str(path), data_sha256=file_sha256(path), judges=tuple(judge_ids),
                       n_items=n_items, n_in_file=n_in_file, kinds=tuple(kinds), meta_eval=tuple(meta_rows),
                       baseline_files=tuple(str(b) for b in baselines), thresholds=tuple(fitted),
                       fit_reference=reference, jury_fit=jury_fit, transfer=tuple(transfer), top1=tuple(top1),
                       profile_file=None if profile is None else profile.data_file)


def _first_questions(labelled: list[LabelledCheck], limit: int | None) -> list[LabelledCheck]:
    """The checks of the first `limit` questions (all without a limit)."""
    if not limit:
        return labelled
    kept = set(list(dict.fromkeys(entry.check.sample_id for entry in labelled))[:limit])
    return [entry for entry in labelled if entry.check.sample_id in kept]


NO_THRESHOLD = ("no threshold was learned: no judge gave probabilities on the labelled checks (an LLM judge gives "
                "them only where its endpoint returns logprobs with top alternatives)")


def profile_of(report: SuiteReport) -> CalibrationProfile:
    """The calibration profile of a suite run's learned thresholds."""
    if not report.thresholds:
        raise ValueError(NO_THRESHOLD)
    return CalibrationProfile(suite=str(report.suite), data_file=report.file, data_sha256=report.data_sha256,
                              thresholds=report.thresholds)
