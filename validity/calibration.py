"""Agreement between the judges (each, and the jury) and human labels, per check kind (seed 001 4.3).

Human labels come from a file, from review decisions in the store (every Review that decides is a label),
or from the RAGChecker human-labelled pairs. Several annotators are kept apart: figures against each
annotator, against the agreement-only subset (items where every annotator gave the same label; for scores,
their mean), and annotator against annotator (the ceiling a judge can be expected to reach).

Labels (binary yes/no, pairwise A/B/Tie): accuracy, Cohen's kappa, confusion matrix, percentile bootstrap
intervals over items; Fleiss' kappa among the judges on the items every judge decided. Numbers (dimension
scores; for pairwise the preference for B: human score -2..+2, judge +1 / 0 / -1, jury P_B - P_A): Pearson
and Spearman. An undecided rater on an item (unscored, or a binary jury split) leaves the item out of that
rater's figures and is counted, never scored as agreement or disagreement.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from statistics import mean

from pydantic import BaseModel, ConfigDict, Field

from ragcourt.data.loaders import (
    DatasetError,
    DatasetErrors,
    HumanAspect,
    RagCheckerPair,
    label_from_human_score,
    read_jsonl_models,
)
from ragcourt.graphs.tournament import build_match_graph
from ragcourt.judging import Judge
from ragcourt.metrics.agreement import (
    ConfidenceInterval,
    accuracy,
    bootstrap_ci,
    category_counts,
    cohens_kappa,
    confusion_matrix,
    fleiss_kappa,
    pearson,
    spearman,
)
from ragcourt.metrics.dice import vote_probabilities
from ragcourt.nodes.tournament_state import AnswerSet, MatchContext, QuestionOutcome
from ragcourt.schema import SCORE_RANGE, CheckKind, Label, MetricValue, ReviewAction, Sample
from ragcourt.stores.records import RecordStore

JURY = "jury"
CONSENSUS = "agreeing annotators"
_PREFERENCE = {Label.A: -1.0, Label.TIE: 0.0, Label.B: 1.0}
# Where a person finds the ids of the checks to label: one row per check, with its kind and subject.
CHECK_IDS_HINT = "the check_id column of decisions.csv, written by `ragcourt report RUN --export DIR`"


@dataclass(frozen=True)
class CalibrationItem:
    """One judged item with its human labels. Numbers are for correlations (see the module docstring)."""

    item_id: str
    kind: CheckKind
    human: Mapping[str, Label]  # annotator -> label
    judges: Mapping[str, Label | None]  # judge id (and "jury") -> decision, None when undecided
    human_numbers: Mapping[str, float] = field(default_factory=dict)
    judge_numbers: Mapping[str, float | None] = field(default_factory=dict)


class Agreement(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    rater: str
    reference: str
    accuracy: MetricValue
    accuracy_ci: ConfidenceInterval
    kappa: MetricValue
    kappa_ci: ConfidenceInterval
    labels: tuple[Label, ...]
    confusion: tuple[tuple[int, ...], ...]  # rows: the reference's labels, columns: the rater's
    # Why items are left out: the reference has no label for them (for the agreeing-annotators reference:
    # the annotators disagree), or the rater gave none (unscored, or a split jury).
    n_without_reference: int = 0
    n_rater_undecided: int = 0


class Correlation(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    rater: str
    reference: str
    pearson: MetricValue
    spearman: MetricValue
    spearman_ci: ConfidenceInterval


class KindCalibration(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: CheckKind
    n_items: int
    annotators: tuple[str, ...]
    raters: tuple[str, ...]
    agreements: tuple[Agreement, ...]  # every rater against every reference
    ceiling: tuple[Agreement, ...]  # annotator against annotator
    fleiss_judges: MetricValue
    correlations: tuple[Correlation, ...]


def _statistic(metric: Callable[..., MetricValue]) -> Callable[[Sequence[tuple]], float | None]:
    return lambda pairs: metric([a for a, _ in pairs], [b for _, b in pairs]).value


def agreement(
    rater: str, reference: str, rated: Sequence[Label | None], truth: Sequence[Label | None],
    labels: Sequence[Label], *, seed: int, n_resamples: int,
) -> Agreement:
    pairs = [(t, r) for t, r in zip(truth, rated, strict=True) if t is not None and r is not None]
    return Agreement(
        rater=rater, reference=reference, accuracy=accuracy(rated, truth),
        accuracy_ci=bootstrap_ci(_statistic(accuracy), pairs, seed=seed, n_resamples=n_resamples),
        kappa=cohens_kappa(rated, truth),
        kappa_ci=bootstrap_ci(_statistic(cohens_kappa), pairs, seed=seed, n_resamples=n_resamples),
        labels=tuple(labels), confusion=confusion_matrix(truth, rated, labels),
        n_without_reference=sum(t is None for t in truth),
        n_rater_undecided=sum(t is not None and r is None for t, r in zip(truth, rated, strict=True)),
    )


def _explain_undecided_jury(
    row: Agreement, items: Sequence[CalibrationItem], truth: Sequence[Label | None], judge_ids: Sequence[str]
) -> Agreement:
    """A jury row that is n/a because the jury decided none of the labelled items says why: the judges split
    (a split jury has no label of its own; the run's label on such an escalated check is only the first
    judge's, provisional until a person decides), or no judge decided."""
    if row.accuracy.value is not None or row.accuracy.n or not row.n_rater_undecided:
        return row
    undecided = [item for item, t in zip(items, truth, strict=True) if t is not None and item.judges.get(JURY) is None]
    split = sum(any(item.judges.get(j) is not None for j in judge_ids) for item in undecided)
    parts = []
    unscored = len(undecided) - split
    if split:
        parts.append(f"the judges split on {'all ' if not unscored else ''}{split} labelled item"
                     f"{'s' * (split != 1)}: a split jury has no label (a run's label there is the first judge's, "
                     "provisional until reviewed)")
    if unscored:
        parts.append(f"no judge decided {'all ' if not split else ''}{unscored} labelled item{'s' * (unscored != 1)}")
    reason = "; ".join(parts)
    return row.model_copy(update={
        "accuracy": row.accuracy.model_copy(update={"na_reason": reason}),
        "kappa": row.kappa.model_copy(update={"na_reason": reason}),
    })


def _references(items: Sequence[CalibrationItem], annotators: Sequence[str]) -> dict[str, list[Label | None]]:
    references = {a: [item.human.get(a) for item in items] for a in annotators}
    if len(annotators) > 1:
        consensus = []
        for item in items:
            given = {item.human[a] for a in annotators if a in item.human}
            consensus.append(given.pop() if len(given) == 1 else None)
        references[CONSENSUS] = consensus
    return references


def _number_references(items: Sequence[CalibrationItem], annotators: Sequence[str]) -> dict[str, list[float | None]]:
    references: dict[str, list[float | None]] = {a: [item.human_numbers.get(a) for item in items] for a in annotators}
    if len(annotators) > 1:
        references["annotators' mean"] = [
            mean(item.human_numbers.values()) if item.human_numbers else None for item in items
        ]
    return references


def calibrate_kind(
    kind: CheckKind, items: Sequence[CalibrationItem], judge_ids: Sequence[str], *, seed: int = 0,
    n_resamples: int = 1000,
) -> KindCalibration:
    annotators = sorted({a for item in items for a in (*item.human, *item.human_numbers)})
    has_jury = any(JURY in item.judges or JURY in item.judge_numbers for item in items)
    raters = [*judge_ids, *([JURY] if has_jury else [])]
    labels = kind.labels
    options = {"seed": seed, "n_resamples": n_resamples}
    agreements = []
    if kind is not CheckKind.DIMENSION_SCORE:
        for reference, truth in _references(items, annotators).items():
            for rater in raters:
                rated = [item.judges.get(rater) for item in items]
                row = agreement(rater, reference, rated, truth, labels, **options)
                if rater == JURY:
                    row = _explain_undecided_jury(row, items, truth, judge_ids)
                agreements.append(row)
    ceiling = [
        agreement(a, b, [item.human.get(a) for item in items], [item.human.get(b) for item in items], labels,
                  **options)
        for a, b in itertools.combinations(annotators, 2)
    ] if kind is not CheckKind.DIMENSION_SCORE else []
    complete = [item for item in items if all(item.judges.get(j) is not None for j in judge_ids)]
    if len(judge_ids) < 2:
        fleiss = MetricValue(name="fleiss_kappa", value=None, na_reason="needs at least two judges")
    elif kind is CheckKind.DIMENSION_SCORE:
        fleiss = MetricValue(name="fleiss_kappa", value=None, na_reason="scores: see the correlations")
    else:
        table = category_counts([[item.judges[j] for j in judge_ids] for item in complete], labels)
        fleiss = fleiss_kappa(table).model_copy(update={"n_unscored": len(items) - len(complete)})
    correlations = []
    for reference, truth_numbers in _number_references(items, annotators).items():
        for rater in raters:
            rated_numbers = [item.judge_numbers.get(rater) for item in items]
            pairs = [(t, r) for t, r in zip(truth_numbers, rated_numbers, strict=True)
                     if t is not None and r is not None]
            if not pairs:
                continue
            correlations.append(Correlation(
                rater=rater, reference=reference, pearson=pearson(rated_numbers, truth_numbers),
                spearman=spearman(rated_numbers, truth_numbers),
                spearman_ci=bootstrap_ci(_statistic(spearman), pairs, **options),
            ))
    return KindCalibration(kind=kind, n_items=len(items), annotators=tuple(annotators), raters=tuple(raters),
                           agreements=tuple(agreements), ceiling=tuple(ceiling), fleiss_judges=fleiss,
                           correlations=tuple(correlations))


def calibrate(
    items: Sequence[CalibrationItem], judge_ids: Sequence[str], *, seed: int = 0, n_resamples: int = 1000
) -> list[KindCalibration]:
    """One report per check kind present among the items."""
    kinds = list(dict.fromkeys(item.kind for item in items))
    return [
        calibrate_kind(kind, [i for i in items if i.kind is kind], judge_ids, seed=seed, n_resamples=n_resamples)
        for kind in kinds
    ]


# --------------------------------------------------------------------------- the jury's decision


def jury_label(kind: CheckKind, labels: Sequence[Label | None]) -> Label | None:
    """Pairwise: the argmax of the vote shares, a shared maximum being Tie (seed 001's hard score).
    Binary: the majority; a split jury is undecided (None)."""
    decided = [label for label in labels if label is not None]
    if not decided:
        return None
    if kind is CheckKind.PAIRWISE:
        shares = vote_probabilities(decided)
        best = max(shares.of(label) for label in CheckKind.PAIRWISE.labels)  # type: ignore[type-var]
        leaders = [label for label in CheckKind.PAIRWISE.labels if shares.of(label) == best]
        return leaders[0] if len(leaders) == 1 else Label.TIE
    counts = Counter(decided).most_common()
    return counts[0][0] if len(counts) == 1 or counts[0][1] > counts[1][1] else None


# --------------------------------------------------------------------------- sources of items


class HumanLabel(BaseModel):
    """One line of a labels file: a person's label (or 0-10 score) for a stored check."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    check_id: str = Field(min_length=1)
    label: Label | None = None
    score: float | None = Field(default=None, strict=True, allow_inf_nan=False)
    annotator: str = Field(default="human", min_length=1)


def _value_text(label: HumanLabel) -> str:
    return f"label '{label.label}'" if label.label is not None else f"score {label.score:g}"


def _kind_problems(label: HumanLabel, kind: CheckKind) -> list[tuple[str, str]]:
    """(field, problem) for a label that does not fit its check's kind (the review desk's rule)."""
    problems = []
    if kind is CheckKind.DIMENSION_SCORE:
        low, high = SCORE_RANGE
        if label.label is not None:
            problems.append(("label", f"{kind} checks take a {low:g}-{high:g} 'score', not a 'label'"))
        if label.score is not None and not low <= label.score <= high:
            problems.append(("score", f"must be between {low:g} and {high:g} for {kind} checks, "
                                      f"got {label.score:g}"))
        return problems
    allowed = ", ".join(kind.labels)
    if label.score is not None:
        problems.append(("score", f"{kind} checks take a 'label' ({allowed}), not a 'score'"))
    if label.label is not None and label.label not in kind.labels:
        problems.append(("label", f"must be one of {allowed} for {kind} checks, got '{label.label}'"))
    return problems


def load_labels(path: Path, store: RecordStore | None = None) -> list[HumanLabel]:
    """A labels file: JSONL of {check_id, label | score, annotator?}. Every problem of every line is reported
    at once (DatasetErrors: file, line, field); a file with a bad line gives no labels.

    Besides the fields themselves: the same check labelled twice by one annotator is refused unless both
    lines say the same (then it counts once); with a store, every check must be in it and each label must fit
    its check's kind (yes/no for binary checks, A/B/Tie for pairwise, a 0-10 score for dimension scores)."""
    read: list[tuple[int, HumanLabel]] = []

    def check(number: int, label: HumanLabel) -> tuple[str, str] | None:
        if label.label is None and label.score is None:
            return "label", "is missing: give a 'label' (" + ", ".join(Label) + ") or a 0-10 'score'"
        read.append((number, label))
        return None

    path = Path(path)
    errors: list[DatasetError] = []
    try:
        read_jsonl_models(path, HumanLabel, check)
    except DatasetErrors as error:
        if any(e.line is None for e in error.errors):  # the whole file (unreadable, empty)
            raise
        errors.extend(error.errors)
    kinds = ({c.id: c.kind for c in store.get_checks([label.check_id for _, label in read])}
             if store is not None else None)
    first: dict[tuple[str, str], tuple[int, HumanLabel]] = {}
    labels = []
    for number, label in read:
        problems: list[tuple[str, str]] = []
        if kinds is not None:
            kind = kinds.get(label.check_id)
            if kind is None:
                problems.append(("check_id", f"no check '{label.check_id}' in the store (check ids: "
                                             f"{CHECK_IDS_HINT})"))
            else:
                problems.extend(_kind_problems(label, kind))
        key = (label.check_id, label.annotator)
        earlier = first.setdefault(key, (number, label))
        repeated = earlier[0] != number
        if repeated and (earlier[1].label, earlier[1].score) != (label.label, label.score):
            problems.append(("check_id", f"labelled again by annotator '{label.annotator}' with "
                                         f"{_value_text(label)}, after {_value_text(earlier[1])} on line "
                                         f"{earlier[0]}: keep one label per check and annotator"))
        errors.extend(DatasetError(path, message, line=number, field=name) for name, message in problems)
        if not repeated:  # an identical repeat counts once
            labels.append(label)
    if errors:
        raise DatasetErrors(sorted(errors, key=lambda e: e.line or 0))
    return labels


