"""DICE tournament maths (seed 001): A/B/Tie probabilities, scores, Elo, Swiss pairing, baseline tiers.

Pure: no LLM, no I/O. Randomness only through explicit ``seed`` arguments. Undefined results are
``None`` plus a reason, never NaN, 0 or 1.

Choices the seed leaves open (documented here; where DESIGN.md and the seed differ, the seed wins):

* Probabilities (3.2): ``softmax([l_A, l_B, l_Tie])``. An endpoint's top-k logprobs may omit a label; an
  omitted label is treated as probability 0 (logprob -inf) and listed in ``missing``. Token variants of one
  label (``"A"`` and ``" A"``) are pooled (log-sum-exp). A and B are matched case-sensitively (a bare ``"a"``
  is more likely the English article), Tie case-insensitively.
* Hard score (3.2): argmax A -> (1, 0), B -> (0, 1), Tie -> (0.5, 0.5). An argmax shared by two labels
  (possible with jury votes) counts as Tie. Soft score: the expected score ``P_A + P_Tie / 2`` (the seed names
  hard and soft schemes but prints only the hard one). Scores are given for A; B's is ``1 - score_A``.
* Elo (3.3): ``E_A = 1 / (1 + 10^((R_B - R_A)/400))``, ``R'_A = R_A + K (S_A/N_questions - E_A)``. The seed
  gives neither K nor the initial rating ("initialized with equal Elo ratings"): K = 32 and 1500, the usual
  chess / Chatbot Arena values. Ratings are updated after each round (4.2), every update of a round using
  the ratings from before the round. A bye changes no rating.
* Rounds (3.3, 4.2): "for eight systems, four rounds of four matches each yield 16 comparisons versus 28";
  that is ``ceil(log2 n) + 1`` rounds, not ``ceil(log2 n)`` (which would give 12), capped at the number of
  round-robin rounds (beyond that rematches are unavoidable).
* Final ranking (4.2): the seed ranks by the Elo after the last round ("Elo ratings were updated after each
  round", "Final Elo rankings"), so that is ``Standing.elo``. With K = 32 those ratings move little per
  match and barely correct for strength of schedule, which is what Swiss pairing makes uneven. Every result
  therefore also carries ``refitted``: the fixed point of the same update over all played matches at once
  (a Bradley-Terry maximum-likelihood fit). It is reported beside the seed's Elo, not instead of it. In
  tests/metrics/test_tournament_simulation.py it lifts Swiss's mean Spearman from 0.921 to 0.965, still
  below round robin's 0.980 (no 16-match schedule reaches 28 matches' figure there; see that test).
* Pairing (4.2): "paired dynamically based on current performance while avoiding repeat matchups". A
  maximum-cardinality maximum-weight matching (networkx) that lexicographically minimises rematches, then
  the summed squared rating gap, then a seeded random tie-break.
* Baseline tiers (3.3): "a final Elo score" for the new system is the seed's own update, one round against
  the frozen baselines: it enters at the initial rating (the pool's mean: every pool rating started there and
  updates are zero-sum) and ``R = R_0 + K sum_i (S_i/N_i - E(R_0, R_i))``. That is how the baselines got
  their ratings, so the number is on their scale. (A performance rating - the fixed point of repeating the
  update - is not: the baselines' ratings are a few K-sized steps from 1500, tens of points apart for
  systems whose head-to-head shares imply hundreds, so the fixed point lands far outside them; a system
  that lost to high and medium but swept low came out above high.) The placement is read from the matches
  themselves (``_head_to_head_placement``); one number summing three matches can still sit above a
  baseline the system narrowly lost to when it swept another, and the rating places it only when the
  matches contradict each other.
* Judging order (3.1): the seed judges each pair in one order and does not say which answer is shown as A.
  The order protocol itself is a node's choice (nodes/tournament_state.OrderProtocol); here is the position
  bias rate of the both-orders protocol: the share of decided pairs whose two orders disagree.
* Scalar baseline (4.2): ``Score_S(q) = 1/3 sum_{i=1}^{3} d_i(S, q)``, the mean of the per-question
  dimensions (three RAGAS metrics in the seed; any number of given figures here, all of them scored, else
  n/a: a mean over fewer dimensions would be another score). Eq. (7)'s thresholds are not printed in the
  seed; the reading here is one tie band: A wins when ``Score_A - Score_B > tie_margin``, B when
  ``Score_B - Score_A > tie_margin``, Tie otherwise (a band of 0 ties only exact equals).
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Collection, Mapping, Sequence
from enum import StrEnum

import networkx as nx
import numpy as np
from pydantic import BaseModel, ConfigDict, model_validator

from ragcourt.schema import Label, MetricValue
from ragcourt.schema.config import PairwiseJury

DEFAULT_K = 32.0
INITIAL_RATING = 1500.0
DEFAULT_BOOTSTRAP_RESAMPLES = 1000
_DECISIONS = (Label.A, Label.B, Label.TIE)
_SCORE_TOLERANCE = 1e-9


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# --------------------------------------------------------------------------- probabilities and scores


class ProbabilitySource(StrEnum):
    LOGPROBS = "logprobs"
    VOTES = "votes"  # fallback when the judges' endpoints give no logprobs: the jury's vote shares


class DecisionProbabilities(_Frozen):
    """P(A), P(B), P(Tie) summing to 1, or all None with ``na_reason``."""

    p_a: float | None
    p_b: float | None
    p_tie: float | None
    source: ProbabilitySource
    na_reason: str | None = None
    missing: tuple[Label, ...] = ()  # labels absent from the logprobs (taken as probability 0)
    n_votes: int = 0
    n_unscored: int = 0

    @model_validator(mode="after")
    def _complete_or_reasoned(self) -> DecisionProbabilities:
        values = (self.p_a, self.p_b, self.p_tie)
        if all(v is None for v in values):
            if not self.na_reason:
                raise ValueError("n/a probabilities need a reason")
        elif any(v is None for v in values) or abs(math.fsum(values) - 1.0) > 1e-9:  # type: ignore[arg-type]
            raise ValueError(f"probabilities must all be given and sum to 1, got {values}")
        return self

    def of(self, label: Label) -> float | None:
        return {Label.A: self.p_a, Label.B: self.p_b, Label.TIE: self.p_tie}[label]


def _decision_label(token: str) -> Label | None:
    text = token.strip()
    if text in (Label.A.value, Label.B.value):
        return Label(text)
    if text.casefold() == Label.TIE.value.casefold():
        return Label.TIE
    return None


def decision_probabilities(logprobs: Mapping[str, float]) -> DecisionProbabilities:
    """Seed 001, 3.2: softmax over the logprobs of A, B and Tie (other tokens are ignored)."""
    pooled: dict[Label, list[float]] = {label: [] for label in _DECISIONS}
    for token, logprob in logprobs.items():
        label = _decision_label(token)
        if label is None:
            continue
        if math.isnan(logprob) or logprob == math.inf:
            return DecisionProbabilities(
                p_a=None,
                p_b=None,
                p_tie=None,
                source=ProbabilitySource.LOGPROBS,
                na_reason=f"invalid logprob {logprob} for token {token!r}",
            )
        if logprob > -math.inf:
            pooled[label].append(logprob)
    missing = tuple(label for label in _DECISIONS if not pooled[label])
    if len(missing) == len(_DECISIONS):
        return DecisionProbabilities(
            p_a=None,
            p_b=None,
            p_tie=None,
            source=ProbabilitySource.LOGPROBS,
            na_reason="no logprob for A, B or Tie",
            missing=missing,
        )
    # subtracting the maximum keeps exp() in range for very negative logprobs
    top = max(lp for lps in pooled.values() for lp in lps)
    mass = {label: math.fsum(math.exp(lp - top) for lp in pooled[label]) for label in _DECISIONS}
    total = math.fsum(mass.values())
    return DecisionProbabilities(
        p_a=mass[Label.A] / total,
        p_b=mass[Label.B] / total,
        p_tie=mass[Label.TIE] / total,
        source=ProbabilitySource.LOGPROBS,
        missing=missing,
    )


def vote_probabilities(labels: Sequence[Label | None]) -> DecisionProbabilities:
    """The jury's vote shares over A, B and Tie; None votes (unscored judges) are excluded and counted."""
    votes = [label for label in labels if label is not None]
    n_unscored = len(labels) - len(votes)
    invalid = [v for v in votes if v not in _DECISIONS]
    if invalid:
        raise ValueError(f"pairwise votes must be A, B or Tie, got {invalid}")
    if not votes:
        return DecisionProbabilities(
            p_a=None,
            p_b=None,
            p_tie=None,
            source=ProbabilitySource.VOTES,
            na_reason="no scored votes",
            n_unscored=n_unscored,
        )
    shares = {label: votes.count(label) / len(votes) for label in _DECISIONS}
    return DecisionProbabilities(
        p_a=shares[Label.A],
        p_b=shares[Label.B],
        p_tie=shares[Label.TIE],
        source=ProbabilitySource.VOTES,
        n_votes=len(votes),
        n_unscored=n_unscored,
    )


