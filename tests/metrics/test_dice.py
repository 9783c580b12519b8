"""DICE maths: probabilities, scores, Elo, Swiss pairing, tournaments, baseline tiers (hand-computed)."""

import itertools
import math
import random
from collections import Counter

import pytest

from ragcourt.metrics.dice import (
    REFIT_PRIOR_MATCHES,
    Baseline,
    BaselineTier,
    MatchOutcome,
    MatchResult,
    Placement,
    PlacementBasis,
    PlayedMatch,
    ProbabilitySource,
    TournamentMode,
    apply_round,
    bootstrap_elo_ci,
    decision_probabilities,
    elo_against_baselines,
    elo_update,
    expected_score,
    hard_score,
    hard_score_of,
    jury_label,
    position_bias_rate,
    refit_ratings,
    round_robin_schedule,
    run_tournament,
    soft_score,
    swiss_pairs,
    swiss_rounds,
    system_score,
    threshold_label,
    tier_position,
    vote_probabilities,
)
from ragcourt.schema import Label
from ragcourt.schema.config import PairwiseJury

# --------------------------------------------------------------------------- probabilities


def test_softmax_worked_example():
    """e^-0.5 = 0.606531, e^-1.5 = 0.223130, e^-2 = 0.135335; sum 0.964996."""
    p = decision_probabilities({"A": -0.5, "B": -1.5, "Tie": -2.0})
    assert p.p_a == pytest.approx(0.628532, abs=1e-6)
    assert p.p_b == pytest.approx(0.231224, abs=1e-6)
    assert p.p_tie == pytest.approx(0.140244, abs=1e-6)
    assert p.source is ProbabilitySource.LOGPROBS and p.missing == ()


def test_softmax_of_log_probabilities_returns_them_and_ignores_other_tokens():
    p = decision_probabilities({"A": math.log(0.6), "B": math.log(0.3), "Tie": math.log(0.1), "The": -0.1})
    assert (p.p_a, p.p_b, p.p_tie) == pytest.approx((0.6, 0.3, 0.1))


def test_missing_label_is_probability_zero_and_recorded():
    p = decision_probabilities({"A": math.log(0.5), "B": math.log(0.25)})
    assert (p.p_a, p.p_b, p.p_tie) == pytest.approx((2 / 3, 1 / 3, 0.0))
    assert p.missing == (Label.TIE,)


def test_token_variants_are_pooled():
    p = decision_probabilities(
        {
            "A": math.log(0.2),
            " A": math.log(0.2),
            "B": math.log(0.4),
            "tie": math.log(0.2),
            "a": math.log(0.9),
        }
    )
    assert (p.p_a, p.p_b, p.p_tie) == pytest.approx((0.4, 0.4, 0.2))


def test_no_decision_token_or_nan_is_na():
    none = decision_probabilities({"The": -0.1})
    assert none.p_a is None and none.na_reason == "no logprob for A, B or Tie"
    nan = decision_probabilities({"A": float("nan"), "B": -1.0})
    assert nan.p_a is None and "invalid logprob" in nan.na_reason


def test_vote_probabilities_exclude_unscored():
    p = vote_probabilities([Label.A, Label.A, Label.TIE, None])
    assert (p.p_a, p.p_b, p.p_tie) == pytest.approx((2 / 3, 0.0, 1 / 3))
    assert (p.n_votes, p.n_unscored, p.source) == (3, 1, ProbabilitySource.VOTES)
    assert vote_probabilities([None]).na_reason == "no scored votes"
    with pytest.raises(ValueError):
        vote_probabilities([Label.YES])


def test_hard_and_soft_scores():
    p = decision_probabilities({"A": math.log(0.6), "B": math.log(0.3), "Tie": math.log(0.1)})
    assert hard_score(p).value == 1.0
    assert soft_score(p).value == pytest.approx(0.65)  # 0.6 + 0.1 / 2
    b_wins = vote_probabilities([Label.B, Label.B, Label.A])
    assert hard_score(b_wins).value == 0.0
    assert soft_score(b_wins).value == pytest.approx(1 / 3)
    assert hard_score(vote_probabilities([Label.TIE])).value == 0.5
    assert hard_score(vote_probabilities([Label.A, Label.B])).value == 0.5  # shared argmax
    na = hard_score(vote_probabilities([None]))
    assert na.value is None and na.na_reason


# --------------------------------------------------------------------------- Elo


