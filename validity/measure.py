"""The validity suite: any judge configuration against public human-labelled sets in their published formats
(`ragcourt calibrate --suite ragchecker|wice|hotpotqa --file PATH`).

- wice: each claim is one claim_supported check of the claim against its cited page's sentences; the human
  label is binarised strictly (supported vs the rest) and leniently (supported or partially vs not), and
  graded 2 / 1 / 0 for correlations with the judge's P(yes).
- hotpotqa: each question is checked against each of its ten paragraphs (subquery_in_chunk, the question as
  the one sub-query); the two supporting paragraphs are the positive labels.
- xquad: each question of a language is checked against each of the paragraphs of its article (subquery_in_chunk):
  the one holding its answer is the positive label, the others same-topic distractors; per language, beside the
  usual figures, top-1 accuracy (the answer's paragraph has the rater's highest P(yes) among its article's).
- ragchecker: the pairs are judged as validity.calibration.judge_ragchecker judges them (both orders); the two
  annotators' labels per aspect, their agreement as the ceiling, and, with RAGChecker's `baseline_*.json`,
  the evaluators' correlations computed as RAGChecker's meta_eval computes them (validity.meta_eval).

Per check kind and reference labels, every rater (each judge; "jury": the majority of several judges, its
score their mean P(yes) where every judge that decided gave one) gets: n, unscored (no label), accuracy,
balanced accuracy, Cohen's kappa, AUROC of its P(yes) where it gave probabilities, each with a percentile
bootstrap 95 % interval over items, and Pearson / Spearman of its score with graded labels.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from statistics import mean

from pydantic import BaseModel, ConfigDict

from ragcourt.data.validity_sets import HotpotItem, WiceItem, XquadLanguage
from ragcourt.judging import Judge
from ragcourt.metrics.agreement import (
    ConfidenceInterval,
    accuracy,
    auroc,
    balanced_accuracy,
    bootstrap_ci,
    cohens_kappa,
    pearson,
    spearman,
)
from ragcourt.metrics.dice import DecisionProbabilities
from ragcourt.metrics.thresholds import (
    cross_validated,
    cross_validated_margin_labels,
    fit_threshold,
    fit_tie_margin,
    objective_value,
)
from ragcourt.metrics.values import not_available
from ragcourt.schema import NORMAL, Check, CheckKind, Label, MetricValue, Verdict
from ragcourt.schema.calibration import PAIRWISE_JURY, LearnedThreshold, ThresholdObjective
from ragcourt.schema.config import PairwiseJury
from ragcourt.validity.calibration import JURY, CalibrationItem, jury_label


class Suite(StrEnum):
    RAGCHECKER = "ragchecker"
    WICE = "wice"
    HOTPOTQA = "hotpotqa"
    XQUAD = "xquad"


WICE_STRICT = "wice strict"  # supported vs the rest
WICE_LENIENT = "wice lenient"  # supported or partially supported vs not supported
WICE_GRADE = "wice grade"  # 2 supported, 1 partially supported, 0 not supported
REFERENCE_NOTES = {
    WICE_STRICT: "supported vs the rest", WICE_LENIENT: "supported or partially vs not",
    WICE_GRADE: "2 supported, 1 partially, 0 not",
}
HOTPOTQA_SUPPORTING = "hotpotqa is_supporting"
XQUAD_ANSWER = "xquad answer paragraph"


def file_sha256(path: Path) -> str:
    """The file's SHA-256; for a folder (XQuAD's files), over each JSON file's name and content in name order."""
    path = Path(path)
    if not path.is_dir():
        return hashlib.sha256(path.read_bytes()).hexdigest()
    digest = hashlib.sha256()
    for file in sorted(path.glob("*.json")):
        digest.update(file.name.encode("utf-8") + b"\0" + hashlib.sha256(file.read_bytes()).digest())
    return digest.hexdigest()


# --------------------------------------------------------------------------- checks of the sets


@dataclass(frozen=True)
class LabelledCheck:
    """One check with its human labels: reference name -> yes/no, and graded reference -> number."""

    check: Check
    labels: Mapping[str, Label]
    grades: Mapping[str, float] = field(default_factory=dict)


def wice_checks(items: Sequence[WiceItem]) -> list[LabelledCheck]:
    out = []
    for item in items:
        claim = item.claim
        check = Check(kind=CheckKind.CLAIM_SUPPORTED, sample_id=f"wice-{claim.meta.id}", condition=NORMAL,
                      subject_id=claim.meta.id, subject_text=claim.claim, target_id=f"wice-evidence-{claim.meta.id}",
                      target_text=claim.evidence_text, question=claim.meta.claim_title or "")
        out.append(LabelledCheck(check, {WICE_STRICT: _yes(claim.label.strict), WICE_LENIENT: _yes(claim.label.lenient)},
                                 {WICE_GRADE: claim.label.grade}))
    return out