def hard_score(probabilities: DecisionProbabilities) -> MetricValue:
    """A's hard score: 1 if argmax is A, 0 if B, 0.5 if Tie or if the maximum is shared."""
    if probabilities.na_reason:
        return MetricValue(name="hard_score_a", value=None, na_reason=probabilities.na_reason)
    p = {label: probabilities.of(label) for label in _DECISIONS}
    best = max(p.values())  # type: ignore[type-var]
    winners = [label for label, v in p.items() if v == best]
    value = {Label.A: 1.0, Label.B: 0.0}.get(winners[0], 0.5) if len(winners) == 1 else 0.5
    return MetricValue(name="hard_score_a", value=value, n=1)


def jury_label(probabilities: DecisionProbabilities, rule: PairwiseJury = PairwiseJury.MAJORITY_TIE,
               tie_margin: float = 0.0) -> Label | None:
    """The jury's A/B/Tie from its mean probabilities (schema.config.PairwiseJury); None when it has none.
    Without logprobs the mean is of one-hot votes (the vote shares), so two judges saying A and Tie give
    (0.5, 0, 0.5): Tie under majority_tie, A under mean_probability with a margin below 0.5."""
    if probabilities.na_reason:
        return None
    p = {label: probabilities.of(label) or 0.0 for label in _DECISIONS}
    if rule is PairwiseJury.MAJORITY_TIE:
        best = max(p.values())
        winners = [label for label, v in p.items() if v == best]
        return winners[0] if len(winners) == 1 else Label.TIE
    lead = p[Label.B] - p[Label.A]
    if abs(lead) <= tie_margin or p[Label.TIE] > max(p[Label.A], p[Label.B]):
        return Label.TIE
    return Label.B if lead > 0 else Label.A