def test_expected_score():
    assert expected_score(1500, 1500) == 0.5
    assert expected_score(1600, 1400) == pytest.approx(1 / (1 + 10**-0.5))  # 0.759747
    assert expected_score(1400, 1600) == pytest.approx(1 - 0.759747, abs=1e-6)


def test_elo_update_worked_example():
    """R_A 1600, R_B 1400, A scores 18 of 30: E_A = 1/(1 + 10^-0.5) = 0.759747;
    delta = 32 (0.6 - 0.759747) = -5.111902; A 1594.888098, B 1405.111902."""
    new_a, new_b = elo_update(1600, 1400, s_a_total=18, n_questions=30, k=32)
    assert new_a == pytest.approx(1594.888098, abs=1e-5)
    assert new_b == pytest.approx(1405.111902, abs=1e-5)
    assert elo_update(1500, 1500, 30, 30, k=32) == (1516.0, 1484.0)
    with pytest.raises(ValueError):
        elo_update(1500, 1500, 0, 0)
    with pytest.raises(ValueError):
        elo_update(1500, 1500, 31, 30)


def test_match_result_validation_and_outcome():
    assert MatchResult.from_outcomes([1, 0.5, 0.5, 0]).outcome_for_a is MatchOutcome.TIE
    assert MatchResult.from_outcomes([1, 1, 0]).outcome_for_a is MatchOutcome.WIN
    assert MatchResult(score_a_total=0, n_questions=0).outcome_for_a is None
    with pytest.raises(ValueError):
        MatchResult(score_a_total=2.0, n_questions=2, outcomes=(1.0, 0.0))
    with pytest.raises(ValueError):
        MatchResult(score_a_total=3.0, n_questions=2)


def test_apply_round_uses_pre_round_ratings_and_skips_void():
    ratings = dict.fromkeys("abcd", 1500.0)
    matches = [
        PlayedMatch(system_a="a", system_b="b", result=MatchResult(score_a_total=30, n_questions=30)),
        PlayedMatch(system_a="c", system_b="d", result=MatchResult(score_a_total=0, n_questions=0)),
    ]
    assert apply_round(ratings, matches, k=32) == {"a": 1516.0, "b": 1484.0, "c": 1500.0, "d": 1500.0}


def _share_match(a: str, b: str, points_a: float, n: int = 4) -> PlayedMatch:
    return PlayedMatch(system_a=a, system_b=b, result=MatchResult(score_a_total=points_a, n_questions=n))


def test_refit_worked_example_chain():
    """a 3/4 against b, b 3/4 against c: E = 0.75 needs a gap of 400 log10(3) = 190.848502, mean 1500."""
    refit = refit_ratings(["a", "b", "c"], [_share_match("a", "b", 3), _share_match("b", "c", 3)])
    assert refit.ratings == pytest.approx({"a": 1690.848502, "b": 1500.0, "c": 1309.151498}, abs=1e-5)


def test_refit_credits_strength_of_schedule_where_one_round_of_elo_cannot():
    """x draws with s, y draws with w, s takes 3/4 from w. One round of Elo from 1500 leaves x and y
    level (both drew an equal); the fixed point puts x = s = 1500 + 200 log10(3) = 1595.424251, y = w below."""
    matches = [_share_match("x", "s", 2), _share_match("y", "w", 2), _share_match("s", "w", 3)]
    one_round = apply_round(dict.fromkeys("xysw", 1500.0), matches)
    assert one_round["x"] == one_round["y"] == 1500.0
    refit = refit_ratings(list("xysw"), matches)
    assert refit.ratings == pytest.approx(
        {"x": 1595.424251, "s": 1595.424251, "y": 1404.575749, "w": 1404.575749}
    )


def test_refit_is_a_fixed_point_of_the_seeds_update():
    rng = random.Random(5)
    systems = list("abcde")
    matches = [_share_match(a, b, rng.randint(1, 9), n=10) for a, b in itertools.combinations(systems, 2)]
    refit = refit_ratings(systems, matches, initial_rating=1000.0)
    assert refit.ratings is not None
    assert apply_round(refit.ratings, matches, k=32) == pytest.approx(refit.ratings, abs=1e-6)
    assert math.fsum(refit.ratings.values()) == pytest.approx(5000.0)