def review_labels(store: RecordStore, run_id: str) -> list[HumanLabel]:
    """Every deciding review of the run (accept or override; skips decide nothing) as a calibration label."""
    return [
        HumanLabel(check_id=r.check_id, label=r.label, score=r.score, annotator=r.reviewer)
        for r in store.latest_reviews(run_id).values()
        if r.action is not ReviewAction.SKIP and (r.label is not None or r.score is not None)
    ]


def items_from_store(
    store: RecordStore, labels: Sequence[HumanLabel], judge_ids: Sequence[str] | None = None
) -> tuple[list[CalibrationItem], list[str]]:
    """Items for the labelled checks, with the stored verdicts of the judges (all judges found, or those
    given); returns the items and the judge ids."""
    by_check: dict[str, list[HumanLabel]] = {}
    for label in labels:
        by_check.setdefault(label.check_id, []).append(label)
    checks = store.get_checks(list(by_check))
    unknown = [i for i in by_check if i not in {c.id for c in checks}]
    if unknown:  # a label that silently vanished would shrink n without a word
        raise ValueError(f"{sum(len(by_check[i]) for i in unknown)} labels name checks not in the store "
                         f"(first: {unknown[0]}; check ids: {CHECK_IDS_HINT})")
    verdicts = store.get_verdicts([c.id for c in checks])
    found = list(dict.fromkeys(v.judge_id for v in verdicts))
    judges = list(judge_ids) if judge_ids else found
    decisions = {(v.check_id, v.judge_id): v for v in verdicts}
    items = []
    for check in checks:
        own = {j: decisions.get((check.id, j)) for j in judges}
        if check.kind is CheckKind.DIMENSION_SCORE:
            numbers: dict[str, float | None] = {j: v.score if v and v.scored else None for j, v in own.items()}
            scored = [n for n in numbers.values() if n is not None]
            if len(judges) > 1:
                numbers[JURY] = mean(scored) if scored else None
            items.append(CalibrationItem(
                item_id=check.id, kind=check.kind, human={}, judges={},
                human_numbers={h.annotator: h.score for h in by_check[check.id] if h.score is not None},
                judge_numbers=numbers,
            ))
            continue
        judged: dict[str, Label | None] = {j: v.label if v and v.scored else None for j, v in own.items()}
        if len(judges) > 1:
            judged[JURY] = jury_label(check.kind, list(judged.values()))
        human = {h.annotator: h.label for h in by_check[check.id] if h.label is not None}
        items.append(CalibrationItem(item_id=check.id, kind=check.kind, human=human, judges=judged,
                                     **_pairwise_numbers(check.kind, human, judged)))
    return items, judges