_HARD = {Label.A: 1.0, Label.B: 0.0, Label.TIE: 0.5}


def hard_score_of(label: Label | None, probabilities: DecisionProbabilities) -> MetricValue:
    """A's hard score from the jury's label (jury_label): 1 for A, 0 for B, 0.5 for Tie."""
    if label is None:
        return MetricValue(name="hard_score_a", value=None, na_reason=probabilities.na_reason or "no jury label")
    return MetricValue(name="hard_score_a", value=_HARD[label], n=1)


def soft_score(probabilities: DecisionProbabilities) -> MetricValue:
    """A's expected score ``P_A + P_Tie / 2``."""
    if probabilities.na_reason:
        return MetricValue(name="soft_score_a", value=None, na_reason=probabilities.na_reason)
    value = probabilities.p_a + probabilities.p_tie / 2  # type: ignore[operator]
    return MetricValue(name="soft_score_a", value=value, n=1)


# --------------------------------------------------------------------------- scalar baseline (4.2)


def system_score(dimensions: Sequence[float | None]) -> MetricValue:
    """``Score_S(q)``: the mean of a system's per-question dimension figures (the seed's three RAGAS metrics,
    ``1/3 sum d_i``); n/a when any dimension is missing, since a mean of fewer would be another score."""
    missing = sum(d is None for d in dimensions)
    if not dimensions or missing:
        reason = "no dimension given" if not dimensions else f"{missing} of {len(dimensions)} dimensions missing"
        return MetricValue(name="system_score", value=None, na_reason=reason, n=len(dimensions) - missing,
                           n_unscored=missing)
    return MetricValue(name="system_score", value=math.fsum(dimensions) / len(dimensions),  # type: ignore[arg-type]
                       n=len(dimensions))


def threshold_label(score_a: float, score_b: float, tie_margin: float) -> Label:
    """Eq. (7)'s threshold reading: the higher score wins when it leads by more than ``tie_margin``, else Tie."""
    if tie_margin < 0:
        raise ValueError(f"tie_margin must be >= 0, got {tie_margin}")
    gap = score_a - score_b
    if gap > tie_margin + _SCORE_TOLERANCE:
        return Label.A
    if -gap > tie_margin + _SCORE_TOLERANCE:
        return Label.B
    return Label.TIE


def position_bias_rate(flagged: int, decided: int) -> MetricValue:
    """The share of pairs a judge decided in both orders whose two orders disagreed."""
    if decided == 0:
        return MetricValue(name="position_bias_rate", value=None, na_reason="no pair decided in both orders")
    return MetricValue(name="position_bias_rate", value=flagged / decided, n=decided)


# --------------------------------------------------------------------------- Elo


def expected_score(r_a: float, r_b: float) -> float:
    return 1.0 / (1.0 + 10.0 ** ((r_b - r_a) / 400.0))


def elo_update(
    r_a: float, r_b: float, s_a_total: float, n_questions: int, k: float = DEFAULT_K
) -> tuple[float, float]:
    """Seed 001, 3.3: ``R'_A = R_A + K (S_A / N_questions - E_A)``; B symmetric with ``S_B = N - S_A``."""
    if n_questions <= 0:
        raise ValueError("an Elo update needs at least one scored question")
    if not -_SCORE_TOLERANCE <= s_a_total <= n_questions + _SCORE_TOLERANCE:
        raise ValueError(f"S_A must be in [0, {n_questions}], got {s_a_total}")
    delta = k * (s_a_total / n_questions - expected_score(r_a, r_b))
    return r_a + delta, r_b - delta


class MatchOutcome(StrEnum):
    WIN = "win"
    TIE = "tie"
    LOSS = "loss"