def hotpotqa_checks(items: Sequence[HotpotItem]) -> list[LabelledCheck]:
    out = []
    for item in items:
        question = item.question
        for index, paragraph in enumerate(question.contexts):
            check = Check(kind=CheckKind.SUBQUERY_IN_CHUNK, sample_id=f"hotpotqa-{question.question_id}",
                          condition=NORMAL, subject_id=question.question_id, subject_text=question.question_text,
                          target_id=f"{question.question_id}-p{paragraph.id if paragraph.id is not None else index}",
                          target_text=paragraph.text, question=question.question_text)
            out.append(LabelledCheck(check, {HOTPOTQA_SUPPORTING: _yes(paragraph.is_supporting)}))
    return out


def xquad_checks(language: XquadLanguage) -> list[LabelledCheck]:
    """Each question of the language against every paragraph of its article; yes for the one it was asked on."""
    out = []
    lang = language.language
    for a, article in enumerate(language.articles):
        for p, paragraph in enumerate(article.paragraphs):
            for question in paragraph.qas:
                for t, target in enumerate(article.paragraphs):
                    check = Check(kind=CheckKind.SUBQUERY_IN_CHUNK, sample_id=f"xquad-{lang}-{question.id}",
                                  condition=NORMAL, subject_id=question.id, subject_text=question.question,
                                  target_id=f"xquad-{lang}-a{a}-p{t}", target_text=target.context,
                                  question=question.question)
                    out.append(LabelledCheck(check, {XQUAD_ANSWER: _yes(t == p)}))
    return out


class TopOneRow(BaseModel):
    """Per rater and set, the share of questions whose relevant paragraph has the rater's highest P(yes) among
    the question's paragraphs (k paragraphs tied at the top count 1/k each); questions without every P(yes) are
    left out."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    title: str
    rater: str
    n: int
    accuracy: float | None


def top_one(title: str, items: Sequence[CalibrationItem], labelled: Sequence[LabelledCheck], reference: str,
            raters: Sequence[str]) -> list[TopOneRow]:
    by_question: dict[str, list[tuple[CalibrationItem, bool]]] = {}
    for item, entry in zip(items, labelled, strict=True):
        by_question.setdefault(entry.check.sample_id, []).append((item, entry.labels[reference] is Label.YES))
    rows = []
    for rater in raters:
        credits = []
        for paragraphs in by_question.values():
            scores = [item.judge_numbers.get(rater) for item, _ in paragraphs]
            if any(score is None for score in scores):
                continue
            best = max(s for s in scores if s is not None)
            top = [relevant for (_, relevant), score in zip(paragraphs, scores, strict=True) if score == best]
            credits.append(sum(top) / len(top))
        rows.append(TopOneRow(title=title, rater=rater, n=len(credits),
                              accuracy=sum(credits) / len(credits) if credits else None))
    return rows


def _yes(value: bool) -> Label:
    return Label.YES if value else Label.NO


async def judge_checks(checks: Sequence[Check], judges: Sequence[Judge], *, concurrency: int = 8,
                       on_item: Callable[[], None] | None = None,
                       one_target_per_call: bool = False) -> dict[tuple[str, str], Verdict]:
    """(check id, judge id) -> verdict. One batch per judge and sample (as the judge node batches a run's
    checks); a judge that raises gives unscored verdicts with the error, never takes the suite down.
    `on_item` is called once per sample (a claim, a question) when every judge has decided its checks.
    `one_target_per_call`: one batch per sample and target instead, so an LLM judge asked a linked kind (which
    ids hold) sees one target and its P(yes) is readable (decision_tokens.nonempty_list_probabilities); with
    several targets in one call it gives none. One call per target: a question's ten paragraphs cost ten."""
    by_sample: dict[tuple[str, CheckKind, str], list[Check]] = {}
    for check in checks:
        by_sample.setdefault((check.sample_id, check.kind, check.target_id if one_target_per_call else ""),
                             []).append(check)
    gate = asyncio.Semaphore(concurrency)
    batches_left = Counter(sample_id for sample_id, _, _ in by_sample for _judge in judges)

    async def one(judge: Judge, sample_id: str, kind: CheckKind, batch: list[Check]) -> list[Verdict]:
        async with gate:
            try:
                verdicts = await judge.judge(kind, batch)
            except Exception as error:  # noqa: BLE001 - recorded as unscored verdicts, as a run does
                verdicts = [Verdict.failed(c.id, judge.judge_id, error) for c in batch]
        batches_left[sample_id] -= 1
        if on_item is not None and batches_left[sample_id] == 0:
            on_item()
        return verdicts

    done = await asyncio.gather(*(one(judge, sample_id, kind, batch) for judge in judges
                                  for (sample_id, kind, _), batch in by_sample.items()))
    return {(v.check_id, v.judge_id): v for verdicts in done for v in verdicts}


