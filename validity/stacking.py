"""Fitting the stacked offline judge (judging.learned) from human labels: a logistic regression over the offline
judges' features (judging.features), its L2 strength chosen by k-fold cross-validation, stored as plain numbers
(schema.stacking.StackedModel).

Logistic regression alone, not gradient boosting: its model is a vector of coefficients that numpy applies in a
line, where boosted trees would need a tree format and an evaluator of our own to run without scikit-learn
(no pickle); with the few hundred labels these sets give, a linear model over nine features is also the one
less likely to overfit.

The cross-validated figures are of held-out decisions: each fold's items are decided by a model (standardisation
and the choice of C included) fit without them; the folds keep a sample's checks together (a HotpotQA question's
ten paragraphs), so no question is seen in training and scored in test. A fit is refused under MIN_PER_CLASS
labels of either class: the figures would be noise.

scikit-learn is needed here only (`pip install 'ragcourt[learn]'`); applying a model needs numpy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ragcourt.data.validity_sets import load_hotpotqa_paragraphs, load_wice
from ragcourt.judging.baseline import Embed
from ragcourt.judging.features import FEATURES, FEATURES_VERSION, FeatureExtractor
from ragcourt.judging.learned import logistic
from ragcourt.metrics.agreement import auroc, cohens_kappa
from ragcourt.schema import CheckKind, Label
from ragcourt.schema.stacking import StackedModel
from ragcourt.validity.measure import (
    HOTPOTQA_SUPPORTING,
    WICE_LENIENT,
    WICE_STRICT,
    LabelledCheck,
    Suite,
    file_sha256,
    hotpotqa_checks,
    wice_checks,
)

MIN_PER_CLASS = 30
C_GRID = (0.01, 0.1, 1.0, 10.0, 100.0)


class TooFewLabelsError(ValueError):
    """Fewer than MIN_PER_CLASS labels of a class."""


@dataclass(frozen=True)
class _Fit:
    mean: np.ndarray
    scale: np.ndarray
    coefficients: np.ndarray
    intercept: float
    c: float

    def p_yes(self, x: np.ndarray) -> np.ndarray:
        return logistic(x, self.mean, self.scale, self.coefficients, self.intercept)


def _sklearn() -> Any:
    try:
        from sklearn import linear_model, model_selection
    except ImportError:
        raise RuntimeError("fitting the stacked judge needs scikit-learn: pip install 'ragcourt[learn]' (applying "
                           "a fitted model does not)") from None
    return linear_model, model_selection


def _one_thread() -> Any:
    """scikit-learn's native thread pools limited to one thread: a fit makes about 150 tiny logistic regressions
    (nine features), for which OpenMP / BLAS threads cost more than they give. On this project's 2-core machine,
    with the other core busy: 37 ms a fit with 2 threads, 2 ms with 1; idle: the same wall time, 20 % less CPU."""
    from threadpoolctl import threadpool_limits  # a dependency of scikit-learn

    return threadpool_limits(limits=1)


def _folds(y: np.ndarray, groups: np.ndarray, k: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    _, model_selection = _sklearn()
    splitter = model_selection.StratifiedGroupKFold(n_splits=k, shuffle=True, random_state=seed)
    return list(splitter.split(np.zeros(len(y)), y, groups))


def _logistic(z: np.ndarray, y: np.ndarray, c: float) -> Any:
    linear_model, _ = _sklearn()
    return linear_model.LogisticRegression(C=c, class_weight="balanced", max_iter=1000).fit(z, y)


def _fit(x: np.ndarray, y: np.ndarray, groups: np.ndarray, k: int, seed: int) -> _Fit:
    """Standardise on `x`, choose C by mean k-fold AUROC (folds by group; a tie goes to the stronger
    regularisation, listed first), then fit on all of `x`."""
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0  # a constant feature (no numbers in any claim, say) carries no weight
    z = (x - mean) / scale
    folds = _folds(y, groups, k, seed)

    def held_out_auroc(c: float) -> float:
        areas = [auroc(_logistic(z[train], y[train], c).decision_function(z[test]).tolist(),
                       y[test].tolist()).value for train, test in folds]
        return float(np.mean([a for a in areas if a is not None]))

    best = max(C_GRID, key=held_out_auroc)
    final = _logistic(z, y, best)
    return _Fit(mean, scale, final.coef_[0].copy(), float(final.intercept_[0]), best)


def _figures(p: np.ndarray, y: np.ndarray) -> tuple[float | None, float | None]:
    truth = [Label.YES if v else Label.NO for v in y.tolist()]
    decided = [Label.YES if v >= 0.5 else Label.NO for v in p.tolist()]
    return auroc(p.tolist(), [bool(v) for v in y.tolist()]).value, cohens_kappa(decided, truth).value


def refusal(n_positive: int, n_negative: int, kind: CheckKind, labels: str) -> str | None:
    """Why a fit is refused (fewer than MIN_PER_CLASS of a class), None when it is not."""
    if min(n_positive, n_negative) >= MIN_PER_CLASS:
        return None
    return (f"the stacked judge of {kind} is not fit on '{labels}': {n_positive} yes and {n_negative} no labels, "
            f"and a fit needs at least {MIN_PER_CLASS} of each (its figures would be noise); label more items")


def fit_stacked(x: np.ndarray, positive: Sequence[bool], groups: Sequence[str], *, kind: CheckKind, labels: str,
                data_sha256: str, folds: int = 5, seed: int = 0) -> StackedModel:
    """The stacked model of `kind` fit on feature rows `x` (FEATURES order) and their labels, with in-sample and
    k-fold cross-validated AUROC and kappa (label yes at P(yes) >= 0.5). `groups`: the sample of each row, kept
    in one fold. TooFewLabelsError under MIN_PER_CLASS of a class."""
    y = np.asarray(positive, dtype=bool)
    g = np.asarray(groups)
    if x.shape != (len(y), len(FEATURES)) or len(g) != len(y):
        raise ValueError(f"need one row of {len(FEATURES)} features, one label and one group per item")
    n_positive, n_negative = int(y.sum()), int((~y).sum())
    reason = refusal(n_positive, n_negative, kind, labels)
    if reason is not None:
        raise TooFewLabelsError(reason)
    _sklearn()  # the install hint, before threadpoolctl (which comes with scikit-learn) is imported
    held_out = np.empty(len(y))
    with _one_thread():
        for train, test in _folds(y, g, folds, seed):
            held_out[test] = _fit(x[train], y[train], g[train], folds, seed).p_yes(x[test])
        model = _fit(x, y, g, folds, seed)
    in_auroc, in_kappa = _figures(model.p_yes(x), y)
    cv_auroc, cv_kappa = _figures(held_out, y)
    return StackedModel(
        kind=kind, features=tuple(str(f) for f in FEATURES), features_version=FEATURES_VERSION,
        mean=tuple(model.mean.tolist()), scale=tuple(model.scale.tolist()),
        coefficients=tuple(model.coefficients.tolist()), intercept=model.intercept, regularisation=model.c,
        labels=labels, data_sha256=data_sha256, n_positive=n_positive, n_negative=n_negative, folds=folds,
        in_sample_auroc=in_auroc, in_sample_kappa=in_kappa, cross_validated_auroc=cv_auroc,
        cross_validated_kappa=cv_kappa,
    )


def fit_labelled(labelled: Sequence[LabelledCheck], reference: str, extractor: FeatureExtractor, *,
                 data_sha256: str, folds: int = 5, seed: int = 0) -> tuple[list[StackedModel], list[str]]:
    """Per binary kind of a validity set's checks: the stacked model against `reference`, or why it is refused."""
    models, refused = [], []
    for kind in dict.fromkeys(entry.check.kind for entry in labelled):
        rows = [entry for entry in labelled if entry.check.kind is kind and reference in entry.labels]
        if not kind.is_binary or not rows:
            continue
        positive = [entry.labels[reference] is Label.YES for entry in rows]
        reason = refusal(sum(positive), len(positive) - sum(positive), kind, reference)
        if reason is not None:  # said before the features are computed: embedding them would be wasted
            refused.append(reason)
            continue
        x = extractor.matrix([(entry.check.subject_text, entry.check.target_text) for entry in rows])
        models.append(fit_stacked(x, positive, [entry.check.sample_id for entry in rows], kind=kind,
                                  labels=reference, data_sha256=data_sha256, folds=folds, seed=seed))
    return models, refused