def test_a_sweep_is_refitted_with_the_weak_prior_and_unconnected_systems_are_na():
    """a took all 4 points from b: the exact fit would push a up forever. With 0.1 of a virtual half-won match
    per system against the mean (rating 0 in logits), the gradient of the fitted objective is zero:
    for each system, sum over its matches of (share - p) + 0.1 (0.5 - p_mean) = 0."""
    matches = [_share_match("a", "b", 4), _share_match("b", "c", 3)]
    swept = refit_ratings(["a", "b", "c"], matches)
    assert swept.ratings is not None and swept.na_reason is None and "virtual half-won match" in swept.prior_note
    assert swept.ratings["a"] > swept.ratings["b"] > swept.ratings["c"]
    x = {s: (r - 1500.0) * math.log(10.0) / 400.0 for s, r in swept.ratings.items()}

    def p(d: float) -> float:
        return 1.0 / (1.0 + math.exp(-d))

    residual = {"a": (1.0 - p(x["a"] - x["b"])), "b": -(1.0 - p(x["a"] - x["b"])) + (0.75 - p(x["b"] - x["c"])),
                "c": -(0.75 - p(x["b"] - x["c"]))}
    for system, r in residual.items():
        assert r + REFIT_PRIOR_MATCHES * (0.5 - p(x[system])) == pytest.approx(0.0, abs=1e-9)
    # a connected log is fitted exactly, without the prior
    assert refit_ratings(["a", "b"], [_share_match("a", "b", 3)]).prior_note is None
    apart = refit_ratings(["a", "b", "c", "d"], [_share_match("a", "b", 3), _share_match("c", "d", 1)])
    assert apart.ratings is None and apart.na_reason == "no refit: the played matches do not connect every system"


# --------------------------------------------------------------------------- pairing


def test_swiss_rounds_follow_the_seed():
    assert swiss_rounds(8) == 4  # seed 001: four rounds of four matches = 16 comparisons for eight systems
    assert [swiss_rounds(n) for n in (1, 2, 3, 4, 16)] == [0, 1, 3, 3, 5]


def test_swiss_pairs_close_ratings_and_avoids_rematch():
    ratings = {"a": 1600.0, "b": 1590.0, "c": 1500.0, "d": 1400.0}
    assert swiss_pairs(ratings, played=set(), seed=0).pairs == (("a", "b"), ("c", "d"))
    # without a-b, squared gaps prefer a-c + b-d (100^2 + 190^2) over a-d + b-c (200^2 + 90^2)
    rematch_free = swiss_pairs(ratings, played={frozenset("ab")}, seed=0)
    assert rematch_free.pairs == (("a", "c"), ("b", "d")) and rematch_free.rematches == ()


def test_swiss_forced_rematch_is_reported():
    ratings = {"a": 1510.0, "b": 1490.0}
    pairing = swiss_pairs(ratings, played={frozenset("ab")}, seed=0)
    assert pairing.pairs == (("a", "b"),) and pairing.rematches == (("a", "b"),)


def test_bye_goes_to_lowest_rated_without_bye():
    ratings = {"a": 1600.0, "b": 1550.0, "c": 1500.0}
    assert swiss_pairs(ratings, set(), seed=0).bye == "c"
    assert swiss_pairs(ratings, set(), seed=0, had_bye={"c"}).bye == "b"
    assert swiss_pairs(ratings, set(), seed=0, had_bye={"a", "b", "c"}).bye == "c"


def test_swiss_pairing_is_deterministic_for_a_seed_and_seed_breaks_ties():
    ratings = dict.fromkeys("abcdefgh", 1500.0)
    first = [swiss_pairs(ratings, set(), seed=s).pairs for s in range(6)]
    again = [swiss_pairs(ratings, set(), seed=s).pairs for s in range(6)]
    assert first == again
    assert len(set(first)) > 1  # equal ratings: the seed decides


def test_round_robin_schedule_covers_every_pair_once():
    rounds = round_robin_schedule([f"s{i}" for i in range(8)])
    pairs = [frozenset(p) for r in rounds for p in r.pairs]
    assert len(rounds) == 7 and len(pairs) == 28 == len(set(pairs))
    odd = round_robin_schedule(list("abcde"))
    assert len(odd) == 5 and Counter(r.bye for r in odd) == dict.fromkeys("abcde", 1)
    assert len({frozenset(p) for r in odd for p in r.pairs}) == 10


# --------------------------------------------------------------------------- tournaments


def _coin_flips(seed: int, n_questions: int = 6):
    rng = random.Random(seed)

    def match(a: str, b: str) -> MatchResult:
        return MatchResult.from_outcomes([float(rng.random() < 0.5) for _ in range(n_questions)])

    return match