def p_yes(verdict: Verdict | None) -> float | None:
    """A binary verdict's P(yes), where its judge gave one."""
    if verdict is None or not verdict.scored or not verdict.probabilities:
        return None
    return verdict.probabilities.get(Label.YES)


def items_of(labelled: Sequence[LabelledCheck], verdicts: Mapping[tuple[str, str], Verdict],
             judge_ids: Sequence[str]) -> list[CalibrationItem]:
    """Calibration items: each judge's label and P(yes), the jury's majority and mean P(yes)."""
    items = []
    for entry in labelled:
        check = entry.check
        own = {j: verdicts.get((check.id, j)) for j in judge_ids}
        judged: dict[str, Label | None] = {j: v.label if v is not None and v.scored else None for j, v in own.items()}
        scores: dict[str, float | None] = {j: p_yes(v) for j, v in own.items()}
        if len(judge_ids) > 1:
            judged[JURY] = jury_label(check.kind, list(judged.values()))
            decided = [j for j, label in judged.items() if j != JURY and label is not None]
            given = [scores[j] for j in decided]
            scores[JURY] = mean(s for s in given if s is not None) if given and None not in given else None
        items.append(CalibrationItem(item_id=check.id, kind=check.kind, human=dict(entry.labels), judges=judged,
                                     human_numbers=dict(entry.grades), judge_numbers=scores))
    return items


# --------------------------------------------------------------------------- figures