def fit_suite_file(suite: Suite, path: Path, embed: Embed, *, reference: str | None = None, limit: int | None = None,
                   folds: int = 5, seed: int = 0) -> tuple[str, list[StackedModel], list[str]]:
    """`ragcourt calibrate --suite wice|hotpotqa --fit-stacked`: the labels' reference (default: the set's first,
    WiCE strict), the stacked models fit on the set's first `limit` items and the refusals."""
    allowed: tuple[str, ...]
    if suite is Suite.WICE:
        claims = load_wice(path)
        labelled, allowed = wice_checks(claims[:limit] if limit else claims), (WICE_STRICT, WICE_LENIENT)
    elif suite is Suite.HOTPOTQA:
        questions = load_hotpotqa_paragraphs(path)
        labelled, allowed = hotpotqa_checks(questions[:limit] if limit else questions), (HOTPOTQA_SUPPORTING,)
    else:
        raise ValueError("the stacked judge is fit on binary labels: --suite wice or hotpotqa (RAGChecker's are "
                         "pairwise)")
    chosen = reference or allowed[0]
    if chosen not in allowed:
        raise ValueError(f"--fit-on must name one of {', '.join(allowed)}, got '{reference}'")
    models, refused = fit_labelled(labelled, chosen, FeatureExtractor(embed), data_sha256=file_sha256(path),
                                   folds=folds, seed=seed)
    return chosen, models, refused
