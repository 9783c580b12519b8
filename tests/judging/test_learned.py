"""The stacked judge applies stored coefficients with numpy: the model round-trips through JSON with the same
probabilities, hand-checked on one point, and a model of other features is refused."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ragcourt.judging.features import FEATURES, FEATURES_VERSION
from ragcourt.judging.learned import LearnedJudge, probabilities_yes
from ragcourt.schema import NORMAL, Check, CheckKind, Label, VerdictStatus
from ragcourt.schema.stacking import StackedModel

N = len(FEATURES)


def model(**changes: object) -> StackedModel:
    fields: dict[str, object] = dict(
        kind=CheckKind.CLAIM_SUPPORTED, features=tuple(str(f) for f in FEATURES), features_version=FEATURES_VERSION,
        mean=tuple(0.1 * i for i in range(N)), scale=tuple(1.0 + 0.5 * i for i in range(N)),
        coefficients=tuple((-1) ** i * 0.3 * (i + 1) for i in range(N)), intercept=-0.25, regularisation=1.0,
        labels="test", data_sha256="0" * 64, n_positive=30, n_negative=30, folds=5, in_sample_auroc=0.9,
        in_sample_kappa=0.6, cross_validated_auroc=0.8, cross_validated_kappa=0.5)
    return StackedModel.model_validate(fields | changes)


def letters(texts: list[str]) -> np.ndarray:
    return np.array([[t.lower().count(chr(c)) for c in range(ord("a"), ord("z") + 1)] for t in texts], dtype=float)


def test_probability_by_hand_at_the_mean_and_one_scale_away() -> None:
    stored = model()
    at_mean = np.asarray(stored.mean)
    assert probabilities_yes(stored, at_mean)[0] == pytest.approx(1 / (1 + math.exp(0.25)))
    one_up = at_mean.copy()
    one_up[0] += stored.scale[0]  # standardised value 1 on the first feature
    assert probabilities_yes(stored, one_up)[0] == pytest.approx(1 / (1 + math.exp(-(0.3 - 0.25))))


def test_json_round_trip_gives_the_same_probabilities() -> None:
    stored = model()
    again = StackedModel.model_validate_json(stored.model_dump_json())
    assert again == stored
    rows = np.random.default_rng(0).normal(size=(20, N))
    assert np.array_equal(probabilities_yes(again, rows), probabilities_yes(stored, rows))


def test_model_of_other_features_is_refused() -> None:
    with pytest.raises(ValueError, match="fit it again"):
        LearnedJudge({CheckKind.CLAIM_SUPPORTED: model(features_version=FEATURES_VERSION + 1)}, letters)
    with pytest.raises(ValueError, match="one value per feature"):
        model(mean=(0.0,))


async def test_judge_decides_its_kind_and_leaves_others_unscored() -> None:
    judge = LearnedJudge({CheckKind.CLAIM_SUPPORTED: model()}, letters)
    check = Check(kind=CheckKind.CLAIM_SUPPORTED, sample_id="s", condition=NORMAL, subject_id="c",
                  subject_text="Paris hosted the 1900 Olympics.", target_id="e",
                  target_text="The Olympics were held in Paris in 1900.", question="")
    [verdict] = await judge.judge(CheckKind.CLAIM_SUPPORTED, [check])
    assert verdict.probabilities is not None
    p = verdict.probabilities[Label.YES]
    assert verdict.label is (Label.YES if p >= 0.5 else Label.NO)
    [other] = await judge.judge(CheckKind.SUBQUERY_IN_CHUNK, [check])
    assert other.status is VerdictStatus.UNSCORED