class ValidityRow(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    rater: str
    reference: str
    n: int  # items with both the reference's label and the rater's
    unscored: int  # labelled items the rater gave no label (unscored verdict, or a split jury)
    without_probability: int | None  # labelled items decided without a P(yes) (no AUROC for them); None: pairwise
    accuracy: MetricValue
    accuracy_ci: ConfidenceInterval
    balanced_accuracy: MetricValue
    balanced_accuracy_ci: ConfidenceInterval
    kappa: MetricValue
    kappa_ci: ConfidenceInterval
    auroc: MetricValue
    auroc_ci: ConfidenceInterval


class GradedRow(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    rater: str
    reference: str
    pearson: MetricValue
    pearson_ci: ConfidenceInterval
    spearman: MetricValue
    spearman_ci: ConfidenceInterval


class KindValidity(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: CheckKind
    title: str  # which labels: the set, and for RAGChecker the human aspect
    n_items: int
    references: tuple[str, ...]
    rows: tuple[ValidityRow, ...]
    ceiling: tuple[ValidityRow, ...]  # annotator against annotator
    graded: tuple[GradedRow, ...]


Statistic = Callable[[Sequence[tuple]], float | None]


def _two(metric: Callable[..., MetricValue]) -> Statistic:
    return lambda pairs: metric([a for a, _ in pairs], [b for _, b in pairs]).value


def _ci(metric: Callable[..., MetricValue], pairs: Sequence[tuple], seed: int, n_resamples: int) -> ConfidenceInterval:
    return bootstrap_ci(_two(metric), pairs, seed=seed, n_resamples=n_resamples)


def validity_row(rater: str, reference: str, rated: Sequence[Label | None], truth: Sequence[Label | None],
                 scores: Sequence[float | None], *, binary: bool, seed: int, n_resamples: int) -> ValidityRow:
    labelled = [i for i, t in enumerate(truth) if t is not None]
    pairs = [(rated[i], truth[i]) for i in labelled if rated[i] is not None]
    positive = [None if t is None else t is Label.YES for t in truth]
    scored = [(scores[i], positive[i]) for i in labelled if scores[i] is not None]
    if binary:
        area = auroc(list(scores), positive)
        if area.value is None and not scored:
            area = not_available(area.name, "the rater gave no probabilities", n_unscored=len(labelled))
        area_ci = _ci(auroc, scored, seed, n_resamples)
    else:
        area = not_available("auroc", "pairwise: three labels")
        area_ci = ConfidenceInterval(None, None, None, 0.05, 0, 0, na_reason="not binary")
    return ValidityRow(
        rater=rater, reference=reference, n=len(pairs), unscored=len(labelled) - len(pairs),
        without_probability=sum(1 for i in labelled if rated[i] is not None and scores[i] is None) if binary else None,
        accuracy=accuracy(rated, truth), accuracy_ci=_ci(accuracy, pairs, seed, n_resamples),
        balanced_accuracy=balanced_accuracy(rated, truth),
        balanced_accuracy_ci=_ci(balanced_accuracy, pairs, seed, n_resamples),
        kappa=cohens_kappa(rated, truth), kappa_ci=_ci(cohens_kappa, pairs, seed, n_resamples),
        auroc=area, auroc_ci=area_ci,
    )


def graded_row(rater: str, reference: str, rated: Sequence[float | None], truth: Sequence[float | None], *,
               seed: int, n_resamples: int) -> GradedRow:
    pairs = [(r, t) for r, t in zip(rated, truth, strict=True) if r is not None and t is not None]
    return GradedRow(rater=rater, reference=reference, pearson=pearson(rated, truth),
                     pearson_ci=_ci(pearson, pairs, seed, n_resamples), spearman=spearman(rated, truth),
                     spearman_ci=_ci(spearman, pairs, seed, n_resamples))


def raters_of(items: Sequence[CalibrationItem], judge_ids: Sequence[str]) -> list[str]:
    return [*judge_ids, *([JURY] if any(JURY in item.judges for item in items) else [])]


def kind_validity(kind: CheckKind, title: str, items: Sequence[CalibrationItem], judge_ids: Sequence[str], *,
                  references: Sequence[str], ceiling_pairs: Sequence[tuple[str, str]] = (),
                  graded_references: Sequence[str] = (), seed: int = 0, n_resamples: int = 1000) -> KindValidity:
    """The figures of one kind: every rater against every label reference and graded reference; `ceiling_pairs`
    (annotator, annotator) rows are human against human."""
    options = {"seed": seed, "n_resamples": n_resamples}
    binary = kind.is_binary
    raters = raters_of(items, judge_ids)
    rows = []
    for reference in references:
        truth = [item.human.get(reference) for item in items]
        for rater in raters:
            rows.append(validity_row(rater, reference, [item.judges.get(rater) for item in items], truth,
                                     [item.judge_numbers.get(rater) if binary else None for item in items],
                                     binary=binary, **options))
    ceiling = [validity_row(a, b, [item.human.get(a) for item in items], [item.human.get(b) for item in items],
                            [None] * len(items), binary=binary, **options) for a, b in ceiling_pairs]
    graded = []
    for reference in graded_references:
        truth_numbers = [item.human_numbers.get(reference) for item in items]
        for rater in raters:
            rated = [item.judge_numbers.get(rater) for item in items]
            if any(r is not None for r in rated):
                graded.append(graded_row(rater, reference, rated, truth_numbers, **options))
    return KindValidity(kind=kind, title=title, n_items=len(items), references=tuple(references), rows=tuple(rows),
                        ceiling=tuple(ceiling), graded=tuple(graded))


# --------------------------------------------------------------------------- thresholds


def fit_thresholds(items: Sequence[CalibrationItem], judges: Mapping[str, str], reference: str,
                   objective: ThresholdObjective, *, folds: int = 5, seed: int = 0) -> list[LearnedThreshold]:
    """Per judge (id -> model) and binary kind: the P(yes) threshold maximising `objective` against
    `reference`, with its in-sample and k-fold cross-validated figures. A judge that gave no probability on
    the labelled items of a kind gets no threshold (there is nothing to cut)."""
    out = []
    for kind in dict.fromkeys(item.kind for item in items):
        if not kind.is_binary:
            continue
        of_kind = [item for item in items if item.kind is kind and item.human.get(reference) is not None]
        for judge_id, model in judges.items():
            scored = [(score, item.human[reference] is Label.YES) for item in of_kind
                      if (score := item.judge_numbers.get(judge_id)) is not None]
            if not scored:
                continue
            scores, truth = [s for s, _ in scored], [t for _, t in scored]
            fit = fit_threshold(scores, truth, objective)
            held_out = cross_validated(scores, truth, objective, k=folds, seed=seed)
            out.append(LearnedThreshold(
                judge_id=judge_id, judge_model=model, kind=kind, threshold=fit.threshold, objective=objective,
                labels=reference, in_sample=fit.value.value, cross_validated=held_out.value,
                cross_validated_na=held_out.na_reason, folds=folds, n=len(scored), n_positive=sum(truth),
                n_without_probability=len(of_kind) - len(scored),
            ))
    return out


# --------------------------------------------------------------------------- the pairwise jury's tie margin

ANNOTATORS_MEAN = "annotators' mean"  # per pair: the sign of the annotators' mean score (A, B, or Tie at 0)
_PREFERENCE = {Label.A: -1.0, Label.TIE: 0.0, Label.B: 1.0}


class JuryRuleRow(BaseModel):
    """The pairwise jury's labels under one rule against one reference."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    rule: str  # "majority_tie", or "mean_probability, cv" (each fold labelled by a margin fit without it)
    reference: str
    kappa: MetricValue
    n_tie: int  # the jury's Tie labels on the reference's labelled items


class PairwiseJuryFit(BaseModel):
    """The tie margin learned for the mean_probability jury, and the jury before (majority_tie) and after
    (mean_probability, cross-validated) against every reference; Pearson of the label's preference (A -1, Tie
    0, B +1) with the annotators' mean score."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    margin: LearnedThreshold
    rows: tuple[JuryRuleRow, ...]
    n_human_tie: dict[str, int]  # per reference: the humans' Tie labels
    pearson_before: MetricValue
    pearson_after: MetricValue


def _preference(labels: Sequence[Label | None]) -> list[float | None]:
    return [None if label is None else _PREFERENCE[label] for label in labels]


def annotators_mean(items: Sequence[CalibrationItem]) -> tuple[list[float | None], list[Label | None]]:
    """Per pair, the annotators' mean score and its label (B above 0, A below, Tie at 0): one label a pair, the
    reference the tie margin is fit and measured against. None where no annotator scored it."""
    means = [mean(item.human_numbers.values()) if item.human_numbers else None for item in items]
    return means, [None if m is None else Label.B if m > 0 else Label.A if m < 0 else Label.TIE for m in means]


def fit_pairwise_jury(items: Sequence[CalibrationItem], probabilities: Sequence[DecisionProbabilities],
                      judge_models: Mapping[str, str], references: Sequence[str], objective: ThresholdObjective, *,
                      folds: int = 5, seed: int = 0) -> PairwiseJuryFit:
    """The margin fit against the annotators' mean label per pair (one label per pair, so a pair's two
    annotations never sit on both sides of a fold), scored k-fold: each fold's labels come from the margin fit on
    the other folds. `probabilities[i]` is the jury's mean (P_A, P_B, P_Tie) on `items[i]`; `references` are
    the items' human label references (annotators, agreeing annotators) the before/after kappas are taken on."""
    means, truth = annotators_mean(items)
    fitted = [i for i, t in enumerate(truth) if t is not None and probabilities[i].na_reason is None]
    if not fitted:
        raise ValueError("no pair has both human scores and the jury's probabilities: no tie margin to learn")
    fit_p = [probabilities[i] for i in fitted]
    fit_truth = [label for i in fitted if (label := truth[i]) is not None]
    fit = fit_tie_margin(fit_p, fit_truth, objective)
    held = cross_validated_margin_labels(fit_p, fit_truth, objective, k=folds, seed=seed)
    after: list[Label | None] = [None] * len(items)
    if not isinstance(held, str):
        for i, label in zip(fitted, held, strict=True):
            after[i] = label
    before = [item.judges.get(JURY) for item in items]
    cv = (objective_value(objective, [after[i] for i in fitted], fit_truth).value
          if not isinstance(held, str) else None)
    margin = LearnedThreshold(
        judge_id=PAIRWISE_JURY, judge_model="+".join(judge_models.values()), kind=CheckKind.PAIRWISE,
        threshold=fit.threshold, objective=objective, labels=ANNOTATORS_MEAN, in_sample=fit.value.value,
        cross_validated=cv, cross_validated_na=held if isinstance(held, str) else None, folds=folds,
        n=len(fitted), n_positive=sum(1 for t in fit_truth if t is not Label.TIE),
        n_without_probability=sum(1 for t in truth if t is not None) - len(fitted))
    rows, ties = [], {}
    for reference in [ANNOTATORS_MEAN, *references]:
        labels = truth if reference == ANNOTATORS_MEAN else [item.human.get(reference) for item in items]
        ties[reference] = sum(1 for t in labels if t is Label.TIE)
        for rule, rated in ((str(PairwiseJury.MAJORITY_TIE), before),
                            (f"{PairwiseJury.MEAN_PROBABILITY}, cv", after)):
            rows.append(JuryRuleRow(rule=rule, reference=reference, kappa=cohens_kappa(rated, labels),
                                    n_tie=sum(1 for r, t in zip(rated, labels, strict=True)
                                              if r is Label.TIE and t is not None)))
    return PairwiseJuryFit(margin=margin, rows=tuple(rows), n_human_tie=ties,
                           pearson_before=pearson(_preference(before), means),
                           pearson_after=pearson(_preference(after), means))

