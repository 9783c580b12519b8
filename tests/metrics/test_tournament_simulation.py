"""Does the Swiss tournament recover the true order of systems? Measured against round robin (issue 7).

Eight systems with known strengths; every question of a match is a Bradley-Terry draw,
P(A wins the question) = 1 / (1 + exp(-(theta_A - theta_B))), over 30 questions, same K (32) and same
questions per match for every format. Common random numbers: within a seed, the match S1-S2 has the same
question draws whichever format plays it, so the formats differ only by which matches they play and how
they turn results into ratings. Over 50 seeds, the Spearman correlation with the true strengths of:

                                   seed's Elo (after last round)   refit (fixed point over all matches)
  Swiss, 4 rounds, 16 matches                 0.921                            0.965
  round robin, 28 matches                     0.980                            0.981
  round robin's first 4 rounds, 16            0.927                            0.966
  16 matches chosen KNOWING the true order      -                              0.967
  round robin, 28 matches of 17 questions     0.972                            0.970
    (476 judged questions, Swiss's 480: the same budget spread over every pair)

The issue's claim (Swiss at least as good as round robin on average, with fewer matches) does not hold
here, and no variant of the seed's procedure makes it hold: pairing by points scored instead of rating
changes nothing measurable (0.921; refit 0.966), pairing by refitted ratings neither (refit 0.962);
K = 64 / 128 / 256 gives 0.932 / 0.949 / 0.957; the refit (metrics.dice.refit_ratings) is the biggest
gain, but is still 0.015 below round robin (paired difference, standard error 0.004; over 400 seeds
0.973 against 0.985, difference 0.012, standard error 0.001). The
last row is why: even a schedule of 16 matches picked with the true order known (every neighbour pair,
every pair two apart, three pairs three apart) and the efficient Bradley-Terry fit stays below round
robin. 16 matches of 30 questions are 480 judged questions against 840; no pairing rule recovers that
difference. Spend the same budget on round robin (`ragcourt rank --mode round_robin --questions 17`) and
the two formats are level: Swiss refit minus round robin refit is -0.005 (standard error 0.005) over these
50 seeds, +0.001 (0.002) over 400; at 0.5 and 0.75 logits apart -0.001 and +0.000. Swiss's saving is
in matches, not in information per judged question. (The seed's own eight systems fall into two far-apart model tiers, where both formats rank
perfectly.) What is asserted is what holds: the match counts, Swiss with the refit close to round robin
and better than the seed's per-round Elo, and round robin ahead of any 16-match schedule.
`pytest -s` prints the figures.
"""

import math
import random
from statistics import mean

from scipy.stats import spearmanr

from ragcourt.metrics.dice import (
    MatchResult,
    PlayedMatch,
    TournamentMode,
    TournamentResult,
    refit_ratings,
    run_tournament,
)

SYSTEMS = [f"S{i}" for i in range(1, 9)]
# logit strengths 1.0 ... -1.0: neighbours differ by 0.29 (a 57 % question win rate)
STRENGTH = {s: (3.5 - i) / 3.5 for i, s in enumerate(SYSTEMS)}
N_QUESTIONS = 30
N_SEEDS = 50
# every neighbour pair, every pair two apart, three pairs three apart: 16 matches chosen knowing the truth
INFORMED_SCHEDULE = [(i, i + 1) for i in range(7)] + [(i, i + 2) for i in range(6)] + [(0, 3), (2, 5), (4, 7)]


def _match_fn(seed: int, strength: dict[str, float] = STRENGTH, n_questions: int = N_QUESTIONS):
    """The same seed and pair always give the same question draws, in either order of A and B; a match
    over fewer questions plays the first ``n_questions`` of them."""

    def match(a: str, b: str) -> MatchResult:
        first, second = sorted((a, b))
        draws = random.Random(f"{seed}:{first}:{second}")
        p_first = 1.0 / (1.0 + math.exp(-(strength[first] - strength[second])))
        first_wins = [draws.random() < p_first for _ in range(N_QUESTIONS)][:n_questions]
        return MatchResult.from_outcomes([1.0 if won == (a == first) else 0.0 for won in first_wins])

    return match


def _spearman(ratings: dict[str, float], strength: dict[str, float] = STRENGTH) -> float:
    return spearmanr([strength[s] for s in SYSTEMS], [ratings[s] for s in SYSTEMS]).statistic


def _tournaments(mode: TournamentMode, rounds: int | None, strength: dict[str, float] = STRENGTH,
                 n_questions: int = N_QUESTIONS) -> list[TournamentResult]:
    results = []
    for seed in range(N_SEEDS):
        order = SYSTEMS[:]
        random.Random(seed).shuffle(order)  # the schedule must not know the true order
        match = _match_fn(seed, strength, n_questions)
        results.append(run_tournament(order, match, mode=mode, rounds=rounds, seed=seed, n_bootstrap=0))
    return results


def _elo_and_refit(results: list[TournamentResult],
                   strength: dict[str, float] = STRENGTH) -> tuple[float, float, int]:
    elo = mean(_spearman({st.system: st.elo for st in r.standings}, strength) for r in results)
    refit = mean(_spearman(r.refitted.ratings, strength) for r in results)  # type: ignore[arg-type]
    (n_matches,) = {r.n_matches for r in results}
    return elo, refit, n_matches


