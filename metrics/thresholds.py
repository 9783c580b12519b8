"""Thresholds learned from labels: the cut on a judge's score (its P(yes)) that best reproduces binary human
labels, and a k-fold cross-validated figure of how well such a learned cut does on items it was not fit on.

A score s decides yes when s >= threshold. The candidates are the midpoints between consecutive distinct
scores, plus one below the lowest (everything yes) and one above the highest (everything no), so the fitted
cut does not sit on a training score. Among equally good candidates the one nearest 0.5 wins: 0.5 is where a
judge's own rule decides (judging.baseline maps a rule's threshold to P(yes) 0.5; an LLM's argmax), so a tie
keeps the judge's behaviour rather than an arbitrary end of the range.

The cross-validated figure pools the held-out decisions of every fold and computes the objective once over
them (stratified folds, seeded), which stays defined on small sets where a per-fold mean would not.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragcourt.metrics.agreement import balanced_accuracy, cohens_kappa
from ragcourt.metrics.dice import DecisionProbabilities, jury_label
from ragcourt.metrics.values import not_available
from ragcourt.schema import Label, MetricValue
from ragcourt.schema.calibration import ThresholdObjective
from ragcourt.schema.config import PairwiseJury

_OBJECTIVES: dict[ThresholdObjective, Callable[[Sequence[bool], Sequence[bool]], MetricValue]] = {
    ThresholdObjective.BALANCED_ACCURACY: balanced_accuracy,
    ThresholdObjective.KAPPA: cohens_kappa,
}
_EDGE = 1e-6  # how far outside the scores the all-yes / all-no candidates lie


def objective_value(objective: ThresholdObjective, decided: Sequence[Any], truth: Sequence[Any]) -> MetricValue:
    return _OBJECTIVES[objective](decided, truth)


@dataclass(frozen=True)
class ThresholdFit:
    threshold: float
    value: MetricValue  # the objective at the threshold on the items it was fit on (in-sample)


def candidates(scores: Sequence[float]) -> list[float]:
    distinct = sorted(set(scores))
    middles = [(a + b) / 2 for a, b in zip(distinct, distinct[1:], strict=False)]
    return [distinct[0] - _EDGE, *middles, distinct[-1] + _EDGE]


def fit_threshold(scores: Sequence[float], truth: Sequence[bool], objective: ThresholdObjective) -> ThresholdFit:
    """The threshold maximising `objective` of (score >= threshold) against `truth`. ValueError without items
    or when the lengths differ; a set of one class gives the objective's own n/a (kappa) or its value."""
    if len(scores) != len(truth):
        raise ValueError(f"scores and labels differ in length: {len(scores)} vs {len(truth)}")
    if not scores:
        raise ValueError("a threshold needs at least one scored, labelled item")
    best: tuple[float, float, float] | None = None  # (value, -distance to 0.5, threshold)
    best_value: MetricValue | None = None
    for threshold in candidates(scores):
        value = objective_value(objective, [s >= threshold for s in scores], truth)
        if value.value is None:
            continue
        key = (value.value, -abs(threshold - 0.5), threshold)
        if best is None or key > best:
            best, best_value = key, value
    if best is None or best_value is None:
        only = objective_value(objective, [s >= 0.5 for s in scores], truth)
        return ThresholdFit(threshold=0.5, value=only)
    return ThresholdFit(threshold=best[2], value=best_value)


def stratified_folds(truth: Sequence[Any], k: int, seed: int) -> list[list[int]]:
    """k disjoint folds of item indices, each class dealt round-robin after a seeded shuffle (classes in
    descending order: yes before no, as the binary folds always were)."""
    rng = np.random.default_rng(seed)
    folds: list[list[int]] = [[] for _ in range(k)]
    dealt = 0
    for cls in sorted(set(truth), reverse=True):
        members = [i for i, t in enumerate(truth) if t is cls]
        for i in rng.permutation(len(members)):
            folds[dealt % k].append(members[int(i)])
            dealt += 1
    return [sorted(fold) for fold in folds]