def test_swiss_eight_systems_sixteen_matches_no_rematch():
    systems = [f"S{i}" for i in range(1, 9)]
    swiss = run_tournament(systems, _coin_flips(1), seed=1, n_bootstrap=0)
    pairs = [frozenset(p) for r in swiss.rounds for p in r.pairing.pairs]
    assert len(swiss.rounds) == 4 and swiss.n_matches == 16 and len(set(pairs)) == 16
    assert all(st.matches == 4 and st.wins + st.ties + st.losses == 4 for st in swiss.standings)
    full = run_tournament(systems, _coin_flips(1), mode=TournamentMode.ROUND_ROBIN, n_bootstrap=0)
    assert full.n_matches == 28


@pytest.mark.parametrize("n_systems", [5, 7])
def test_byes_for_odd_counts_at_most_one_each_until_all_had_one(n_systems):
    systems = [f"S{i}" for i in range(n_systems)]
    for seed in range(5):
        t = run_tournament(systems, _coin_flips(seed), rounds=n_systems, seed=seed, n_bootstrap=0)
        byes = [r.pairing.bye for r in t.rounds]
        assert Counter(byes) == dict.fromkeys(systems, 1)  # n rounds: everybody exactly one bye
        pairs = [frozenset(p) for r in t.rounds for p in r.pairing.pairs]
        assert len(pairs) == len(set(pairs))  # and still no rematch
        assert {st.system: st.byes for st in t.standings} == dict.fromkeys(systems, 1)


def test_tournament_is_deterministic_for_a_seed():
    systems = [f"S{i}" for i in range(1, 9)]
    first = run_tournament(systems, _coin_flips(7), seed=3, n_bootstrap=50)
    again = run_tournament(systems, _coin_flips(7), seed=3, n_bootstrap=50)
    assert first == again


def test_elo_and_bootstrap_on_a_deterministic_match():
    """A wins all 30 questions: one Swiss round (two systems), 1516 / 1484, and a zero-width interval."""
    t = run_tournament(
        ["A", "B"], lambda a, b: MatchResult.from_outcomes([1.0 if a == "A" else 0.0] * 30), seed=0
    )
    top, bottom = t.standings
    assert (top.system, top.elo, top.wins) == ("A", 1516.0, 1)
    assert (bottom.system, bottom.elo, bottom.losses) == ("B", 1484.0, 1)
    assert (top.elo_ci.low, top.elo_ci.high) == (1516.0, 1516.0)
    # a clean sweep has no exact fixed point: with the weak prior A and B sit symmetric about 1500 where
    # (1 - p(gap)) + 0.1 (0.5 - p(gap / 2)) = 0 (gap in logits)
    assert t.refitted.prior_note is not None
    gap = (t.refitted.ratings["A"] - t.refitted.ratings["B"]) * math.log(10.0) / 400.0
    assert t.refitted.ratings["A"] + t.refitted.ratings["B"] == pytest.approx(3000.0)
    assert 1 - 1 / (1 + math.exp(-gap)) + 0.1 * (0.5 - 1 / (1 + math.exp(-gap / 2))) == pytest.approx(0.0, abs=1e-9)


def test_bootstrap_ci_brackets_and_needs_outcomes():
    match = PlayedMatch(system_a="a", system_b="b", result=MatchResult.from_outcomes([1, 1, 1, 0] * 5))
    ci = bootstrap_elo_ci([[match]], ["a", "b"], k=32, n_resamples=500, seed=1)
    assert ci["a"].low < 1508.0 < ci["a"].high  # point estimate 1500 + 32 (0.75 - 0.5) = 1508
    assert ci == bootstrap_elo_ci([[match]], ["a", "b"], k=32, n_resamples=500, seed=1)
    totals_only = PlayedMatch(
        system_a="a", system_b="b", result=MatchResult(score_a_total=15, n_questions=20)
    )
    na = bootstrap_elo_ci([[totals_only]], ["a", "b"])
    assert na["a"].low is None and "no per-question outcomes" in na["a"].na_reason


# --------------------------------------------------------------------------- baseline tiers

HIGH = Baseline(name="S1", tier=BaselineTier.HIGH, rating=1600.0)
MEDIUM = Baseline(name="S4", tier=BaselineTier.MEDIUM, rating=1500.0)
LOW = Baseline(name="S8", tier=BaselineTier.LOW, rating=1400.0)


