"""Fitting the stacked judge: refused under 30 labels per class, and near-perfect held-out AUROC on separable data."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from ragcourt.judging.features import FEATURES
from ragcourt.judging.learned import probabilities_yes
from ragcourt.schema import CheckKind
from ragcourt.validity.stacking import MIN_PER_CLASS, TooFewLabelsError, fit_stacked

SHA = "a" * 64


def separable(n_per_class: int, seed: int = 0) -> tuple[np.ndarray, list[bool]]:
    """Noise in every feature but the first, which is the label plus a little noise."""
    rng = np.random.default_rng(seed)
    positive = [True] * n_per_class + [False] * n_per_class
    x = rng.normal(size=(2 * n_per_class, len(FEATURES)))
    x[:, 0] = np.asarray(positive, dtype=float) * 3 + rng.normal(scale=0.2, size=2 * n_per_class)
    return x, positive


def test_fit_is_refused_under_30_per_class() -> None:
    x, positive = separable(MIN_PER_CLASS)
    positive[0] = False  # 29 yes, 31 no
    with pytest.raises(TooFewLabelsError, match="29 yes and 31 no labels, and a fit needs at least 30 of each"):
        fit_stacked(x, positive, [str(i) for i in range(len(positive))], kind=CheckKind.CLAIM_SUPPORTED,
                    labels="test", data_sha256=SHA)


def test_separable_data_gives_cross_validated_auroc_near_one() -> None:
    x, positive = separable(40)
    groups = [f"q{i // 2}" for i in range(len(positive))]  # pairs of rows kept in one fold
    fitted = fit_stacked(x, positive, groups, kind=CheckKind.SUBQUERY_IN_CHUNK, labels="test", data_sha256=SHA)
    assert fitted.cross_validated_auroc is not None and fitted.cross_validated_auroc > 0.98
    assert fitted.cross_validated_kappa is not None and fitted.cross_validated_kappa > 0.9
    assert (fitted.n_positive, fitted.n_negative, fitted.folds) == (40, 40, 5)
    # the stored numbers alone (numpy, no scikit-learn) separate new items of the same kind
    fresh, truth = separable(20, seed=1)
    p = probabilities_yes(fitted, fresh)
    assert ((p >= 0.5) == np.asarray(truth)).mean() > 0.95


def test_without_scikit_learn_the_fit_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sklearn", None)  # import sklearn now raises ImportError
    x, positive = separable(MIN_PER_CLASS)
    with pytest.raises(RuntimeError, match=r"pip install 'ragcourt\[learn\]'"):
        fit_stacked(x, positive, [str(i) for i in range(len(positive))], kind=CheckKind.CLAIM_SUPPORTED,
                    labels="test", data_sha256=SHA)