def _informed_refit() -> float:
    rhos = []
    for seed in range(N_SEEDS):
        match = _match_fn(seed)
        played = [
            PlayedMatch(system_a=SYSTEMS[i], system_b=SYSTEMS[j], result=match(SYSTEMS[i], SYSTEMS[j]))
            for i, j in INFORMED_SCHEDULE
        ]
        rhos.append(_spearman(refit_ratings(SYSTEMS, played).ratings))  # type: ignore[arg-type]
    return mean(rhos)


def test_swiss_against_round_robin_over_50_seeds():
    swiss, swiss_refit, swiss_matches = _elo_and_refit(_tournaments(TournamentMode.SWISS, None))
    full, full_refit, full_matches = _elo_and_refit(_tournaments(TournamentMode.ROUND_ROBIN, None))
    partial, partial_refit, partial_matches = _elo_and_refit(_tournaments(TournamentMode.ROUND_ROBIN, 4))
    informed = _informed_refit()
    print(
        f"\nmean Spearman over {N_SEEDS} seeds (seed's Elo / refit):"
        f"\n  swiss                      {swiss:.3f} / {swiss_refit:.3f}  ({swiss_matches} matches)"
        f"\n  round robin                {full:.3f} / {full_refit:.3f}  ({full_matches} matches)"
        f"\n  round robin first 4 rounds {partial:.3f} / {partial_refit:.3f}  ({partial_matches} matches)"
        f"\n  16 matches knowing truth     -   / {informed:.3f}  ({len(INFORMED_SCHEDULE)} matches)"
    )
    assert (swiss_matches, full_matches, partial_matches) == (16, 28, 16)
    assert round(swiss, 3) == 0.921 and round(full, 3) == 0.980  # deterministic for these seeds
    assert swiss_refit >= full - 0.02  # close to round robin with 43 % fewer matches ...
    assert swiss_refit > swiss + 0.03  # ... once the ratings are refitted on all played matches
    # the claim (swiss >= round robin) does not hold: not even an informed 16-match schedule reaches it
    assert full > swiss_refit and full > informed


def test_round_robin_stays_ahead_and_the_gap_closes_as_systems_move_apart():
    """Where the claim can hold: the same simulation with neighbours 0.29, 0.5, 0.75 and 1.0 logits apart (57 %,
    62 %, 68 %, 73 % question win rates). Round robin plays every pair Swiss plays (with the same question
    draws) and more, so it is never behind; the refitted Swiss ratings close the gap as the systems separate,
    and from 0.75 both formats rank (almost) perfectly. At 1.0 one of the 50 Swiss tournaments has a system
    that took every question it played: only the refit's weak prior keeps that fit finite (it was n/a).
    Measured over 50 seeds:
        0.29: Swiss Elo 0.921, refit 0.965; round robin 0.980
        0.50: Swiss Elo 0.937, refit 0.992; round robin 0.995
        0.75: Swiss Elo 0.943, refit 0.999; round robin 1.000
        1.00: Swiss Elo 0.928, refit 0.9995; round robin 1.000
    """
    gaps, with_prior = [], []
    for neighbours in (1 / 3.5, 0.5, 0.75, 1.0):
        strength = {s: (3.5 - i) * neighbours for i, s in enumerate(SYSTEMS)}
        tournaments = _tournaments(TournamentMode.SWISS, None, strength)
        with_prior.append(sum(t.refitted.prior_note is not None for t in tournaments))
        swiss, swiss_refit, _ = _elo_and_refit(tournaments, strength)
        full, _, _ = _elo_and_refit(_tournaments(TournamentMode.ROUND_ROBIN, None, strength), strength)
        print(f"\nneighbours {neighbours:.2f} logits apart: swiss Elo {swiss:.3f}, refit {swiss_refit:.3f}; "
              f"round robin {full:.3f}")
        assert full >= swiss_refit > swiss
        gaps.append(full - swiss_refit)
    assert gaps[0] > gaps[1] > gaps[2] >= gaps[3] and gaps[3] < 0.001
    assert with_prior == [0, 0, 0, 1]


def test_on_the_same_number_of_judged_questions_swiss_and_round_robin_are_level():
    """Round robin over 17 questions a match judges 476 questions, Swiss over 30 judges 480. Measured over 50
    seeds (refitted ratings): 0.965 / 0.970, 0.992 / 0.993, 0.999 / 0.998 at 0.29 / 0.5 / 0.75 logits apart;
    over 400 seeds the differences are +0.001, +0.002, +0.000 (standard errors 0.002, 0.001, 0.000)."""
    for neighbours in (1 / 3.5, 0.5, 0.75):
        strength = {s: (3.5 - i) * neighbours for i, s in enumerate(SYSTEMS)}
        swiss = _tournaments(TournamentMode.SWISS, None, strength)
        spread = _tournaments(TournamentMode.ROUND_ROBIN, None, strength, n_questions=17)
        _, swiss_refit, swiss_matches = _elo_and_refit(swiss, strength)
        _, spread_refit, spread_matches = _elo_and_refit(spread, strength)
        print(f"\nneighbours {neighbours:.2f} logits apart, equal budget: swiss refit {swiss_refit:.3f} "
              f"({swiss_matches * N_QUESTIONS} questions), round robin refit {spread_refit:.3f} "
              f"({spread_matches * 17} questions)")
        assert (swiss_matches * N_QUESTIONS, spread_matches * 17) == (480, 476)
        assert abs(swiss_refit - spread_refit) < 0.01