def _pairwise_numbers(kind: CheckKind, human: Mapping[str, Label], judged: Mapping[str, Label | None]) -> dict:
    if kind is not CheckKind.PAIRWISE:
        return {}
    return {"human_numbers": {a: _PREFERENCE[label] for a, label in human.items()},
            "judge_numbers": {j: None if label is None else _PREFERENCE[label] for j, label in judged.items()}}


# --------------------------------------------------------------------------- RAGChecker worked example


MODEL1, MODEL2 = "model1", "model2"


def annotator_name(index: int) -> str:
    return f"annotator {index + 1}"


async def judge_ragchecker(
    pairs: Sequence[RagCheckerPair], judges: Sequence[Judge], store: RecordStore, run_id: str,
    aspects: Sequence[HumanAspect] = (HumanAspect.OVERALL,),
) -> tuple[dict[HumanAspect, list[CalibrationItem]], tuple[QuestionOutcome, ...]]:
    """Judge every pair in both orders (model1 shown as A first) and pair the decisions with the humans'
    labels of each aspect (overall, correctness, completeness): negative = model1 (A) better, positive =
    model2 (B) better, 0 = Tie. The pairs are judged once; only the human reference differs per aspect."""
    questions = [p.to_sample() for p in pairs]
    sets = {
        MODEL1: AnswerSet(MODEL1, {p.sample_id: Sample(id=p.sample_id, question=p.query, answer=p.model1.response)
                                   for p in pairs}),
        MODEL2: AnswerSet(MODEL2, {p.sample_id: Sample(id=p.sample_id, question=p.query, answer=p.model2.response)
                                   for p in pairs}),
    }
    context = MatchContext(judges=judges, store=store, answer_sets=sets, questions=questions, run_id=run_id)
    state = await build_match_graph().ainvoke({"system_a": MODEL1, "system_b": MODEL2}, context=context)
    items: dict[HumanAspect, list[CalibrationItem]] = {aspect: [] for aspect in aspects}
    for pair, outcome in zip(pairs, state["outcomes"], strict=True):
        judged: dict[str, Label | None] = {d.judge_id: d.label for d in outcome.decisions}
        numbers: dict[str, float | None] = {j: None if x is None else _PREFERENCE[x] for j, x in judged.items()}
        if len(judges) > 1:
            judged[JURY] = jury_label(CheckKind.PAIRWISE, [d.label for d in outcome.decisions])
            p = outcome.probabilities
            numbers[JURY] = None if p.p_a is None or p.p_b is None else p.p_b - p.p_a
        for aspect in aspects:
            items[aspect].append(CalibrationItem(
                item_id=pair.sample_id, kind=CheckKind.PAIRWISE,
                human={annotator_name(i): label_from_human_score(a.score(aspect))
                       for i, a in enumerate(pair.annotations)},
                judges=judged,
                human_numbers={annotator_name(i): float(a.score(aspect)) for i, a in enumerate(pair.annotations)},
                judge_numbers=numbers,
            ))
    return items, state["outcomes"]