def cross_validated(scores: Sequence[float], truth: Sequence[bool], objective: ThresholdObjective, *,
                    k: int = 5, seed: int = 0) -> MetricValue:
    """The objective of held-out decisions: each fold decided by the threshold fit on the other folds. n/a with
    fewer than k items of either class (a training fold would lack it)."""
    name = f"cv_{objective}"
    n_pos = sum(truth)
    n_neg = len(truth) - n_pos
    if k < 2:
        raise ValueError(f"cross-validation needs k >= 2 folds, got {k}")
    if min(n_pos, n_neg) < k:
        return not_available(name, f"{k}-fold cross-validation needs at least {k} items of each class, got "
                                   f"{n_pos} positive and {n_neg} negative", n=len(truth))
    decided: list[bool | None] = [None] * len(truth)
    for fold in stratified_folds(truth, k, seed):
        held = set(fold)
        train = [i for i in range(len(truth)) if i not in held]
        fit = fit_threshold([scores[i] for i in train], [truth[i] for i in train], objective)
        for i in fold:
            decided[i] = scores[i] >= fit.threshold
    value = objective_value(objective, [bool(d) for d in decided], truth)
    return value.model_copy(update={"name": name})


# --------------------------------------------------------------------------- the pairwise jury's tie margin


def margin_labels(probabilities: Sequence[DecisionProbabilities], margin: float) -> list[Label | None]:
    return [jury_label(p, PairwiseJury.MEAN_PROBABILITY, margin) for p in probabilities]


def fit_tie_margin(probabilities: Sequence[DecisionProbabilities], truth: Sequence[Label],
                   objective: ThresholdObjective) -> ThresholdFit:
    """The tie margin on P_B - P_A maximising `objective` of the mean_probability jury's labels against `truth`
    (A/B/Tie). Candidates: 0 (only an exact balance ties) and the midpoints between consecutive distinct |P_B -
    P_A|, and one above the largest (everything Tie); among equally good margins the smallest wins (0 is the
    rule without a learned margin). `threshold` of the fit is the margin."""
    if len(probabilities) != len(truth):
        raise ValueError(f"probabilities and labels differ in length: {len(probabilities)} vs {len(truth)}")
    leads = [abs(p.p_b - p.p_a) for p in probabilities if p.p_a is not None and p.p_b is not None]
    if not leads:
        raise ValueError("a tie margin needs at least one labelled item with the jury's probabilities")
    distinct = sorted(set(leads))
    margins = [0.0, *((a + b) / 2 for a, b in zip(distinct, distinct[1:], strict=False)), distinct[-1] + _EDGE]
    best: tuple[float, float] | None = None  # (value, -margin)
    best_value: MetricValue | None = None
    for margin in margins:
        value = objective_value(objective, margin_labels(probabilities, margin), truth)
        if value.value is not None and (best is None or (value.value, -margin) > best):
            best, best_value = (value.value, -margin), value
    if best is None or best_value is None:
        return ThresholdFit(threshold=0.0, value=objective_value(objective, margin_labels(probabilities, 0.0), truth))
    return ThresholdFit(threshold=-best[1], value=best_value)


def cross_validated_margin_labels(probabilities: Sequence[DecisionProbabilities], truth: Sequence[Label],
                                  objective: ThresholdObjective, *, k: int = 5,
                                  seed: int = 0) -> list[Label | None] | str:
    """The held-out labels of the mean_probability jury: each fold labelled with the margin fit on the other
    folds (stratified by the human label). A reason instead when a label present has fewer than k items."""
    if k < 2:
        raise ValueError(f"cross-validation needs k >= 2 folds, got {k}")
    counts = {label: sum(1 for t in truth if t is label) for label in set(truth)}
    if not counts or min(counts.values()) < k:
        return (f"{k}-fold cross-validation needs at least {k} items of each label, got "
                + ", ".join(f"{label} {n}" for label, n in sorted(counts.items())))
    decided: list[Label | None] = [None] * len(truth)
    for fold in stratified_folds(truth, k, seed):
        held = set(fold)
        train = [i for i in range(len(truth)) if i not in held]
        fit = fit_tie_margin([probabilities[i] for i in train], [truth[i] for i in train], objective)
        for i in fold:
            decided[i] = jury_label(probabilities[i], PairwiseJury.MEAN_PROBABILITY, fit.threshold)
    return decided
