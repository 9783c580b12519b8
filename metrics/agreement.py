"""Agreement between raters and between metrics and people.

Accuracy, balanced accuracy and Cohen's kappa (judge vs judge, judge vs person: seeds 001, 003), AUROC of a
judge's scores (its P(yes)) against binary labels, Fleiss' kappa
(several raters: seed 002 Table 2), Pearson and Spearman correlation (metric vs human scores:
seeds 000, 002), confusion matrices, and percentile bootstrap confidence intervals.

Pairs where either side is None (an unscored verdict) are left out and counted in `n_unscored`.
Undefined statistics (no pairs, a constant input, chance agreement of 1) are n/a with a reason.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from ragcourt.metrics.values import MetricName, not_available
from ragcourt.schema import MetricValue

L = TypeVar("L", bound=Hashable)
T = TypeVar("T")


def _pairs(a: Sequence[L | None], b: Sequence[L | None]) -> tuple[list[tuple[L, L]], int]:
    if len(a) != len(b):
        raise ValueError(f"the two sequences differ in length: {len(a)} vs {len(b)}")
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    return pairs, len(a) - len(pairs)


def accuracy(a: Sequence[L | None], b: Sequence[L | None]) -> MetricValue:
    """Share of items on which a and b give the same label. n/a when no item has both labels."""
    name = MetricName.ACCURACY.value
    pairs, skipped = _pairs(a, b)
    if not pairs:
        return not_available(name, "no item has both labels", n_unscored=skipped)
    return MetricValue(
        name=name, value=sum(x == y for x, y in pairs) / len(pairs), n=len(pairs), n_unscored=skipped
    )


def cohens_kappa(a: Sequence[L | None], b: Sequence[L | None]) -> MetricValue:
    """Cohen's kappa (p_o - p_e) / (1 - p_e), unweighted, as `sklearn.metrics.cohen_kappa_score`.

    p_e from the two raters' own marginals. n/a when no item has both labels, or when p_e = 1
    (both raters always give the same single label: agreement is certain by chance, kappa 0/0).
    """
    name = MetricName.COHENS_KAPPA.value
    pairs, skipped = _pairs(a, b)
    if not pairs:
        return not_available(name, "no item has both labels", n_unscored=skipped)
    n = len(pairs)
    # In counts, which are exact: kappa = (n * agreed - sum_l a_l b_l) / (n^2 - sum_l a_l b_l), a_l and b_l the
    # raters' counts of label l. In shares the sum's rounding followed the labels' order, and a kappa of 0 came
    # out as 0.000 or -0.000.
    agreed = sum(x == y for x, y in pairs)
    first, second = Counter(x for x, _ in pairs), Counter(y for _, y in pairs)
    by_chance = sum(count * second[label] for label, count in first.items())
    if by_chance == n * n:
        return not_available(
            name, "chance agreement is 1: both raters used one and the same label", n=n, n_unscored=skipped
        )
    return MetricValue(name=name, value=(n * agreed - by_chance) / (n * n - by_chance), n=n, n_unscored=skipped)


def balanced_accuracy(predicted: Sequence[L | None], truth: Sequence[L | None]) -> MetricValue:
    """The mean over the classes present in `truth` of the share of that class's items `predicted` got right
    (per-class recall), as `sklearn.metrics.balanced_accuracy_score`: a judge that always says "yes" scores
    0.5 on a set however unbalanced, where its accuracy is the share of yeses. n/a when no item has both."""
    name = MetricName.BALANCED_ACCURACY.value
    pairs, skipped = _pairs(predicted, truth)
    if not pairs:
        return not_available(name, "no item has both labels", n_unscored=skipped)
    classes = dict.fromkeys(t for _, t in pairs)
    recalls = [sum(p == c for p, t in pairs if t == c) / sum(t == c for _, t in pairs) for c in classes]
    return MetricValue(name=name, value=math.fsum(recalls) / len(recalls), n=len(pairs), n_unscored=skipped)


def auroc(scores: Sequence[float | None], positive: Sequence[bool | None]) -> MetricValue:
    """The area under the ROC curve of `scores` (higher: more likely positive) against binary labels, as
    `sklearn.metrics.roc_auc_score`: the probability that a random positive item scores above a random
    negative one, a tie counting one half (Mann-Whitney U / (n_pos n_neg)). It needs no threshold, so it
    measures how well a judge ranks, whatever rule turns its scores into labels. Items without a score (the
    judge gave no probability, or no verdict) or without a label are left out and counted in n_unscored.
    n/a when the labelled, scored items are all of one class."""
    name = MetricName.AUROC.value
    pairs, skipped = _pairs(scores, positive)
    if not pairs:
        return not_available(name, "no item has both a score and a label", n_unscored=skipped)
    n_pos = sum(1 for _, p in pairs if p)
    n_neg = len(pairs) - n_pos
    if not n_pos or not n_neg:
        return not_available(name, f"every one of the {len(pairs)} scored items is {'positive' if n_pos else 'negative'}:"
                             " ranking needs both classes", n=len(pairs), n_unscored=skipped)
    ranks = average_ranks([float(s) for s, _ in pairs])
    rank_sum = math.fsum(r for r, (_, p) in zip(ranks, pairs, strict=True) if p)
    u = rank_sum - n_pos * (n_pos + 1) / 2
    return MetricValue(name=name, value=u / (n_pos * n_neg), n=len(pairs), n_unscored=skipped)


def category_counts(ratings: Sequence[Sequence[L | None]], labels: Sequence[L]) -> list[list[int]]:
    """Items x raters labels -> items x categories counts (the input of `fleiss_kappa`); None is skipped."""
    index = {label: position for position, label in enumerate(labels)}
    table = []
    for item in ratings:
        row = [0] * len(labels)
        for rating in item:
            if rating is None:
                continue
            if rating not in index:
                raise ValueError(f"label {rating!r} is not among {list(labels)}")
            row[index[rating]] += 1
        table.append(row)
    return table


def fleiss_kappa(table: Sequence[Sequence[int]]) -> MetricValue:
    """Fleiss' kappa of an items x categories table of counts (each row sums to the raters per item).

    As `statsmodels.stats.inter_rater.fleiss_kappa(table, method="fleiss")`:
    P_i = (sum_j n_ij^2 - m) / (m (m - 1)), P_bar = mean P_i, p_j = sum_i n_ij / (N m),
    P_e = sum_j p_j^2, kappa = (P_bar - P_e) / (1 - P_e).
    Every item needs the same number m >= 2 of ratings (ValueError otherwise; drop or complete
    items with unscored raters first). n/a: no items; P_e = 1 (everyone used one category).
    """
    name = MetricName.FLEISS_KAPPA.value
    if not table:
        return not_available(name, "no items")
    counts = np.asarray(table, dtype=float)
    raters = counts.sum(axis=1)
    if np.any(counts < 0) or not np.all(raters == raters[0]):
        raise ValueError("every item needs the same number of non-negative ratings")
    m = raters[0]
    if m < 2:
        raise ValueError("Fleiss' kappa needs at least two ratings per item")
    n_items = counts.shape[0]
    per_item = ((counts**2).sum(axis=1) - m) / (m * (m - 1))
    p_bar = per_item.mean()
    p_e = float(((counts.sum(axis=0) / (n_items * m)) ** 2).sum())
    if math.isclose(p_e, 1.0):
        return not_available(name, "chance agreement is 1: every rating is in one category", n=n_items)
    return MetricValue(name=name, value=float((p_bar - p_e) / (1 - p_e)), n=n_items)


def pearson(x: Sequence[float | None], y: Sequence[float | None], name: str = MetricName.PEARSON.value, *,
            labels: tuple[str, str] | None = None) -> MetricValue:
    """Pearson's r over the pairs with both values. n/a: fewer than two pairs; a constant side.

    `labels` name x and y in the n/a reason (CuBE: "the RAG score", "the rank score"); without them the reason
    is the generic one. Sums are exact (fsum), so the same inputs give the same r in any order."""
    pairs, skipped = _pairs(x, y)
    values = [(float(a), float(b)) for a, b in pairs]
    n = len(values)
    if n < 2:
        reason = ("fewer than two pairs" if labels is None else
                  f"a correlation needs at least 2 samples (and variation): {n} sample(s) with both "
                  f"{labels[0]} and {labels[1]}")
        return not_available(name, reason, n=n, n_unscored=skipped)
    mean_x = math.fsum(a for a, _ in values) / n
    mean_y = math.fsum(b for _, b in values) / n
    sxy = math.fsum((a - mean_x) * (b - mean_y) for a, b in values)
    sxx = math.fsum((a - mean_x) ** 2 for a, _ in values)
    syy = math.fsum((b - mean_y) ** 2 for _, b in values)
    if sxx == 0.0 or syy == 0.0:
        reason = ("an input is constant: the correlation is undefined" if labels is None else
                  f"a correlation needs variation: {labels[0] if sxx == 0.0 else labels[1]} is constant (the same "
                  f"for all {n} samples)")
        return not_available(name, reason, n=n, n_unscored=skipped)
    r = sxy / math.sqrt(sxx * syy)
    return MetricValue(name=name, value=max(-1.0, min(1.0, r)), n=n, n_unscored=skipped)


def average_ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties sharing the average of the ranks they span (as scipy.stats.rankdata)."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for position in range(start, end + 1):
            ranks[order[position]] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def spearman(x: Sequence[float | None], y: Sequence[float | None]) -> MetricValue:
    """Spearman's rho: Pearson's r of the average ranks. n/a: fewer than two pairs; a constant side."""
    pairs, skipped = _pairs(x, y)
    ranks_a = average_ranks([float(a) for a, _ in pairs])
    ranks_b = average_ranks([float(b) for _, b in pairs])
    rho = pearson(ranks_a, ranks_b, MetricName.SPEARMAN.value)
    return rho.model_copy(update={"n_unscored": skipped})


def confusion_matrix(
    a: Sequence[L | None], b: Sequence[L | None], labels: Sequence[L]
) -> tuple[tuple[int, ...], ...]:
    """Counts with rows = labels of a, columns = labels of b, in `labels` order; None pairs skipped.

    A label outside `labels` is a ValueError (it would otherwise vanish silently).
    """
    index = {label: position for position, label in enumerate(labels)}
    pairs, _ = _pairs(a, b)
    matrix = [[0] * len(labels) for _ in labels]
    for x, y in pairs:
        if x not in index or y not in index:
            raise ValueError(f"label pair {(x, y)!r} is not within {list(labels)}")
        matrix[index[x]][index[y]] += 1
    return tuple(tuple(row) for row in matrix)


@dataclass(frozen=True)
class ConfidenceInterval:
    """A percentile bootstrap interval. low/high None (with na_reason) when it cannot be formed.

    n_resamples: resamples whose statistic was defined; n_undefined: resamples where it was None.
    """

    estimate: float | None
    low: float | None
    high: float | None
    alpha: float
    n_resamples: int
    n_undefined: int
    na_reason: str | None = None


def bootstrap_ci(
    statistic: Callable[[Sequence[T]], float | None],
    data: Sequence[T],
    *,
    seed: int,
    n_resamples: int = 1000,
    alpha: float = 0.05,
) -> ConfidenceInterval:
    """Percentile bootstrap: resample `data` with replacement, take the alpha/2 and 1 - alpha/2
    quantiles (numpy's linear interpolation) of the statistic.

    `statistic` maps a resample (a list of items, e.g. (a, b) pairs for kappa) to a float, or None
    when undefined on it; such resamples are dropped and counted in n_undefined. Deterministic for a
    given seed. n/a interval when data is empty or no resample gives a defined statistic.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if n_resamples <= 0:
        raise ValueError(f"n_resamples must be positive, got {n_resamples}")
    items = list(data)
    if not items:
        return ConfidenceInterval(None, None, None, alpha, 0, 0, na_reason="no data")
    estimate = statistic(items)
    rng = np.random.default_rng(seed)
    values: list[float] = []
    for _ in range(n_resamples):
        indices = rng.integers(0, len(items), size=len(items))
        value = statistic([items[i] for i in indices])
        if value is not None:
            values.append(value)
    undefined = n_resamples - len(values)
    if not values:
        return ConfidenceInterval(
            estimate,
            None,
            None,
            alpha,
            0,
            undefined,
            na_reason="the statistic is undefined on every resample",
        )
    low, high = np.quantile(values, [alpha / 2, 1 - alpha / 2])
    return ConfidenceInterval(estimate, float(low), float(high), alpha, len(values), undefined)
