"""Agreement statistics against scikit-learn, statsmodels and scipy, plus hand-computed cases."""

import math
import random
import statistics

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score
from sklearn.metrics import confusion_matrix as sk_confusion_matrix
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from ragcourt.metrics.agreement import (
    accuracy,
    average_ranks,
    bootstrap_ci,
    category_counts,
    cohens_kappa,
    confusion_matrix,
    fleiss_kappa,
    pearson,
    spearman,
)

SEEDS = [0, 1, 2, 3, 4]
LABELS = ["A", "B", "Tie"]


def _labels(rng: random.Random, n: int) -> list[str]:
    return [rng.choice(LABELS) for _ in range(n)]


@pytest.mark.parametrize("seed", SEEDS)
def test_cohens_kappa_matches_sklearn(seed):
    rng = random.Random(seed)
    a = _labels(rng, 60)
    # b agrees with a 60 % of the time, so kappa is clearly away from 0
    b = [x if rng.random() < 0.6 else rng.choice(LABELS) for x in a]
    ours = cohens_kappa(a, b)
    assert ours.value == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
    assert ours.n == 60


def test_cohens_kappa_at_chance_is_exactly_zero_whatever_the_label_order():
    # observed 1/3 = expected 1/3: in shares the subtraction leaves a rounding error whose sign followed the
    # labels' order (a set's, so the hash seed's)
    a, b = ["A", "B", "Tie"] * 3, ["A"] * 3 + ["B"] * 3 + ["Tie"] * 3
    for order in (a, list(reversed(a))):
        value = cohens_kappa(order, b).value
        assert value == 0.0 and math.copysign(1.0, value) == 1.0


