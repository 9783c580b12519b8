"""Does the Swiss tournament recover the true order of systems? Measured against round robin.

Eight systems with known strengths; every question of a match is a Bradley-Terry draw,
P(A wins the question) = 1 / (1 + exp(-(theta_A - theta_B))), over 30 questions. Over 50 seeds we compare
the Spearman correlation between final Elo and the true strengths for

* Swiss: seed 001's four rounds, 16 matches;
* round robin: all 28 matches;
* the first four rounds of the round-robin schedule: 16 matches like Swiss, but not adaptive.

Measured (deterministic for these seeds): Swiss 0.924, round robin 0.985, round robin's first four rounds
0.944. Swiss does NOT match round robin's average: with 16 of the 28 comparisons it gives up about 0.06
of Spearman (the seed reports identical rankings on its own eight systems, whose two model tiers are far
apart). Nor does its adaptive pairing beat a non-adaptive 16-match schedule here: pairing equals makes
each match's score share sit near 0.5, so Elo moves less per match. What the test asserts is what is
true and what matters for using it: Swiss stays within 0.1 of round robin's mean Spearman and recovers
the order well (mean >= 0.85) with 43 % fewer matches. `pytest -s` prints the figures.
"""

import math
import random
from statistics import mean

from ragcourt.metrics.dice import MatchResult, TournamentMode, run_tournament
from scipy.stats import spearmanr

SYSTEMS = [f"S{i}" for i in range(1, 9)]
# logit strengths 1.0 ... -1.0: neighbours differ by 0.29 (a 57 % question win rate)
STRENGTH = {s: (3.5 - i) / 3.5 for i, s in enumerate(SYSTEMS)}
N_QUESTIONS = 30
N_SEEDS = 50


def _bradley_terry(rng: random.Random):
    def match(a: str, b: str) -> MatchResult:
        p_a = 1.0 / (1.0 + math.exp(-(STRENGTH[a] - STRENGTH[b])))
        return MatchResult.from_outcomes([1.0 if rng.random() < p_a else 0.0 for _ in range(N_QUESTIONS)])

    return match


def _mean_spearman(mode: TournamentMode, rounds: int | None, stream: int) -> tuple[float, int]:
    rhos = []
    n_matches = 0
    for seed in range(N_SEEDS):
        order = SYSTEMS[:]
        random.Random(seed).shuffle(order)  # the schedule must not know the true order
        result = run_tournament(
            order,
            _bradley_terry(random.Random(1000 * seed + stream)),
            mode=mode,
            rounds=rounds,
            seed=seed,
            n_bootstrap=0,
        )
        elo = {st.system: st.elo for st in result.standings}
        rhos.append(spearmanr([STRENGTH[s] for s in SYSTEMS], [elo[s] for s in SYSTEMS]).statistic)
        n_matches = result.n_matches
    return mean(rhos), n_matches


def test_swiss_recovers_true_order_close_to_round_robin_with_fewer_matches():
    swiss, swiss_matches = _mean_spearman(TournamentMode.SWISS, None, stream=0)
    full, full_matches = _mean_spearman(TournamentMode.ROUND_ROBIN, None, stream=1)
    partial, partial_matches = _mean_spearman(TournamentMode.ROUND_ROBIN, 4, stream=2)
    print(
        f"\nmean Spearman over {N_SEEDS} seeds: swiss {swiss:.3f} ({swiss_matches} matches), "
        f"round robin {full:.3f} ({full_matches} matches), "
        f"round robin first 4 rounds {partial:.3f} ({partial_matches} matches)"
    )
    assert (swiss_matches, full_matches, partial_matches) == (16, 28, 16)
    assert swiss >= 0.85
    assert swiss >= full - 0.1
    assert full > swiss  # measured honestly: more comparisons do rank better