class MatchResult(_Frozen):
    """One A-vs-B match over the questions: A's total score and, per question, A's score in [0, 1].

    ``n_questions`` counts scored questions only; a match with none is void (no rating change).
    """

    score_a_total: float
    n_questions: int
    outcomes: tuple[float, ...] = ()

    @model_validator(mode="after")
    def _consistent(self) -> MatchResult:
        if self.n_questions < 0:
            raise ValueError("n_questions must be >= 0")
        if not -_SCORE_TOLERANCE <= self.score_a_total <= self.n_questions + _SCORE_TOLERANCE:
            raise ValueError(f"score_a_total {self.score_a_total} outside [0, {self.n_questions}]")
        if self.outcomes:
            if len(self.outcomes) != self.n_questions:
                raise ValueError(f"{len(self.outcomes)} outcomes for {self.n_questions} questions")
            if any(not 0.0 <= o <= 1.0 for o in self.outcomes):
                raise ValueError("per-question outcomes must be in [0, 1]")
            if abs(math.fsum(self.outcomes) - self.score_a_total) > 1e-6:
                raise ValueError("outcomes do not add up to score_a_total")
        return self

    @classmethod
    def from_outcomes(cls, outcomes: Sequence[float]) -> MatchResult:
        return cls(score_a_total=math.fsum(outcomes), n_questions=len(outcomes), outcomes=tuple(outcomes))

    @property
    def outcome_for_a(self) -> MatchOutcome | None:
        """Match-level result for A (None for a void match): more than half the points wins."""
        if self.n_questions == 0:
            return None
        share = self.score_a_total / self.n_questions
        if abs(share - 0.5) <= _SCORE_TOLERANCE:
            return MatchOutcome.TIE
        return MatchOutcome.WIN if share > 0.5 else MatchOutcome.LOSS


class PlayedMatch(_Frozen):
    system_a: str
    system_b: str
    result: MatchResult


def apply_round(
    ratings: Mapping[str, float], matches: Sequence[PlayedMatch], k: float = DEFAULT_K
) -> dict[str, float]:
    """New ratings after one round; every update uses the ratings from before the round. Void matches
    (no scored question) change nothing."""
    deltas = dict.fromkeys(ratings, 0.0)
    for match in matches:
        if match.result.n_questions == 0:
            continue
        r_a, r_b = ratings[match.system_a], ratings[match.system_b]
        new_a, new_b = elo_update(r_a, r_b, match.result.score_a_total, match.result.n_questions, k)
        deltas[match.system_a] += new_a - r_a
        deltas[match.system_b] += new_b - r_b
    return {system: rating + deltas[system] for system, rating in ratings.items()}


class RefitRatings(_Frozen):
    """Ratings that no longer change under the seed's update over the whole match log, or None + reason.

    `prior_note` says when the exact fit did not exist and a weak prior made it (see `refit_ratings`)."""

    ratings: dict[str, float] | None
    na_reason: str | None = None
    prior_note: str | None = None


_REFIT_MAX_STEPS = 100
# When some systems took no point from the others, the exact fit pushes them apart forever. Each system then
# also plays this much of a virtual match, scored half-half, against the pool's mean: enough to bound the fit,
# far too little to reorder systems that met (a Swiss system plays 4 whole matches).
REFIT_PRIOR_MATCHES = 0.1