@pytest.mark.parametrize("seed", SEEDS)
def test_fleiss_kappa_matches_statsmodels(seed):
    rng = np.random.default_rng(seed)
    n_items, n_raters = 40, 5
    ratings = [[LABELS[rng.integers(0, 3)] for _ in range(n_raters)] for _ in range(n_items)]
    # let raters copy the first rater sometimes so there is agreement beyond chance
    for item in ratings:
        for r in range(1, n_raters):
            if rng.random() < 0.4:
                item[r] = item[0]
    table = category_counts(ratings, LABELS)
    assert fleiss_kappa(table).value == pytest.approx(
        sm_fleiss_kappa(np.asarray(table), method="fleiss"), abs=1e-12
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_correlations_match_scipy(seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=50)
    y = 0.5 * x + rng.normal(size=50)
    y_ties = np.round(y)  # many ties
    x_ties = rng.integers(0, 4, size=50).astype(float)
    assert pearson(x.tolist(), y.tolist()).value == pytest.approx(stats.pearsonr(x, y)[0], abs=1e-12)
    assert spearman(x.tolist(), y.tolist()).value == pytest.approx(stats.spearmanr(x, y)[0], abs=1e-12)
    assert spearman(x_ties.tolist(), y_ties.tolist()).value == pytest.approx(
        stats.spearmanr(x_ties, y_ties)[0], abs=1e-12
    )


def test_average_ranks_with_ties():
    assert average_ranks([10, 20, 20, 5, 20]) == [2.0, 4.0, 4.0, 1.0, 4.0]
    assert average_ranks([3.0, 1.0, 3.0]) == stats.rankdata([3.0, 1.0, 3.0]).tolist()


def test_perfect_agreement():
    a = ["yes", "no", "yes", "no"]
    assert accuracy(a, a).value == 1.0
    assert cohens_kappa(a, a).value == 1.0
    assert fleiss_kappa([[3, 0], [0, 3], [3, 0]]).value == pytest.approx(1.0)
    assert pearson([1, 2, 3], [2, 4, 6]).value == pytest.approx(1.0)
    assert spearman([1, 2, 3], [1, 8, 27]).value == pytest.approx(1.0)
    assert spearman([1, 2, 3], [3, 2, 1]).value == pytest.approx(-1.0)


def test_chance_agreement_hand_computed():
    # p_o = 0.5; marginals a: yes 0.5, b: yes 0.5 -> p_e = 0.5 -> kappa 0
    assert cohens_kappa(["yes", "yes", "no", "no"], ["yes", "no", "yes", "no"]).value == pytest.approx(0.0)
    # p_o = 0; p_e = 0.5 -> kappa -1
    assert cohens_kappa(["yes", "no"], ["no", "yes"]).value == pytest.approx(-1.0)
    # Fleiss, 2 items x 2 raters, each item split 1-1: P_i = 0, p = (0.5, 0.5), P_e = 0.5 -> -1
    assert fleiss_kappa([[1, 1], [1, 1]]).value == pytest.approx(-1.0)


def test_degenerate_inputs_are_na():
    same_label = cohens_kappa(["yes", "yes"], ["yes", "yes"])
    assert same_label.value is None and "chance agreement is 1" in same_label.na_reason
    assert fleiss_kappa([[3, 0], [3, 0]]).value is None
    assert fleiss_kappa([]).na_reason == "no items"
    constant = pearson([1, 1, 1], [1, 2, 3])
    assert constant.value is None and "constant" in constant.na_reason
    assert spearman([1, 2, 3], [5, 5, 5]).value is None
    assert pearson([1.0], [2.0]).na_reason == "fewer than two pairs"
    assert accuracy([], []).value is None
    with pytest.raises(ValueError):
        fleiss_kappa([[2, 0], [1, 0]])  # unequal raters per item
    with pytest.raises(ValueError):
        fleiss_kappa([[1, 0], [0, 1]])  # one rater per item
    with pytest.raises(ValueError):
        accuracy(["yes"], ["yes", "no"])


def test_unscored_pairs_are_left_out():
    a = ["yes", None, "no", "yes"]
    b = ["yes", "no", "no", None]
    value = accuracy(a, b)
    assert value.value == 1.0 and value.n == 2 and value.n_unscored == 2
    corr = pearson([1.0, None, 2.0, 3.0], [2.0, 5.0, 4.0, 6.0])
    assert corr.value == pytest.approx(1.0) and corr.n_unscored == 1
    assert category_counts([["A", None, "B"], ["B", "B", None]], ["A", "B"]) == [[1, 1], [0, 2]]


def test_confusion_matrix_matches_sklearn():
    rng = random.Random(7)
    a, b = _labels(rng, 30), _labels(rng, 30)
    ours = confusion_matrix(a, b, LABELS)
    assert [list(row) for row in ours] == sk_confusion_matrix(a, b, labels=LABELS).tolist()
    assert confusion_matrix(["A", None], ["B", "A"], ["A", "B"]) == ((0, 1), (0, 0))
    with pytest.raises(ValueError):
        confusion_matrix(["A"], ["C"], ["A", "B"])


def test_bootstrap_ci_is_deterministic_and_brackets_the_mean():
    data = [float(x) for x in range(1, 21)]
    first = bootstrap_ci(statistics.fmean, data, seed=3, n_resamples=500)
    second = bootstrap_ci(statistics.fmean, data, seed=3, n_resamples=500)
    assert first == second
    assert first.estimate == pytest.approx(10.5)
    assert first.low < 10.5 < first.high
    # the percentile interval of the mean is about mean ± 1.96 * sd / sqrt(n) = 10.5 ± 2.53
    assert first.low == pytest.approx(10.5 - 2.53, abs=0.6)
    assert first.high == pytest.approx(10.5 + 2.53, abs=0.6)
    assert first.n_resamples == 500 and first.n_undefined == 0


def test_bootstrap_ci_percentiles_match_numpy_resampling():
    data = [0.1, 0.4, 0.35, 0.8, 0.9]
    ci = bootstrap_ci(statistics.fmean, data, seed=11, n_resamples=200, alpha=0.1)
    rng = np.random.default_rng(11)
    means = [float(np.mean([data[i] for i in rng.integers(0, 5, size=5)])) for _ in range(200)]
    assert (ci.low, ci.high) == pytest.approx(tuple(np.quantile(means, [0.05, 0.95])))


def test_bootstrap_ci_with_undefined_statistic():
    pairs = [("yes", "yes"), ("no", "no"), ("yes", "no")]

    def kappa(sample):
        return cohens_kappa([p[0] for p in sample], [p[1] for p in sample]).value

    ci = bootstrap_ci(kappa, pairs, seed=0, n_resamples=300)
    assert ci.n_undefined > 0  # resamples of one repeated pair have chance agreement 1
    assert ci.n_resamples + ci.n_undefined == 300
    assert bootstrap_ci(lambda s: None, [1, 2], seed=0, n_resamples=5).na_reason
    assert bootstrap_ci(statistics.fmean, [], seed=0).low is None


# --------------------------------------------------------------------------- balanced accuracy and AUROC


@pytest.mark.parametrize("seed", SEEDS)
def test_balanced_accuracy_matches_sklearn(seed):
    from sklearn.metrics import balanced_accuracy_score

    from ragcourt.metrics.agreement import balanced_accuracy

    rng = random.Random(seed)
    truth = [rng.choice(["yes", "yes", "yes", "no"]) for _ in range(80)]  # unbalanced on purpose
    predicted = [t if rng.random() < 0.7 else rng.choice(["yes", "no"]) for t in truth]
    ours = balanced_accuracy(predicted, truth)
    assert ours.value == pytest.approx(balanced_accuracy_score(truth, predicted), abs=1e-12)
    assert ours.n == 80


def test_balanced_accuracy_of_always_yes_is_one_half_however_unbalanced():
    from ragcourt.metrics.agreement import balanced_accuracy

    truth = ["yes"] * 9 + ["no"]
    assert balanced_accuracy(["yes"] * 10, truth).value == 0.5
    assert accuracy(["yes"] * 10, truth).value == 0.9
    # an undecided item is left out and counted
    value = balanced_accuracy(["yes", None, "no"], ["yes", "no", "no"])
    assert (value.value, value.n, value.n_unscored) == (1.0, 2, 1)
    assert balanced_accuracy([None], ["yes"]).na_reason == "no item has both labels"


@pytest.mark.parametrize("seed", SEEDS)
def test_auroc_matches_sklearn_with_ties(seed):
    from sklearn.metrics import roc_auc_score

    from ragcourt.metrics.agreement import auroc

    rng = random.Random(seed)
    positive = [rng.random() < 0.4 for _ in range(70)]
    # scores rounded to one decimal: many ties, which count one half
    scores = [round(min(1.0, max(0.0, rng.gauss(0.6 if p else 0.4, 0.2))), 1) for p in positive]
    ours = auroc(scores, positive)
    assert ours.value == pytest.approx(roc_auc_score(positive, scores), abs=1e-12)
    assert ours.n == 70


def test_auroc_by_hand_and_its_na_cases():
    from ragcourt.metrics.agreement import auroc

    # positives 0.9, 0.4; negatives 0.4, 0.1: pairs (0.9>0.4) (0.9>0.1) (0.4=0.4: 1/2) (0.4>0.1) -> 3.5 / 4
    value = auroc([0.9, 0.4, 0.4, 0.1, None], [True, True, False, False, True])
    assert (value.value, value.n, value.n_unscored) == (0.875, 4, 1)
    one_class = auroc([0.2, 0.8], [True, True])
    assert one_class.value is None and "ranking needs both classes" in (one_class.na_reason or "")
    assert auroc([None], [True]).na_reason == "no item has both a score and a label"
