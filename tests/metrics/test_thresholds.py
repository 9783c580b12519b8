"""Thresholds learned from labels (metrics.thresholds): the cut on a judge's P(yes) that maximises balanced
accuracy or kappa, and the cross-validated figure of a learned cut on held-out items."""

import pytest

from ragcourt.metrics.dice import DecisionProbabilities, ProbabilitySource
from ragcourt.metrics.thresholds import (
    candidates,
    cross_validated,
    cross_validated_margin_labels,
    fit_threshold,
    fit_tie_margin,
    stratified_folds,
)
from ragcourt.schema import Label
from ragcourt.schema.calibration import ThresholdObjective

BA = ThresholdObjective.BALANCED_ACCURACY


def test_the_candidates_are_midpoints_and_the_two_ends():
    assert candidates([0.2, 0.6, 0.2, 0.4]) == pytest.approx([0.2 - 1e-6, 0.3, 0.5, 0.6 + 1e-6])


def test_a_separable_set_gets_the_cut_between_the_classes():
    # negatives score 0.1-0.3, positives 0.35-0.6: a perfect cut anywhere in (0.3, 0.35), the midpoint 0.325
    scores = [0.1, 0.2, 0.3, 0.35, 0.5, 0.6]
    truth = [False, False, False, True, True, True]
    fit = fit_threshold(scores, truth, BA)
    assert fit.threshold == pytest.approx(0.325)
    assert fit.value.value == 1.0
    kappa = fit_threshold(scores, truth, ThresholdObjective.KAPPA)
    assert kappa.threshold == pytest.approx(0.325) and kappa.value.value == 1.0


def test_among_equal_cuts_the_one_nearest_one_half_wins():
    # every cut between 0.2 and 0.8 separates the classes perfectly; candidates 0.5 (between 0.2 and 0.8)
    scores = [0.1, 0.2, 0.8, 0.9]
    assert fit_threshold(scores, [False, False, True, True], BA).threshold == pytest.approx(0.5)


def test_an_unbalanced_set_is_cut_for_balanced_accuracy_not_accuracy():
    # one negative (0.7) among nine positives: always-yes has accuracy 0.9 but balanced accuracy 0.5
    scores = [0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.92, 0.94, 0.95]
    truth = [True, True, False, True, True, True, True, True, True, True]
    fit = fit_threshold(scores, truth, BA)
    # cut 0.725: yes for the 7 positives above it (recall 7/9), no for the negative (recall 1): BA = 8/9
    assert fit.threshold == pytest.approx(0.725)
    assert fit.value.value == pytest.approx((7 / 9 + 1) / 2)


def test_folds_are_stratified_disjoint_and_cover_every_item():
    truth = [True] * 10 + [False] * 5
    folds = stratified_folds(truth, 5, seed=3)
    assert sorted(i for fold in folds for i in fold) == list(range(15))
    assert [sum(truth[i] for i in fold) for fold in folds] == [2] * 5


def test_cross_validation_of_a_separable_set_is_perfect_and_needs_k_per_class():
    # a gap between the classes (0.30 to 0.70): every training fold's cut falls inside it
    scores = [i / 50 for i in range(16)] + [0.7 + i / 50 for i in range(14)]
    truth = [s >= 0.5 for s in scores]
    value = cross_validated(scores, truth, BA, k=5, seed=0)
    assert value.value == 1.0 and value.name == "cv_balanced_accuracy" and value.n == 30
    small = cross_validated(scores[:18], truth[:18], BA, k=5)  # two positives only
    assert small.value is None and "at least 5 items of each class" in (small.na_reason or "")


def test_cross_validation_of_scores_that_carry_no_signal_is_about_chance():
    import random

    rng = random.Random(1)
    truth = [rng.random() < 0.5 for _ in range(400)]
    scores = [rng.random() for _ in truth]
    value = cross_validated(scores, truth, BA, k=5, seed=0)
    in_sample = fit_threshold(scores, truth, BA).value.value
    assert value.value is not None and in_sample is not None
    assert abs(value.value - 0.5) < 0.08 and value.value < in_sample  # in-sample is optimistic


# --------------------------------------------------------------------------- the pairwise jury's tie margin


def _p(p_a: float, p_b: float, p_tie: float) -> DecisionProbabilities:
    return DecisionProbabilities(p_a=p_a, p_b=p_b, p_tie=p_tie, source=ProbabilitySource.VOTES)


def test_the_tie_margin_is_the_smallest_best_cut_on_p_b_minus_p_a():
    # |P_B - P_A|: 1, 0.5, 0.5, 0.2, 0. Humans: A, Tie, Tie, Tie, Tie. Candidates 0, 0.1, 0.35, 0.75, 1+.
    # margin 0: A, A, B, B, Tie (1 of 5 right); 0.35: A, A, B, Tie, Tie; 0.75: A, Tie, Tie, Tie, Tie (all right);
    # above 1 every pair is Tie (kappa n/a: the jury gives one label). Kappa 1 at 0.75 only.
    probabilities = [_p(1, 0, 0), _p(0.5, 0, 0.5), _p(0, 0.5, 0.5), _p(0.3, 0.5, 0.2), _p(0.5, 0.5, 0)]
    truth = [Label.A, Label.TIE, Label.TIE, Label.TIE, Label.TIE]
    fit = fit_tie_margin(probabilities, truth, ThresholdObjective.KAPPA)
    assert fit.threshold == pytest.approx(0.75) and fit.value.value == pytest.approx(1.0)
    # when margin 0 is already as good, it stays (the rule without a learned margin)
    assert fit_tie_margin(probabilities[:1], truth[:1], BA).threshold == 0.0


def test_the_cross_validated_margin_labels_each_fold_with_a_margin_fit_without_it():
    # 4 A pairs at |lead| 1 and 4 Tie pairs at 0.5 (one judge A, one Tie): every training fold learns a margin
    # between 0.5 and 1, so every held-out pair is labelled as the humans did
    probabilities = [_p(1, 0, 0)] * 4 + [_p(0.5, 0, 0.5)] * 4
    truth = [Label.A] * 4 + [Label.TIE] * 4
    assert cross_validated_margin_labels(probabilities, truth, BA, k=2) == truth
    # fewer items of a label than folds: a reason, no figure
    reason = cross_validated_margin_labels(probabilities[:5], truth[:5], BA, k=2)
    assert reason == "2-fold cross-validation needs at least 2 items of each label, got A 4, Tie 1"