def refit_ratings(
    systems: Sequence[str], matches: Sequence[PlayedMatch], initial_rating: float = INITIAL_RATING
) -> RefitRatings:
    """The fixed point of the seed's Elo update applied to every played match at once: for each system the
    sum over its matches of ``S/N_questions - E`` is zero. That is the Bradley-Terry maximum-likelihood fit
    with each match weighted once (as the seed's update weighs it). The update conserves the rating sum, so
    the mean stays at ``initial_rating``; K drops out. Solved by Newton's method with a backtracking step.

    When some group of systems scored no point at all against the rest (a clear winner of a Swiss
    tournament), no finite fixed point exists: each system then also plays REFIT_PRIOR_MATCHES of a virtual
    match, half won, against the pool's mean, and `prior_note` says so. n/a when the played matches do not
    connect every system (nothing relates the groups).
    """
    scored = [m for m in matches if m.result.n_questions > 0]
    graph = nx.DiGraph()
    graph.add_nodes_from(systems)
    for m in scored:
        match_share = m.result.score_a_total / m.result.n_questions
        if match_share > _SCORE_TOLERANCE:
            graph.add_edge(m.system_a, m.system_b)  # A took points from B
        if match_share < 1 - _SCORE_TOLERANCE:
            graph.add_edge(m.system_b, m.system_a)
    if not nx.is_weakly_connected(graph):
        return RefitRatings(ratings=None, na_reason="no refit: the played matches do not connect every system")
    prior = 0.0 if nx.is_strongly_connected(graph) else REFIT_PRIOR_MATCHES
    index = {s: i for i, s in enumerate(systems)}
    a = np.array([index[m.system_a] for m in scored])
    b = np.array([index[m.system_b] for m in scored])
    share = np.array([m.result.score_a_total / m.result.n_questions for m in scored])
    n = len(systems)
    scale = math.log(10.0) / 400.0  # Elo points to logits

    def fit(x: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        diff = x[a] - x[b]
        p = 1.0 / (1.0 + np.exp(-diff))
        # log-likelihood with the match share as the observed score; logaddexp keeps it finite
        loglik = float(-(share * np.logaddexp(0.0, -diff) + (1 - share) * np.logaddexp(0.0, diff)).sum())
        residual = share - p
        gradient = np.bincount(a, residual, n) - np.bincount(b, residual, n)
        weight = p * (1 - p)
        laplacian = np.zeros((n, n))
        np.add.at(laplacian, (a, a), weight)
        np.add.at(laplacian, (b, b), weight)
        np.add.at(laplacian, (a, b), -weight)
        np.add.at(laplacian, (b, a), -weight)
        if prior:  # the virtual half-won matches against the mean (rating 0 here)
            p_mean = 1.0 / (1.0 + np.exp(-x))
            loglik -= prior * float((0.5 * np.logaddexp(0.0, -x) + 0.5 * np.logaddexp(0.0, x)).sum())
            gradient = gradient + prior * (0.5 - p_mean)
            laplacian = laplacian + np.diag(prior * p_mean * (1 - p_mean))
        return loglik, gradient, laplacian

    x = np.zeros(n)
    loglik, gradient, laplacian = fit(x)
    for _ in range(_REFIT_MAX_STEPS):
        if np.abs(gradient).max() < 1e-10:
            break
        # Without the prior the all-ones direction is free (only differences matter): pinning the mean makes
        # the system regular. The prior pins the mean itself.
        step = np.linalg.solve(laplacian + (0.0 if prior else np.ones((n, n)) / n), gradient)
        rate = 1.0
        while rate > 1e-6:
            candidate = x + rate * step
            candidate_fit = fit(candidate)
            if candidate_fit[0] >= loglik:
                break
            rate /= 2
        x = candidate if prior else candidate - candidate.mean()
        loglik, gradient, laplacian = fit(x)
    else:
        return RefitRatings(ratings=None, na_reason=f"refit did not converge in {_REFIT_MAX_STEPS} steps")
    note = (f"some systems took no point from the others: each also played {prior:g} of a virtual half-won match "
            "against the pool's mean, so the refit stays finite") if prior else None
    return RefitRatings(ratings={s: initial_rating + float(x[i]) / scale for s, i in index.items()}, prior_note=note)


# --------------------------------------------------------------------------- pairing


class Pairing(_Frozen):
    """One round: pairs (higher-rated system first) and the system with a bye, if the count is odd."""

    pairs: tuple[tuple[str, str], ...]
    bye: str | None = None
    rematches: tuple[tuple[str, str], ...] = ()  # forced when no rematch-free pairing exists


def swiss_rounds(n_systems: int) -> int:
    """Seed 001: four rounds for eight systems, i.e. ``ceil(log2 n) + 1``, capped at the round-robin count."""
    if n_systems < 2:
        return 0
    return min(math.ceil(math.log2(n_systems)) + 1, _round_robin_round_count(n_systems))


def _round_robin_round_count(n_systems: int) -> int:
    return n_systems - 1 if n_systems % 2 == 0 else n_systems


def _ordered(a: str, b: str, ratings: Mapping[str, float]) -> tuple[str, str]:
    return (a, b) if (-ratings[a], a) <= (-ratings[b], b) else (b, a)


def _best_matching(
    systems: Sequence[str],
    ratings: Mapping[str, float],
    played: Collection[frozenset[str]],
    jitter: Mapping[frozenset[str], int],
    jitter_range: int,
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Perfect matching minimising, in this order: rematches, summed squared rating gap, seeded jitter.

    Integer weights keep networkx's matching exact; each level's weight unit exceeds the largest possible
    sum of the levels below it, so the order is strictly lexicographic.
    """
    n = len(systems)
    gaps = {
        # squared gap in milli-Elo points: of two pairings with the same summed gap (1-4 + 2-3 vs 1-3 + 2-4
        # always tie on the plain sum) it prefers the one without a lopsided pair
        frozenset((a, b)): round(abs(ratings[a] - ratings[b]) * 1000) ** 2
        for a, b in itertools.combinations(systems, 2)
    }
    gap_unit = jitter_range * n  # one unit of gap outweighs all jitter of a matching
    gap_budget = (n // 2) * (max(gaps.values(), default=0) * gap_unit + jitter_range) + 1
    rematch_unit = (n // 2 + 1) * gap_budget  # one rematch fewer outweighs any gap difference
    graph = nx.Graph()
    graph.add_nodes_from(systems)
    for pair, gap in gaps.items():
        fresh = 0 if pair in played else rematch_unit
        a, b = sorted(pair)
        graph.add_edge(a, b, weight=fresh + gap_budget - gap * gap_unit - jitter[pair])
    matching = nx.max_weight_matching(graph, maxcardinality=True)
    pairs = sorted((_ordered(a, b, ratings) for a, b in matching), key=lambda p: (-ratings[p[0]], p[0], p[1]))
    return pairs, [p for p in pairs if frozenset(p) in played]


def swiss_pairs(
    ratings: Mapping[str, float],
    played: Collection[frozenset[str]],
    seed: int,
    had_bye: Collection[str] = (),
) -> Pairing:
    """Pair systems of close rating without rematches; for an odd count the lowest-rated system that has
    not had a bye sits out (everyone is eligible again once all have had one). Equal ratings and equal
    gaps are broken by ``seed``, so the same inputs and seed always give the same pairing."""
    rng = random.Random(seed)
    systems = sorted(ratings)
    shuffled = systems[:]
    rng.shuffle(shuffled)
    tie_break = {s: i for i, s in enumerate(shuffled)}
    jitter_range = 1000
    jitter = {frozenset(p): rng.randrange(jitter_range) for p in itertools.combinations(systems, 2)}
    if len(systems) % 2 == 0:
        pairs, rematches = _best_matching(systems, ratings, played, jitter, jitter_range)
        return Pairing(pairs=tuple(pairs), rematches=tuple(rematches))
    eligible = [s for s in systems if s not in had_bye] or systems
    candidates = sorted(eligible, key=lambda s: (ratings[s], tie_break[s]))
    fallback: Pairing | None = None
    for bye in candidates:
        rest = [s for s in systems if s != bye]
        pairs, rematches = _best_matching(rest, ratings, played, jitter, jitter_range)
        pairing = Pairing(pairs=tuple(pairs), bye=bye, rematches=tuple(rematches))
        if not rematches:
            return pairing
        if fallback is None or len(rematches) < len(fallback.rematches):
            fallback = pairing
    assert fallback is not None
    return fallback


def round_robin_schedule(systems: Sequence[str]) -> tuple[Pairing, ...]:
    """Every pair exactly once, in rounds where nobody plays twice (circle method; a bye when odd)."""
    slots: list[str | None] = list(systems)
    if len(slots) % 2:
        slots.append(None)
    rounds = []
    for _ in range(len(slots) - 1):
        pairs = []
        bye = None
        for i in range(len(slots) // 2):
            a, b = slots[i], slots[-1 - i]
            if a is None or b is None:
                bye = b if a is None else a
            else:
                pairs.append((a, b))
        rounds.append(Pairing(pairs=tuple(pairs), bye=bye))
        slots = [slots[0], slots[-1], *slots[1:-1]]
    return tuple(rounds)


# --------------------------------------------------------------------------- tournament


class TournamentMode(StrEnum):
    SWISS = "swiss"
    ROUND_ROBIN = "round_robin"


class PlayedRound(_Frozen):
    pairing: Pairing
    matches: tuple[PlayedMatch, ...]
    ratings_after: dict[str, float]


class EloInterval(_Frozen):
    low: float | None
    high: float | None
    na_reason: str | None = None


class Standing(_Frozen):
    system: str
    elo: float
    elo_ci: EloInterval
    wins: int
    ties: int
    losses: int
    void: int
    matches: int
    byes: int


class TournamentResult(_Frozen):
    mode: TournamentMode
    rounds: tuple[PlayedRound, ...]
    standings: tuple[Standing, ...]  # best Elo first
    refitted: RefitRatings  # the seed's update run to its fixed point over all matches (module docstring)
    k: float
    initial_rating: float
    seed: int

    @property
    def n_matches(self) -> int:
        return sum(len(r.matches) for r in self.rounds)


def bootstrap_elo_ci(
    rounds: Sequence[Sequence[PlayedMatch]],
    systems: Sequence[str],
    k: float = DEFAULT_K,
    initial_rating: float = INITIAL_RATING,
    n_resamples: int = DEFAULT_BOOTSTRAP_RESAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, EloInterval]:
    """Percentile interval of each final Elo when the questions of every match are resampled with
    replacement and the played schedule is replayed (the pairings stay as they were played)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if n_resamples < 1:
        return {s: EloInterval(low=None, high=None, na_reason="bootstrap disabled") for s in systems}
    lacking = [
        f"{m.system_a} vs {m.system_b}"
        for matches in rounds
        for m in matches
        if m.result.n_questions > 0 and not m.result.outcomes
    ]
    if lacking:
        reason = f"no per-question outcomes for {lacking[0]}" + (
            f" and {len(lacking) - 1} more" if len(lacking) > 1 else ""
        )
        return {s: EloInterval(low=None, high=None, na_reason=reason) for s in systems}
    rng = np.random.default_rng(seed)
    index = {s: i for i, s in enumerate(systems)}
    ratings = np.full((n_resamples, len(systems)), float(initial_rating))
    for matches in rounds:
        deltas = np.zeros_like(ratings)
        for m in matches:
            n = m.result.n_questions
            if n == 0:
                continue
            outcomes = np.asarray(m.result.outcomes, dtype=float)
            share = outcomes[rng.integers(0, n, size=(n_resamples, n))].mean(axis=1)
            a, b = index[m.system_a], index[m.system_b]
            expected_a = 1.0 / (1.0 + 10.0 ** ((ratings[:, b] - ratings[:, a]) / 400.0))
            delta = k * (share - expected_a)
            deltas[:, a] += delta
            deltas[:, b] -= delta
        ratings += deltas
    tail = (1.0 - confidence) / 2
    low, high = np.quantile(ratings, [tail, 1.0 - tail], axis=0)
    return {s: EloInterval(low=float(low[i]), high=float(high[i])) for s, i in index.items()}


MatchFn = Callable[[str, str], MatchResult]


def run_tournament(
    systems: Sequence[str],
    match_fn: MatchFn,
    mode: TournamentMode = TournamentMode.SWISS,
    rounds: int | None = None,
    k: float = DEFAULT_K,
    initial_rating: float = INITIAL_RATING,
    seed: int = 0,
    n_bootstrap: int = DEFAULT_BOOTSTRAP_RESAMPLES,
    confidence: float = 0.95,
) -> TournamentResult:
    """Play a Swiss or round-robin tournament; ``match_fn(a, b)`` judges one match (A = first system).

    Swiss: ``swiss_rounds(n)`` rounds unless ``rounds`` is given; pairs by current Elo without rematches.
    Round robin: the circle-method schedule (all pairs), optionally only its first ``rounds`` rounds.
    """
    if len(set(systems)) != len(systems) or len(systems) < 2:
        raise ValueError(f"need at least two distinct systems, got {list(systems)}")
    ratings = dict.fromkeys(systems, float(initial_rating))
    played: set[frozenset[str]] = set()
    byes: dict[str, int] = dict.fromkeys(systems, 0)
    round_seeds = random.Random(seed)
    schedule: list[Pairing] | None = None
    if mode is TournamentMode.ROUND_ROBIN:
        schedule = list(round_robin_schedule(systems))[:rounds]
        n_rounds = len(schedule)
    else:
        n_rounds = swiss_rounds(len(systems)) if rounds is None else rounds
    played_rounds: list[PlayedRound] = []
    for round_index in range(n_rounds):
        round_seed = round_seeds.getrandbits(64)
        if schedule is not None:
            pairing = schedule[round_index]
        else:
            had_bye = {s for s, count in byes.items() if count > 0}
            pairing = swiss_pairs(ratings, played, seed=round_seed, had_bye=had_bye)
        matches = tuple(PlayedMatch(system_a=a, system_b=b, result=match_fn(a, b)) for a, b in pairing.pairs)
        ratings = apply_round(ratings, matches, k)
        played.update(frozenset(p) for p in pairing.pairs)
        if pairing.bye is not None:
            byes[pairing.bye] += 1
        played_rounds.append(PlayedRound(pairing=pairing, matches=matches, ratings_after=dict(ratings)))
    intervals = bootstrap_elo_ci(
        [r.matches for r in played_rounds], list(systems), k, initial_rating, n_bootstrap, confidence, seed
    )
    standings = sorted(
        (_standing(s, ratings[s], intervals[s], played_rounds, byes[s]) for s in systems),
        key=lambda st: (-st.elo, st.system),
    )
    return TournamentResult(
        mode=mode,
        rounds=tuple(played_rounds),
        standings=tuple(standings),
        refitted=refit_ratings(systems, [m for r in played_rounds for m in r.matches], initial_rating),
        k=k,
        initial_rating=initial_rating,
        seed=seed,
    )


def _standing(
    system: str, elo: float, interval: EloInterval, played_rounds: Sequence[PlayedRound], byes: int
) -> Standing:
    counts = dict.fromkeys(MatchOutcome, 0)
    void = matches = 0
    flip = {
        MatchOutcome.WIN: MatchOutcome.LOSS,
        MatchOutcome.LOSS: MatchOutcome.WIN,
        MatchOutcome.TIE: MatchOutcome.TIE,
    }
    for played_round in played_rounds:
        for m in played_round.matches:
            if system not in (m.system_a, m.system_b):
                continue
            matches += 1
            outcome = m.result.outcome_for_a
            if outcome is None:
                void += 1
            else:
                counts[outcome if system == m.system_a else flip[outcome]] += 1
    return Standing(
        system=system,
        elo=elo,
        elo_ci=interval,
        wins=counts[MatchOutcome.WIN],
        ties=counts[MatchOutcome.TIE],
        losses=counts[MatchOutcome.LOSS],
        void=void,
        matches=matches,
        byes=byes,
    )


# --------------------------------------------------------------------------- baseline tiers


class BaselineTier(StrEnum):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class Placement(StrEnum):
    ABOVE_HIGH = "above_high"
    LEVEL_HIGH = "level_with_high"
    HIGH_TO_MEDIUM = "between_high_and_medium"
    LEVEL_MEDIUM = "level_with_medium"
    MEDIUM_TO_LOW = "between_medium_and_low"
    LEVEL_LOW = "level_with_low"
    BELOW_LOW = "below_low"


class PlacementBasis(StrEnum):
    HEAD_TO_HEAD = "head_to_head"  # what it did against each baseline, read from high to low
    ELO = "elo"  # head-to-head results contradict each other, or one is missing: elo_against_baselines places it


class Baseline(_Frozen):
    """A reference system from earlier tournaments with its frozen Elo."""

    name: str
    tier: BaselineTier
    rating: float


class TierRecord(_Frozen):
    """The new system (as A) against one baseline: match result and per-question win / tie / loss counts
    (None when the match carries no per-question outcomes)."""

    baseline: Baseline
    outcome: MatchOutcome | None
    score_share: float | None
    question_wins: int | None
    question_ties: int | None
    question_losses: int | None


class TierPosition(_Frozen):
    records: tuple[TierRecord, ...]  # high, medium, low
    elo: MetricValue
    placement: Placement | None
    basis: PlacementBasis | None = None
    na_reason: str | None = None


def _tier_record(baseline: Baseline, result: MatchResult) -> TierRecord:
    share = result.score_a_total / result.n_questions if result.n_questions else None
    outcomes = result.outcomes if result.outcomes or result.n_questions == 0 else None
    return TierRecord(
        baseline=baseline,
        outcome=result.outcome_for_a,
        score_share=share,
        question_wins=None if outcomes is None else sum(o > 0.5 for o in outcomes),
        question_ties=None if outcomes is None else sum(o == 0.5 for o in outcomes),
        question_losses=None if outcomes is None else sum(o < 0.5 for o in outcomes),
    )


def elo_against_baselines(
    shares_and_ratings: Sequence[tuple[float, float]], k: float = DEFAULT_K, initial_rating: float = INITIAL_RATING
) -> MetricValue:
    """Seed 001, 3.3: the new system's Elo after one round against frozen baselines (their ratings do not
    move), starting from ``initial_rating``: ``R = R_0 + K sum_i (share_i - E(R_0, R_i))``, each match's
    update computed from the rating before the round, as in a tournament round. n/a without a scored match."""
    if not shares_and_ratings:
        return MetricValue(name="elo_against_baselines", value=None, na_reason="no scored match")
    delta = math.fsum(share - expected_score(initial_rating, rating) for share, rating in shares_and_ratings)
    return MetricValue(name="elo_against_baselines", value=initial_rating + k * delta, n=len(shares_and_ratings))


def tier_position(
    results: Sequence[tuple[Baseline, MatchResult]], k: float = DEFAULT_K, initial_rating: float = INITIAL_RATING
) -> TierPosition:
    """Seed 001, 3.3 single-system mode: the new system against a high, a medium and a low baseline.
    ``k`` and ``initial_rating`` should be those of the tournament that rated the baselines."""
    tiers = [b.tier for b, _ in results]
    if sorted(tiers) != sorted(BaselineTier):
        raise ValueError(f"need exactly one baseline per tier, got {tiers}")
    order = list(BaselineTier)
    ordered = sorted(results, key=lambda item: order.index(item[0].tier))
    ratings = [b.rating for b, _ in ordered]
    if not ratings[0] >= ratings[1] >= ratings[2]:
        raise ValueError(f"baseline ratings must not increase from high to low, got {ratings}")
    records = tuple(_tier_record(b, r) for b, r in ordered)
    scored = [(rec.score_share, rec.baseline.rating) for rec in records if rec.score_share is not None]
    elo = elo_against_baselines(scored, k, initial_rating)
    head_to_head = _head_to_head_placement(records)
    if head_to_head is not None:
        return TierPosition(records=records, elo=elo, placement=head_to_head, basis=PlacementBasis.HEAD_TO_HEAD,
                            na_reason=elo.na_reason)
    if elo.value is not None:
        above = sum(elo.value > r for r in ratings)
        placement = [Placement.BELOW_LOW, Placement.MEDIUM_TO_LOW, Placement.HIGH_TO_MEDIUM, Placement.ABOVE_HIGH]
        return TierPosition(records=records, elo=elo, placement=placement[above],
                            basis=PlacementBasis.ELO)
    return TierPosition(records=records, elo=elo, placement=None, na_reason=elo.na_reason)


# What the new system did against each tier, high to low -> where that puts it.
_BEATS, _LEVEL, _LOSES = 1, 0, -1
_PLACEMENT_BY_TIER = {
    BaselineTier.HIGH: (Placement.ABOVE_HIGH, Placement.LEVEL_HIGH),
    BaselineTier.MEDIUM: (Placement.HIGH_TO_MEDIUM, Placement.LEVEL_MEDIUM),
    BaselineTier.LOW: (Placement.MEDIUM_TO_LOW, Placement.LEVEL_LOW),
}


def _head_to_head_placement(records: Sequence[TierRecord]) -> Placement | None:
    """Placed by the matches themselves: above the first tier (from high) it beats, level with the first it
    scores exactly half against, below low when it loses to all three. Frozen baseline Elos only order the
    tiers; when they are close (a short tournament) a rating-based placement can put a system above a
    baseline it lost to. None when a match is void or the results contradict each other (it beats a
    higher tier but loses to a lower one): then the Elo against the baselines decides."""
    sides = []
    for record in records:
        if record.score_share is None:
            return None
        if abs(record.score_share - 0.5) <= _SCORE_TOLERANCE:
            sides.append(_LEVEL)
        else:
            sides.append(_BEATS if record.score_share > 0.5 else _LOSES)
    if sides != sorted(sides):  # high, medium, low: doing better against a higher tier is a contradiction
        return None
    for record, side in zip(records, sides, strict=True):
        beats, level = _PLACEMENT_BY_TIER[record.baseline.tier]
        if side == _BEATS:
            return beats
        if side == _LEVEL:
            return level
    return Placement.BELOW_LOW