def test_tier_position_symmetric_example():
    """Shares 0.25 / 0.5 / 0.75 against 1600 / 1500 / 1400, one round from R_0 = 1500, K = 32:
    R = 1500 + 32 [(0.25 - 0.240253) + (0.5 - 0.5) + (0.75 - 0.759747)] = 1500 + 32 * 0 = 1500."""
    position = tier_position(
        [
            (LOW, MatchResult.from_outcomes([1, 1, 1, 0])),
            (HIGH, MatchResult.from_outcomes([1, 0, 0, 0])),
            (MEDIUM, MatchResult.from_outcomes([1, 0.5, 0.5, 0])),
        ]
    )
    assert position.elo.value == pytest.approx(1500.0, abs=1e-6)
    assert [r.baseline.tier for r in position.records] == list(BaselineTier)
    high, medium, low = position.records
    assert (high.question_wins, high.question_losses, high.outcome) == (1, 3, MatchOutcome.LOSS)
    assert (medium.question_wins, medium.question_ties, medium.outcome) == (1, 2, MatchOutcome.TIE)
    assert (low.question_wins, low.outcome) == (3, MatchOutcome.WIN)
    # it scored exactly half against medium: level with it (the rating, 1500, says the same)
    assert (position.placement, position.basis) == (Placement.LEVEL_MEDIUM, PlacementBasis.HEAD_TO_HEAD)


def test_tier_position_between_high_and_medium():
    """Shares 0.25 / 0.6 / 0.75: R = 1500 + 32 [(0.25 - 0.240253) + (0.6 - 0.5) + (0.75 - 0.759747)]
    = 1500 + 32 * 0.1 = 1503.2."""
    position = tier_position(
        [
            (HIGH, MatchResult.from_outcomes([1, 0, 0, 0])),
            (MEDIUM, MatchResult.from_outcomes([1, 1, 1, 0, 0])),
            (LOW, MatchResult.from_outcomes([1, 1, 1, 0])),
        ]
    )
    assert position.elo.value == pytest.approx(1503.2)
    assert position.placement is Placement.HIGH_TO_MEDIUM


def test_walkthrough_loses_to_high_and_medium_sweeps_low_rates_between_medium_and_low():
    """The walkthrough's pool (a 3-round K = 32 tournament: Elos 1509.74 / 1506.99 / 1483.27, a 26-point spread)
    and new system: 23 ties and 7 losses in 30 against high (share 11.5/30), 17 ties and 13 losses against
    medium (8.5/30), 30 wins against low (1.0).

    Seed 001, 3.3, one round against the frozen baselines from R_0 = 1500 (K = 32):
        R = R_0 + K sum_i (S_i/N_i - E(R_0, R_i)),  E(R_a, R_b) = 1 / (1 + 10^((R_b - R_a)/400))
    E(1500, 1509.74) = 0.485986, E(1500, 1506.99) = 0.489944, E(1500, 1483.27) = 0.524057, so
    R = 1500 + 32 [(0.383333 - 0.485986) + (0.283333 - 0.489944) + (1 - 0.524057)] = 1500 + 32 * 0.166680
    = 1505.33: below medium and high, which it lost to, above low, which it beat.

    The old figure was the performance rating, the R solving sum_i E(R, R_i) = sum_i S_i/N_i = 1.6667: 1538.8,
    above high. It treats the baselines' few-step Elos as if their 26-point spread were their real strength
    gap, so explaining a 1.0 against low needs a rating far above the whole pool."""
    pool = [Baseline(name="extractive_k1", tier=BaselineTier.HIGH, rating=1509.7404378108126),
            Baseline(name="extractive_k5", tier=BaselineTier.MEDIUM, rating=1506.9888935453773),
            Baseline(name="closed_book", tier=BaselineTier.LOW, rating=1483.27066864381)]
    shares = {BaselineTier.HIGH: [0.5] * 23 + [0.0] * 7, BaselineTier.MEDIUM: [0.5] * 17 + [0.0] * 13,
              BaselineTier.LOW: [1.0] * 30}
    position = tier_position([(b, MatchResult.from_outcomes(shares[b.tier])) for b in pool])
    assert [r.outcome for r in position.records] == [MatchOutcome.LOSS, MatchOutcome.LOSS, MatchOutcome.WIN]
    assert [expected_score(1500, b.rating) for b in pool] == pytest.approx([0.485986, 0.489944, 0.524057], abs=1e-6)
    assert position.elo.value == pytest.approx(1500 + 32 * (11.5 / 30 + 8.5 / 30 + 1 - 0.485986 - 0.489944 - 0.524057),
                                               abs=1e-4)
    assert position.elo.value == pytest.approx(1505.33, abs=0.01)
    assert pool[2].rating < position.elo.value < pool[1].rating < pool[0].rating
    assert (position.placement, position.basis) == (Placement.MEDIUM_TO_LOW, PlacementBasis.HEAD_TO_HEAD)


