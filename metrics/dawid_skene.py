"""Dawid-Skene (1979): each judge's confusion matrix and each item's posterior over the true class, learned from
the judges' labels alone by EM, semi-supervised where some items' classes are known (a person's review, a
human label): those items are clamped to their class in every E-step.

Initialisation is deterministic: every item starts at its vote shares (majority vote, ties shared evenly), so
the same labels give the same estimates, and classes keep their meaning (no label switching) as long as the
jury is better than chance on the whole.

Two confusion models (`Confusion`): `full`, the classic one, a free row per true class, and `one_coin`, one
accuracy per judge with its errors spread evenly over the other classes. For a jury of two or three judges on
binary checks the full model is at best just-identified: it has as many parameters (2 per judge and the
prior) as the label patterns have frequencies, so its maximum-likelihood estimate follows the sampling noise
of every pattern. Measured on simulated juries of 0.9 / 0.7 / 0.55 on 500 checks (seeds 1-7), the full
model put the 0.9 judge at 0.73-0.88, with a likelihood above the true parameters'. The one-coin model has
fewer parameters, but a 0.55 judge carries almost no agreement signal, so without labels it too puts the
0.9 judge anywhere in 0.70-0.93 (seeds 1-20); with 50 reviewed disagreements its mean estimates are within
0.05 (tests/metrics/test_dawid_skene.py). A run uses one-coin; `full` is for many judges or many labels.
The M-step adds one pseudo-count to every cell (Laplace smoothing, the posterior mean under uniform Dirichlet
priors): a class a judge never saw keeps a defined row, and no judge is ever estimated infallible.

A judge's accuracy is the expected share of its labels that are right under the posteriors; its interval is
the equal-tailed 95 % interval of Beta(1 + expected right, 1 + expected wrong): a posterior from the expected
counts, which treats the posteriors as known (it leaves out their own uncertainty, so it is narrow where
the items are few and the jury unsure).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np

INTERVAL_LEVEL = 0.95
_GRID = 4001  # points of the Beta quantile grid over mean +- 12 sd


class Confusion(StrEnum):
    FULL = "full"  # a free confusion row per true class
    ONE_COIN = "one_coin"  # one accuracy per judge, errors spread evenly over the other classes


@dataclass(frozen=True)
class JudgeEstimate:
    judge: Hashable
    # confusion[true][given]: P(the judge gives class `given` | the item's class is `true`), in `classes` order
    confusion: tuple[tuple[float, ...], ...]
    accuracy: float  # expected share of its labels that are right
    interval: tuple[float, float]  # 95 % Beta posterior interval of the accuracy (module docstring)
    n_labelled: int  # items it labelled


@dataclass(frozen=True)
class DawidSkene:
    classes: tuple[Hashable, ...]
    model: Confusion
    prior: tuple[float, ...]  # P(class), in `classes` order
    judges: tuple[JudgeEstimate, ...]
    posteriors: dict[Hashable, tuple[float, ...]]  # item -> P(class), in `classes` order
    iterations: int
    converged: bool

    def judge(self, judge: Hashable) -> JudgeEstimate:
        return next(j for j in self.judges if j.judge == judge)

    def decision(self, item: Hashable) -> Hashable | None:
        """The most probable class of the item; None on an exact tie (no class is more probable)."""
        row = self.posteriors[item]
        best = max(row)
        leaders = [c for c, p in zip(self.classes, row, strict=True) if p == best]
        return leaders[0] if len(leaders) == 1 else None


def fit_dawid_skene(
    labels: Mapping[Any, Mapping[Any, Hashable]],  # Any keys: a Mapping is invariant in them
    classes: Sequence[Hashable],
    known: Mapping[Any, Hashable] | None = None,
    *,
    confusion: Confusion = Confusion.ONE_COIN,
    max_iterations: int = 1000,
    tolerance: float = 1e-6,
) -> DawidSkene:
    """EM over `labels` (item -> judge -> class; a judge that did not score an item is simply absent).

    known: item -> class for items whose class is known; clamped (an item only known is included too).
    confusion: the model of a judge's errors (module docstring).
    Items no judge labelled and nobody knows get the class prior as posterior. Raises ValueError on a class
    outside `classes`.
    """
    classes = tuple(classes)
    if len(classes) < 2:
        raise ValueError("Dawid-Skene needs at least two classes")
    known = dict(known or {})
    index = {c: n for n, c in enumerate(classes)}
    items = list(dict.fromkeys([*labels, *known]))
    judges = list(dict.fromkeys(j for given in labels.values() for j in given))
    for item, given in labels.items():
        for judge, label in given.items():
            if label not in index:
                raise ValueError(f"item {item!r}, judge {judge!r}: class {label!r} is not one of {classes}")
    for item, label in known.items():
        if label not in index:
            raise ValueError(f"known item {item!r}: class {label!r} is not one of {classes}")
    n_items, n_judges, n_classes = len(items), len(judges), len(classes)
    judge_at = {j: n for n, j in enumerate(judges)}
    counts = np.zeros((n_items, n_judges, n_classes))  # counts[i, j, l]: judge j gave item i class l
    for i, item in enumerate(items):
        for judge, label in labels.get(item, {}).items():
            counts[i, judge_at[judge], index[label]] = 1.0
    clamp = np.zeros((n_items, n_classes))
    clamped = np.zeros(n_items, dtype=bool)
    for i, item in enumerate(items):
        if item in known:
            clamp[i, index[known[item]]], clamped[i] = 1.0, True
    votes = counts.sum(axis=1)
    totals = votes.sum(axis=1, keepdims=True)
    posterior = np.where(totals > 0, votes / np.where(totals > 0, totals, 1.0), 1.0 / n_classes)
    posterior[clamped] = clamp[clamped]
    converged, iterations = False, 0
    while iterations < max_iterations:
        iterations += 1
        prior, rates = _m_step(posterior, counts, confusion)
        # log P(class k) + sum over the judge's labels of log P(label | k)
        log_post = np.log(prior)[None, :] + np.einsum("ijl,jkl->ik", counts, np.log(rates))
        log_post -= log_post.max(axis=1, keepdims=True)
        updated = np.exp(log_post)
        updated /= updated.sum(axis=1, keepdims=True)
        updated[clamped] = clamp[clamped]
        change = float(np.abs(updated - posterior).max()) if n_items else 0.0
        posterior = updated
        if change < tolerance:
            converged = True
            break
    prior, rates = _m_step(posterior, counts, confusion)
    right = np.einsum("ijl,il->j", counts, posterior)  # expected labels that match the item's class
    given = counts.sum(axis=(0, 2))
    estimates = tuple(
        JudgeEstimate(
            judge=judge,
            confusion=tuple(tuple(float(p) for p in row) for row in rates[j]),
            accuracy=float(right[j] / given[j]) if given[j] else math.nan,
            interval=beta_interval(float(right[j]), float(given[j] - right[j])),
            n_labelled=int(given[j]),
        )
        for j, judge in enumerate(judges)
    )
    return DawidSkene(
        classes=classes, model=confusion, prior=tuple(float(p) for p in prior), judges=estimates,
        posteriors={item: tuple(float(p) for p in posterior[i]) for i, item in enumerate(items)},
        iterations=iterations, converged=converged,
    )


def _m_step(posterior: np.ndarray, counts: np.ndarray, confusion: Confusion) -> tuple[np.ndarray, np.ndarray]:
    """Class prior and rates[j, true, given] from the posteriors, with one pseudo-count per cell."""
    prior = posterior.sum(axis=0) + 1.0
    prior /= prior.sum()
    expected = np.einsum("ik,ijl->jkl", posterior, counts)
    if confusion is Confusion.FULL:
        expected += 1.0
        return prior, expected / expected.sum(axis=2, keepdims=True)
    n_classes = posterior.shape[1]
    right = np.trace(expected, axis1=1, axis2=2)
    accuracy = (right + 1.0) / (expected.sum(axis=(1, 2)) + 2.0)  # Beta(1, 1): one right, one wrong pseudo-label
    eye = np.eye(n_classes)[None, :, :]
    off = ((1.0 - accuracy) / (n_classes - 1))[:, None, None]
    return prior, eye * accuracy[:, None, None] + (1.0 - eye) * off


def beta_interval(right: float, wrong: float, level: float = INTERVAL_LEVEL) -> tuple[float, float]:
    """The equal-tailed `level` interval of Beta(1 + right, 1 + wrong), by its CDF on a grid (no scipy)."""
    a, b = 1.0 + right, 1.0 + wrong
    mean = a / (a + b)
    sd = math.sqrt(a * b / ((a + b) ** 2 * (a + b + 1.0)))
    grid = np.linspace(max(0.0, mean - 12 * sd), min(1.0, mean + 12 * sd), _GRID)
    inner = np.clip(grid, 1e-300, 1.0 - 1e-16)
    log_pdf = (a - 1.0) * np.log(inner) + (b - 1.0) * np.log1p(-inner)
    pdf = np.exp(log_pdf - log_pdf.max())
    cdf = np.concatenate([[0.0], np.cumsum((pdf[1:] + pdf[:-1]) / 2 * np.diff(grid))])
    cdf /= cdf[-1]
    tail = (1.0 - level) / 2
    return float(np.interp(tail, cdf, grid)), float(np.interp(1.0 - tail, cdf, grid))