def test_elo_against_baselines_is_one_seed_round():
    """The same number as the seed's update of one round (elo_update per match, all from R_0), with K and R_0
    those of the pool's tournament; baselines' ratings do not move."""
    ratings = (1531.0, 1500.7, 1468.0)
    shares = (0.2, 0.5, 0.9)
    pairs = list(zip(shares, ratings, strict=True))
    expected = 1480.0 + sum(elo_update(1480.0, r, s * 10, 10, k=16)[0] - 1480.0 for s, r in pairs)
    assert elo_against_baselines(pairs, k=16, initial_rating=1480.0).value == pytest.approx(expected)
    assert elo_against_baselines([]).na_reason == "no scored match"


CLOSE = [Baseline(name="h", tier=BaselineTier.HIGH, rating=1510.0),
         Baseline(name="m", tier=BaselineTier.MEDIUM, rating=1500.0),
         Baseline(name="l", tier=BaselineTier.LOW, rating=1490.0)]


def test_close_baseline_ratings_do_not_place_a_system_above_baselines_it_lost_to():
    """A short tournament leaves the pool's Elos 10 apart. Losing to high (0.3) and medium (0.45) but crushing
    low (0.95): R = 1500 + 32 [(0.3 - 0.485613) + (0.45 - 0.5) + (0.95 - 0.514387)] = 1500 + 32 * 0.2 = 1506.4,
    below high (the old performance rating, 1.7 of 3 against ~1500, put it above high). One number summing three
    matches still sits above medium, which it lost narrowly while sweeping low: the matches place it."""
    shares = {BaselineTier.HIGH: [1, 1, 1, 0, 0, 0, 0, 0, 0, 0], BaselineTier.MEDIUM: [1] * 9 + [0] * 11,
              BaselineTier.LOW: [1] * 19 + [0]}
    position = tier_position([(b, MatchResult.from_outcomes(shares[b.tier])) for b in CLOSE])
    assert position.elo.value == pytest.approx(1506.4)
    assert (position.placement, position.basis) == (Placement.MEDIUM_TO_LOW, PlacementBasis.HEAD_TO_HEAD)


def test_contradicting_matches_fall_back_to_the_elo():
    """Beating high but losing to low says nothing consistent: the Elo places it.
    R = 1500 + 32 [(0.75 - 0.240253) + (0.25 - 0.5) + (0.25 - 0.759747)] = 1500 - 8 = 1492."""
    position = tier_position([
        (HIGH, MatchResult.from_outcomes([1, 1, 1, 0])),  # 0.75
        (MEDIUM, MatchResult.from_outcomes([1, 0, 0, 0])),  # 0.25
        (LOW, MatchResult.from_outcomes([1, 0, 0, 0])),  # 0.25
    ])
    assert position.elo.value == pytest.approx(1492.0)
    assert (position.placement, position.basis) == (Placement.MEDIUM_TO_LOW, PlacementBasis.ELO)


@pytest.mark.parametrize(
    ("high", "medium", "low", "placement"),
    [([1], [1], [1], Placement.ABOVE_HIGH), ([0.5], [1], [1], Placement.LEVEL_HIGH),
     ([0], [1], [1], Placement.HIGH_TO_MEDIUM), ([0], [0], [0.5], Placement.LEVEL_LOW),
     ([0], [0], [0], Placement.BELOW_LOW)],
)
def test_head_to_head_placements(high, medium, low, placement):
    position = tier_position([(HIGH, MatchResult.from_outcomes(high)), (MEDIUM, MatchResult.from_outcomes(medium)),
                              (LOW, MatchResult.from_outcomes(low))])
    assert (position.placement, position.basis) == (placement, PlacementBasis.HEAD_TO_HEAD)


def test_tier_position_all_won_is_finite_and_placed():
    """Winning every question is bounded: R = 1500 + 32 [(1 - 0.240253) + (1 - 0.5) + (1 - 0.759747)] = 1548."""
    position = tier_position([(b, MatchResult.from_outcomes([1.0, 1.0])) for b in (HIGH, MEDIUM, LOW)])
    assert position.elo.value == pytest.approx(1548.0) and position.na_reason is None
    assert position.placement is Placement.ABOVE_HIGH
    void = tier_position([(b, MatchResult(score_a_total=0, n_questions=0)) for b in (HIGH, MEDIUM, LOW)])
    assert void.elo.value is None and void.placement is None and void.na_reason == "no scored match"
    with pytest.raises(ValueError):
        tier_position([(HIGH, MatchResult.from_outcomes([1.0]))])


# --------------------------------------------------------------------------- scalar baseline (seed 001, 4.2)


def test_system_score_is_one_third_of_the_three_dimensions():
    # Score_S(q) = 1/3 (d_1 + d_2 + d_3): (0.9 + 0.6 + 0.3) / 3 = 0.6
    score = system_score([0.9, 0.6, 0.3])
    assert score.value == pytest.approx(0.6) and score.n == 3


def test_system_score_with_a_missing_dimension_is_na_not_a_mean_of_two():
    score = system_score([0.9, None, 0.3])
    assert score.value is None and score.na_reason == "1 of 3 dimensions missing"
    assert (score.n, score.n_unscored) == (2, 1)
    assert system_score([]).na_reason == "no dimension given"


@pytest.mark.parametrize(("a", "b", "margin", "label"), [
    (0.8, 0.7, 0.05, Label.A),  # leads by 0.1 > 0.05
    (0.6, 0.7, 0.05, Label.B),
    (0.72, 0.70, 0.05, Label.TIE),  # 0.02 inside the band
    (0.75, 0.70, 0.05, Label.TIE),  # exactly the band (0.04999... in floats): not more than it
    (0.70, 0.70, 0.0, Label.TIE),  # a band of 0 ties only equals
    (0.71, 0.70, 0.0, Label.A),
])
def test_threshold_label_eq7_tie_band(a, b, margin, label):
    assert threshold_label(a, b, margin) is label


def test_threshold_label_refuses_a_negative_band():
    with pytest.raises(ValueError, match="tie_margin"):
        threshold_label(0.5, 0.4, -0.1)


def test_position_bias_rate_is_the_share_of_decided_pairs_flagged():
    rate = position_bias_rate(3, 12)
    assert (rate.value, rate.n) == (0.25, 12)
    assert position_bias_rate(0, 0).value is None
    assert position_bias_rate(0, 0).na_reason == "no pair decided in both orders"


def test_the_pairwise_jury_rules_differ_where_two_judges_differ():
    majority, mean = PairwiseJury.MAJORITY_TIE, PairwiseJury.MEAN_PROBABILITY
    a_and_tie = vote_probabilities([Label.A, Label.TIE])  # (0.5, 0, 0.5)
    a_and_b = vote_probabilities([Label.A, Label.B])  # (0.5, 0.5, 0)
    assert jury_label(a_and_tie, majority) is Label.TIE  # a shared maximum is Tie
    assert jury_label(a_and_tie, mean) is Label.A  # P_B - P_A = -0.5, outside margin 0, and P_Tie is not larger
    assert jury_label(a_and_tie, mean, tie_margin=0.5) is Label.TIE  # |P_B - P_A| <= margin
    assert jury_label(a_and_b, majority) is jury_label(a_and_b, mean) is Label.TIE  # no side leads
    # mean logprob probabilities: Tie when it is the largest, whatever the margin
    leaning = vote_probabilities([Label.B]).model_copy(update={"p_a": 0.1, "p_b": 0.3, "p_tie": 0.6})
    assert jury_label(leaning, mean) is Label.TIE and jury_label(leaning, majority) is Label.TIE
    # majority_tie is the hard score as it always was
    for votes in ([Label.A], [Label.A, Label.TIE], [Label.A, Label.B], [Label.B, Label.B, Label.TIE]):
        p = vote_probabilities(votes)
        assert hard_score_of(jury_label(p, majority), p).value == hard_score(p).value
    assert hard_score_of(jury_label(a_and_tie, mean), a_and_tie).value == 1.0
    none = vote_probabilities([None])
    assert jury_label(none, mean) is None and hard_score_of(None, none).na_reason == "no scored votes"
