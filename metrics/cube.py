"""CuBE aggregation (seed 000, sections 4.3-5.5): bounded, weighted, retrieval-scaled scores.

Per judge, per answer set (closed book = zero-score set, the RAG system, oracle = full-score set) and per
dimension, the 0-10 scores of the samples are reduced to a trimmed mean. Dimension weights are the absolute
Pearson correlations between the RAG system's dimension scores and the retrieval rank score, normalized to
sum 1 (or weights the user gives). The weighted total of each answer set is then placed between the two
bounds, ``(RAG - closed_book) / (oracle - closed_book)``, and multiplied by R@k, the share of samples whose
gold document was retrieved.

Where DESIGN.md and seed 000 could be read two ways, the seed (and the numbers of its Tables 2-4) decides:

* The weights are applied to the trimmed means *first* and the weighted total is normalized *afterwards*
  ("Wgt. Score" of Table 4). Weighting the normalized dimension scores instead gives 75.90 for Qwen2.5-32B
  where the seed prints 81.20; normalizing the weighted totals gives 81.20.
* The weighted totals are recomputed from the dimension means and the (normalized) weights. Table 4
  follows those recomputed totals: for GPT-4.1-nano the oracle and RAG totals printed in Table 2 would give
  a Wgt. Score of 77.00, the recomputed ones give the printed 76.42.
* The spread across judges is the sample standard deviation (ddof=1): it reproduces the seed's
  "Mean +- SD" row, the population sd does not (e.g. relevance 4.50 vs 3.90).
* The seed does not state the trimming proportion of its trimmed mean; the default here is 10 % cut
  from each end, with exactly ``scipy.stats.trim_mean`` semantics (documented choice, not the seed's).
* Rank score (5.3): the seed maps a retrieved rank r to ``10 - r`` (its TOP-N is 8), adds one point when the gold
  document was the only document retrieved ("to achieve a full score"), and gives 0 when it was not retrieved.
  At another TOP-N the seed's formula and its shift ``top_n + 2 - r`` differ (`RankScoreRule`): ``10 - r`` is the
  default, defined up to TOP-N 9 (at rank 10 a retrieved document would score as a miss).
* The RAG set is read two ways (`CubeReading`). Seed 000 calls its weighted aggregate (78.95) "the performance on
  successfully retrieved cases" and multiplies it by R@k (80.41 %) for the CuBE score (63.48): the RAG set's means
  are taken over the samples whose gold document was retrieved (RETRIEVED, the default whenever the caller says
  which samples those are). Averaging every sample's RAG score instead (ALL) counts a miss twice: once in the
  mean, once in R@k. The bounds are the whole closed-book and oracle sets in both readings: the seed builds them
  for every question and does not say it restricts them (an open choice; the README says so).

All scores are fractions (the normalized scores lie in [0, 1] when the RAG set falls between its bounds);
the seed prints them x100. Nothing is clipped: a RAG score outside its bounds is reported as it is.
Undefined results are ``MetricValue(value=None, na_reason=...)``, never NaN or 0.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from ragcourt.metrics.agreement import pearson
from ragcourt.schema import ConditionKind, MetricValue
from ragcourt.schema.config import RankScoreRule

DEFAULT_TRIM_PROPORTION = 0.1
RANK_SCORE = "the rank score"
SEED_RULE_MAX_TOP_N = 9  # 10 - rank scores rank 9 with 1, the seed's lowest; rank 10 would score 0, as a miss


class AnswerSet(StrEnum):
    """The three answer sets CuBE scores with the same judges and rubrics."""

    CLOSED_BOOK = "closed_book"  # zero-score set: the model answers without any retrieved material
    RAG = "rag"  # the system under test
    ORACLE = "oracle"  # full-score set: the model answers from the single gold document

    @classmethod
    def from_condition(cls, kind: ConditionKind) -> AnswerSet:
        by_condition = {
            ConditionKind.CLOSED_BOOK: cls.CLOSED_BOOK,
            ConditionKind.NORMAL: cls.RAG,
            ConditionKind.ORACLE: cls.ORACLE,
        }
        if kind not in by_condition:
            raise ValueError(f"condition {kind} is not a CuBE answer set")
        return by_condition[kind]


class CubeReading(StrEnum):
    """Which RAG samples the RAG set's dimension means average before the weighted score is multiplied by R@k."""

    RETRIEVED = "retrieved"  # seed 000, 5.4-5.5: the samples whose gold document was retrieved
    ALL = "all"  # every sample: a miss lowers the mean and, again, R@k

    @property
    def label(self) -> str:
        return {CubeReading.RETRIEVED: "retrieved cases (seed 000)", CubeReading.ALL: "all samples"}[self]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _na(name: str, reason: str, n: int = 0, n_unscored: int = 0) -> MetricValue:
    return MetricValue(name=name, value=None, na_reason=reason, n=n, n_unscored=n_unscored)


# --------------------------------------------------------------------------- per-dimension aggregation


def trimmed_mean(
    values: Sequence[float | None], proportion: float = DEFAULT_TRIM_PROPORTION, name: str = "trimmed_mean"
) -> MetricValue:
    """Mean after cutting ``int(proportion * n)`` of the sorted scored values from each end.

    Same semantics as ``scipy.stats.trim_mean``. None entries are unscored samples: they are excluded
    and counted in ``n_unscored``; ``n`` is the number of scored values.
    """
    if not 0.0 <= proportion < 0.5:
        raise ValueError(f"trim proportion must be in [0, 0.5), got {proportion}")
    scored = sorted(float(v) for v in values if v is not None)
    n_unscored = len(values) - len(scored)
    if not scored:
        return _na(name, "no scored values: every one is unscored or missing (see the unscored and no-verdict "
                   "counts; rerun or review the unscored verdicts)", n=0, n_unscored=n_unscored)
    cut = int(proportion * len(scored))
    kept = scored[cut : len(scored) - cut]
    return MetricValue(name=name, value=math.fsum(kept) / len(kept), n=len(scored), n_unscored=n_unscored)


def rank_score(rank: int | None, top_n: int, rule: RankScoreRule = RankScoreRule.SEED,
               only_gold_retrieved: bool = False) -> int:
    """Seed 000, 5.3: ``10 - rank`` (rule SEED) or ``top_n + 2 - rank`` (rule TOP_N) for a retrieved gold document
    (1-based rank), +1 when the gold document was the only document retrieved, 0 when it was not retrieved (rank 0
    or None). ValueError for the SEED rule beyond TOP-N 9 (`SEED_RULE_MAX_TOP_N`)."""
    if top_n < 1:
        raise ValueError(f"top_n must be >= 1, got {top_n}")
    if rule is RankScoreRule.SEED and top_n > SEED_RULE_MAX_TOP_N:
        raise ValueError(_seed_rule_too_deep(top_n))
    if rank is None or rank == 0:
        if only_gold_retrieved:
            raise ValueError("the gold document cannot be the only retrieved document and not retrieved")
        return 0
    if not 1 <= rank <= top_n:
        raise ValueError(f"rank must be 0 (not retrieved) or in 1..{top_n}, got {rank}")
    if only_gold_retrieved and rank != 1:
        raise ValueError(f"the only retrieved document has rank 1, got {rank}")
    full = 10 if rule is RankScoreRule.SEED else top_n + 2  # the gold document alone: rank 1 and the extra point
    return full - rank + (1 if only_gold_retrieved else 0)


def _seed_rule_too_deep(top_n: int) -> str:
    return (f"seed 000's rank score 10 - rank is defined up to TOP-N {SEED_RULE_MAX_TOP_N} (the seed's is 8): "
            "from rank 10 on, a retrieved gold document would score no more than a missed one, and this run's TOP-N "
            f"is {top_n}; set rank_score: top_n (top_n + 2 - rank) in the config, or give every dimension a fixed "
            "weight")


class RankScores(_Frozen):
    """Seed 000, 5.3: every sample's rank score under one rule, aligned with the samples.

    ranks: the gold document's 1-based rank in the normal retrieval, 0 when it was not retrieved; top_n: the run's
    TOP-N; only_gold: whether the gold document was the only document retrieved. scores is None, with na_reason,
    when the rule does not reach the run's TOP-N (`score_ranks`).
    """

    rule: RankScoreRule
    top_n: int
    ranks: tuple[int, ...]
    only_gold: tuple[bool, ...]
    scores: tuple[int, ...] | None
    na_reason: str | None = None

    @property
    def formula(self) -> str:
        """The rank score of a retrieved gold document in this run, as the reports print it."""
        return "10 - rank" if self.rule is RankScoreRule.SEED else f"{self.top_n + 2} - rank"

    @property
    def description(self) -> str:
        """What the rank score is, for the notes beside the automatic weights."""
        if self.rule is RankScoreRule.SEED:
            formula = ("10 - rank of the gold document in the normal retrieval (seed 000's own, defined up to "
                       f"TOP-N {SEED_RULE_MAX_TOP_N})")
        else:
            formula = ("top_n + 2 - rank of the gold document in the normal retrieval "
                       f"({self.formula} at this run's TOP-N; rank_score: top_n)")
        return (f"rank score = {formula}, a point more when the gold document was the only document retrieved, 0 "
                "when it was not retrieved")


def score_ranks(ranks: Sequence[int | None], top_n: int, rule: RankScoreRule = RankScoreRule.SEED,
                only_gold_retrieved: Sequence[bool] | None = None) -> RankScores:
    """The `RankScores` of samples whose gold documents sit at `ranks` (0 or None: not retrieved) of a run's
    TOP-N; `only_gold_retrieved` (aligned with the ranks; default: none) marks the samples whose normal retrieval
    was the gold document alone."""
    only_gold = tuple(only_gold_retrieved) if only_gold_retrieved is not None else (False,) * len(ranks)
    if len(only_gold) != len(ranks):
        raise ValueError("only_gold_retrieved must align with ranks")
    kept = tuple(r or 0 for r in ranks)
    if rule is RankScoreRule.SEED and top_n > SEED_RULE_MAX_TOP_N:
        return RankScores(rule=rule, top_n=top_n, ranks=kept, only_gold=only_gold, scores=None,
                          na_reason=_seed_rule_too_deep(top_n))
    scores = tuple(rank_score(r, top_n, rule, g) for r, g in zip(kept, only_gold, strict=True))
    return RankScores(rule=rule, top_n=top_n, ranks=kept, only_gold=only_gold, scores=scores)


def is_retrieved(rank: int | None) -> bool:
    return rank is not None and rank != 0


def recall_at_k(ranks: Sequence[int | None]) -> MetricValue:
    """Share of samples whose gold document was retrieved (rank 1..k; 0 or None = not retrieved)."""
    if not ranks:
        return _na("r_at_k", "no samples")
    hits = sum(1 for r in ranks if is_retrieved(r))
    return MetricValue(name="r_at_k", value=hits / len(ranks), n=len(ranks))


# --------------------------------------------------------------------------- weights


class DimensionWeights(_Frozen):
    """Weights per dimension summing to 1, or n/a with a reason.

    ``correlations`` holds the Pearson r with the rank score per dimension for automatic weights
    (a dimension whose correlation is undefined gets weight 0; its MetricValue says why).
    """

    weights: dict[str, float] | None
    na_reason: str | None = None
    correlations: dict[str, MetricValue] = {}


def auto_weights(
    dimension_scores: Mapping[str, Sequence[float | None]], rank_scores: Sequence[float | None],
    rank_score_is: str | None = None,
) -> DimensionWeights:
    """|Pearson(dimension score, rank score)| per dimension, normalized to sum 1 (seed 000, 5.3 and Table 3).

    ``dimension_scores`` are the per-sample scores of the RAG answer set, aligned with ``rank_scores``;
    ``rank_score_is`` says what the rank score is (`RankScores.description`) when no weight can be had.
    """
    correlations = {
        dim: pearson(scores, rank_scores, name=f"pearson_{dim}_rank", labels=("the RAG score", RANK_SCORE))
        for dim, scores in dimension_scores.items()
    }
    magnitudes = {dim: abs(c.value) if c.value is not None else 0.0 for dim, c in correlations.items()}
    total = math.fsum(magnitudes.values())
    if total == 0.0:
        grouped: dict[str, list[str]] = {}
        for d, c in correlations.items():
            grouped.setdefault(c.na_reason or "r = 0", []).append(d)
        reasons = "; ".join(f"{', '.join(dims)}: {reason}" for reason, dims in grouped.items())
        return DimensionWeights(
            weights=None,
            na_reason=f"no dimension correlates with the rank score{f' ({rank_score_is})' if rank_score_is else ''}"
            f": {reasons or 'no dimensions'}; "
            "automatic weights are undefined, so give every dimension a fixed numeric weight (weight: 1 in the "
            "config's dimensions weighs them equally)",
            correlations=correlations,
        )
    return DimensionWeights(
        weights={dim: m / total for dim, m in magnitudes.items()}, correlations=correlations
    )


def user_weights(weights: Mapping[str, float]) -> DimensionWeights:
    """Weights given by the user, normalized to sum 1."""
    negative = [d for d, w in weights.items() if w < 0 or not math.isfinite(w)]
    if negative:
        raise ValueError(f"weights must be finite and >= 0: {negative}")
    total = math.fsum(weights.values())
    if total == 0.0:
        return DimensionWeights(weights=None, na_reason="the configured weights sum to 0: give at least one "
                                "dimension a weight above 0")
    return DimensionWeights(weights={d: w / total for d, w in weights.items()})


# --------------------------------------------------------------------------- totals and bounds


def weighted_total(
    dimension_means: Mapping[str, float | None], weights: Mapping[str, float], name: str = "weighted_total"
) -> MetricValue:
    """Sum over dimensions of weight x mean; n/a when a dimension with a positive weight has no mean."""
    if set(dimension_means) != set(weights):
        raise ValueError(f"dimensions {sorted(dimension_means)} do not match weights {sorted(weights)}")
    missing = [d for d, w in weights.items() if w > 0 and dimension_means[d] is None]
    if missing:
        return _na(name, f"no mean for weighted dimension(s) {sorted(missing)}: no scored verdict (see the unscored "
                   "and no-verdict counts; rerun or review the unscored verdicts, or give those dimensions weight 0)")
    value = math.fsum(w * float(dimension_means[d]) for d, w in weights.items() if w > 0)  # type: ignore[arg-type]
    return MetricValue(name=name, value=value, n=len(weights))


def normalized(
    rag: float | None, closed_book: float | None, oracle: float | None, name: str = "normalized"
) -> MetricValue:
    """Seed 000, eq. (1): ``(RAG - closed_book) / (oracle - closed_book)``.

    n/a when a score is missing or the bounds are degenerate (oracle <= closed book: the judge does not
    score the gold-document answers above the no-retrieval answers, so there is no scale to place RAG on).
    """
    if rag is None or closed_book is None or oracle is None:
        missing = [
            s for s, v in (("rag", rag), ("closed_book", closed_book), ("oracle", oracle)) if v is None
        ]
        return _na(name, f"missing score(s): {missing}: no scored verdict for them (see the unscored and no-verdict "
                   "counts; rerun or review the unscored verdicts)")
    if oracle <= closed_book:
        return _na(name, f"degenerate bounds: oracle {oracle:.4g} <= closed book {closed_book:.4g}: the judge does "
                   "not score the gold-document answers above the no-context ones, so there is no scale to place "
                   "RAG on (check the oracle answers and the judge's rubric, or use another judge)")
    return MetricValue(name=name, value=(rag - closed_book) / (oracle - closed_book), n=1)


def cube_score(normalized_weighted: MetricValue, r_at_k: MetricValue) -> MetricValue:
    """CuBE score = normalized weighted total x R@k."""
    if normalized_weighted.value is None:
        return _na("cube_score", f"weighted score n/a: {normalized_weighted.na_reason}")
    if r_at_k.value is None:
        return _na("cube_score", f"R@k n/a: {r_at_k.na_reason}")
    return MetricValue(name="cube_score", value=normalized_weighted.value * r_at_k.value, n=r_at_k.n)


# --------------------------------------------------------------------------- report across judges


class Spread(_Frozen):
    """Mean and sample standard deviation (ddof=1) across judges; sd n/a below two values."""

    mean: float | None
    sd: float | None
    n: int
    na_reason: str | None = None


def spread(values: Sequence[float | None]) -> Spread:
    present = [v for v in values if v is not None]
    if not present:
        return Spread(mean=None, sd=None, n=0, na_reason="no defined values")
    mean = math.fsum(present) / len(present)
    if len(present) < 2:
        return Spread(mean=mean, sd=None, n=1, na_reason="sd needs at least 2 values")
    reason = None if len(present) == len(values) else f"{len(values) - len(present)} value(s) n/a"
    return Spread(mean=mean, sd=statistics.stdev(present), n=len(present), na_reason=reason)


class ReadingFigures(_Frozen):
    """One reading of the RAG set (`CubeReading`): its trimmed dimension means and weighted total, placed between
    the bounds (the normalized dimensions and Wgt. Score), and the CuBE score (Wgt. Score x R@k)."""

    reading: CubeReading
    rag_means: dict[str, MetricValue]
    rag_total: MetricValue
    normalized_dimensions: dict[str, MetricValue]
    weighted_score: MetricValue  # normalized weighted total ("Wgt. Score")
    cube_score: MetricValue


class JudgeCube(_Frozen):
    """One judge's row of Table 4 with everything it was computed from: the bounds (every sample), each reading
    of the RAG set, and which reading is the default. dimension_means, weighted_totals, normalized_dimensions,
    weighted_score and cube_score are the default reading's."""

    judge: str
    weights: DimensionWeights
    bound_means: dict[AnswerSet, dict[str, MetricValue]]  # closed book and oracle
    bound_totals: dict[AnswerSet, MetricValue]
    readings: dict[CubeReading, ReadingFigures]
    reading: CubeReading

    @property
    def default(self) -> ReadingFigures:
        return self.readings[self.reading]

    @property
    def dimension_means(self) -> dict[AnswerSet, dict[str, MetricValue]]:
        return {aset: self.default.rag_means if aset is AnswerSet.RAG else self.bound_means[aset] for aset in AnswerSet}

    @property
    def weighted_totals(self) -> dict[AnswerSet, MetricValue]:
        return {aset: self.default.rag_total if aset is AnswerSet.RAG else self.bound_totals[aset] for aset in AnswerSet}

    @property
    def normalized_dimensions(self) -> dict[str, MetricValue]:
        return self.default.normalized_dimensions

    @property
    def weighted_score(self) -> MetricValue:
        return self.default.weighted_score

    @property
    def cube_score(self) -> MetricValue:
        return self.default.cube_score


class ReadingSpread(_Frozen):
    """Mean +- sd across judges of one reading's normalized dimensions, Wgt. Score and CuBE score."""

    dimensions: dict[str, Spread]
    weighted_score: Spread
    cube_score: Spread


class CubeReport(_Frozen):
    """Table 4 per judge, R@k, and the spread across judges per reading; the spread properties are the default
    reading's. rank_scores: what the automatic weights correlate with (None when the weights were given)."""

    judges: tuple[JudgeCube, ...]
    r_at_k: MetricValue
    reading: CubeReading
    spreads: dict[CubeReading, ReadingSpread]
    rank_scores: RankScores | None = None

    @property
    def reading_order(self) -> tuple[CubeReading, ...]:
        """The readings the report holds, the default first."""
        return (self.reading, *(r for r in self.spreads if r is not self.reading))

    @property
    def dimension_spread(self) -> dict[str, Spread]:
        return self.spreads[self.reading].dimensions

    @property
    def weighted_score_spread(self) -> Spread:
        return self.spreads[self.reading].weighted_score

    @property
    def cube_score_spread(self) -> Spread:
        return self.spreads[self.reading].cube_score


ScoresPerSet = Mapping[AnswerSet, Mapping[str, Sequence[float | None] | float]]
NO_RETRIEVED_CASE = ("no sample's gold document was retrieved (R@k = 0): seed 000's reading averages the RAG "
                     "scores of the retrieved cases, and there are none (see the all-samples reading)")
AGGREGATED_RAG = ("the RAG scores are aggregated means: the retrieved cases cannot be picked out of them (give "
                  "per-sample scores)")


def _dimension_mean(scores: Sequence[float | None] | float, dim: str, proportion: float,
                    keep: Sequence[bool] | None = None) -> MetricValue:
    """The trimmed mean of a dimension's per-sample scores (of the samples `keep` marks, when given), or an
    already aggregated mean as it is."""
    if isinstance(scores, int | float):
        return MetricValue(name=f"mean_{dim}", value=float(scores), n=1)
    if keep is not None:
        if len(keep) != len(scores):
            raise ValueError(f"retrieved must align with the per-sample scores of {dim}: {len(keep)} vs {len(scores)}")
        scores = [s for s, k in zip(scores, keep, strict=True) if k]
    return trimmed_mean(scores, proportion, name=f"trimmed_mean_{dim}")


def _judge_weights(
    judge: str,
    per_set: ScoresPerSet,
    weights: Mapping[str, Mapping[str, float]] | None,
    rank_scores: RankScores | None,
) -> DimensionWeights:
    if weights is not None:
        if judge not in weights:
            raise ValueError(f"no weights for judge {judge}")
        return user_weights(weights[judge])
    rag = per_set[AnswerSet.RAG]
    if rank_scores is None:
        return DimensionWeights(weights=None, na_reason="neither weights nor rank scores given: give fixed weights "
                                "or the samples' rank scores")
    if rank_scores.scores is None:
        return DimensionWeights(weights=None, na_reason=f"no rank score to correlate with: {rank_scores.na_reason}")
    if any(isinstance(s, int | float) for s in rag.values()):
        return DimensionWeights(
            weights=None, na_reason="automatic weights need per-sample RAG scores, got aggregated means: give "
            "fixed weights or the per-sample scores"
        )
    return auto_weights({d: s for d, s in rag.items() if not isinstance(s, int | float)}, rank_scores.scores,
                        rank_scores.description)


def _total(means: Mapping[str, MetricValue], weights: DimensionWeights, name: str) -> MetricValue:
    if weights.weights is None:
        return _na(name, f"weights n/a: {weights.na_reason}")
    return weighted_total({d: m.value for d, m in means.items()}, weights.weights, name=name)


def _reading_na(reading: CubeReading, dims: Sequence[str], reason: str) -> ReadingFigures:
    """A reading none of whose figures exists, for one reason (no retrieved case, aggregated RAG scores)."""
    return ReadingFigures(reading=reading, rag_means={d: _na(f"trimmed_mean_{d}", reason) for d in dims},
                          rag_total=_na(f"weighted_total_{AnswerSet.RAG}", reason),
                          normalized_dimensions={d: _na(f"normalized_{d}", reason) for d in dims},
                          weighted_score=_na("weighted_score", reason), cube_score=_na("cube_score", reason))


def _reading(
    reading: CubeReading,
    rag_means: dict[str, MetricValue],
    bound_means: Mapping[AnswerSet, Mapping[str, MetricValue]],
    bound_totals: Mapping[AnswerSet, MetricValue],
    weights: DimensionWeights,
    r_at_k: MetricValue,
) -> ReadingFigures:
    closed, oracle = bound_means[AnswerSet.CLOSED_BOOK], bound_means[AnswerSet.ORACLE]
    normalized_dimensions = {
        d: _na(f"normalized_{d}", f"no mean to place between the bounds: {m.na_reason}") if m.value is None
        else normalized(m.value, closed[d].value, oracle[d].value, name=f"normalized_{d}")
        for d, m in rag_means.items()
    }
    missing = [d for d, m in rag_means.items() if m.value is None and (weights.weights or {}).get(d, 0) > 0]
    if missing:
        rag_total = _na(f"weighted_total_{AnswerSet.RAG}", f"no mean for weighted dimension(s) {sorted(missing)}: "
                        f"{rag_means[missing[0]].na_reason} (or give those dimensions weight 0)")
    else:
        rag_total = _total(rag_means, weights, f"weighted_total_{AnswerSet.RAG}")
    if weights.weights is None:
        weighted_score = _na("weighted_score", f"weights n/a: {weights.na_reason}")
    else:
        weighted_score = normalized(rag_total.value, bound_totals[AnswerSet.CLOSED_BOOK].value,
                                    bound_totals[AnswerSet.ORACLE].value, name="weighted_score")
    return ReadingFigures(reading=reading, rag_means=rag_means, rag_total=rag_total,
                          normalized_dimensions=normalized_dimensions, weighted_score=weighted_score,
                          cube_score=cube_score(weighted_score, r_at_k))


def _judge_cube(
    judge: str,
    per_set: ScoresPerSet,
    weights: DimensionWeights,
    r_at_k: MetricValue,
    proportion: float,
    retrieved: Sequence[bool] | None,
) -> JudgeCube:
    if set(per_set) != set(AnswerSet):
        raise ValueError(f"judge {judge} needs scores for all answer sets, got {sorted(per_set)}")
    dims = list(per_set[AnswerSet.RAG])
    if any(set(per_set[aset]) != set(dims) for aset in AnswerSet):
        raise ValueError(f"judge {judge} must score the same dimensions in every answer set")
    bounds = (AnswerSet.CLOSED_BOOK, AnswerSet.ORACLE)
    bound_means = {aset: {d: _dimension_mean(per_set[aset][d], d, proportion) for d in dims} for aset in bounds}
    bound_totals = {aset: _total(bound_means[aset], weights, f"weighted_total_{aset}") for aset in bounds}
    rag = per_set[AnswerSet.RAG]

    def read(reading: CubeReading, keep: Sequence[bool] | None) -> ReadingFigures:
        means = {d: _dimension_mean(rag[d], d, proportion, keep) for d in dims}
        return _reading(reading, means, bound_means, bound_totals, weights, r_at_k)

    readings = {CubeReading.ALL: read(CubeReading.ALL, None)}
    if retrieved is not None:
        if any(isinstance(s, int | float) for s in rag.values()):
            seed_reading = _reading_na(CubeReading.RETRIEVED, dims, AGGREGATED_RAG)
        elif not any(retrieved):
            seed_reading = _reading_na(CubeReading.RETRIEVED, dims, NO_RETRIEVED_CASE)
        else:
            seed_reading = read(CubeReading.RETRIEVED, retrieved)
        readings = {CubeReading.RETRIEVED: seed_reading, **readings}
    return JudgeCube(judge=judge, weights=weights, bound_means=bound_means, bound_totals=bound_totals,
                     readings=readings, reading=next(iter(readings)))


def _reading_spread(figures: Sequence[ReadingFigures], dims: Sequence[str]) -> ReadingSpread:
    """One reading's figures of every judge, spread across the judges."""
    return ReadingSpread(
        dimensions={d: spread([f.normalized_dimensions[d].value for f in figures]) for d in dims},
        weighted_score=spread([f.weighted_score.value for f in figures]),
        cube_score=spread([f.cube_score.value for f in figures]),
    )


def cube_report(
    scores_per_judge: Mapping[str, ScoresPerSet],
    r_at_k: float | MetricValue,
    weights: Mapping[str, Mapping[str, float]] | None = None,
    rank_scores: RankScores | None = None,
    proportion: float = DEFAULT_TRIM_PROPORTION,
    retrieved: Sequence[bool] | None = None,
) -> CubeReport:
    """Table 4 of seed 000: per judge the normalized dimensions, Wgt. Score and CuBE score, and mean +- sd.

    ``scores_per_judge``: judge -> answer set -> dimension -> per-sample scores (trimmed here) or an already
    aggregated mean. ``weights``: judge -> dimension -> weight (normalized here); when None, weights come
    from ``rank_scores`` (aligned with each judge's per-sample RAG scores) by ``auto_weights``.
    ``retrieved``: per sample, whether its gold document was retrieved (aligned with the per-sample scores).
    Given, the default reading is seed 000's (`CubeReading.RETRIEVED`: the RAG means over those samples) and
    the all-samples reading is reported beside it; not given, the RAG scores are read as given
    (`CubeReading.ALL`; e.g. Table 2's already aggregated means).
    """
    if not scores_per_judge:
        raise ValueError("cube_report needs at least one judge")
    dims = {tuple(sorted(per_set[AnswerSet.RAG])) for per_set in scores_per_judge.values()}
    if len(dims) != 1:
        raise ValueError(f"all judges must score the same dimensions, got {sorted(dims)}")
    r_value = r_at_k if isinstance(r_at_k, MetricValue) else MetricValue(name="r_at_k", value=float(r_at_k))
    rows = tuple(
        _judge_cube(judge, per_set, _judge_weights(judge, per_set, weights, rank_scores), r_value, proportion,
                    retrieved)
        for judge, per_set in scores_per_judge.items()
    )
    first = rows[0]
    return CubeReport(judges=rows, r_at_k=r_value, reading=first.reading,
                      spreads={reading: _reading_spread([row.readings[reading] for row in rows], next(iter(dims)))
                               for reading in first.readings},
                      rank_scores=None if weights is not None else rank_scores)

# --------------------------------------------------------------------------- human ratings (Table 5)


class HumanCube(_Frozen):
    """Seed 000, Table 5 ("Comparison of CuBE and human ratings"): people's 0-10 ratings of the RAG answers
    placed between the same closed-book and oracle bounds as the judges' scores. Per judge, the figures of the
    human ratings against that judge's bounds and weights (every reading of the report); spreads: mean +- sd
    across the judges' bounds. n_rated: samples with at least one human rating."""

    judges: dict[str, dict[CubeReading, ReadingFigures]]
    reading: CubeReading
    spreads: dict[CubeReading, ReadingSpread]
    n_rated: int


def human_cube(
    report: CubeReport,
    human: Mapping[str, Sequence[float | None]],
    proportion: float = DEFAULT_TRIM_PROPORTION,
    retrieved: Sequence[bool] | None = None,
) -> HumanCube:
    """Table 5's human row: ``human`` (dimension -> per-sample 0-10 rating, None = not rated, aligned with the
    samples of the report's per-sample scores) trimmed per dimension, then normalized, weighted and x R@k with
    each judge's bounds and weights, in every reading of ``report`` (``retrieved`` as given to `cube_report`).
    A dimension without ratings is n/a with its reason."""
    first = report.judges[0]
    dims = list(first.default.rag_means)
    lengths = {len(scores) for scores in human.values()}
    if len(lengths) > 1:
        raise ValueError(f"the human ratings of every dimension must align with the samples, got lengths {lengths}")
    n = next(iter(lengths), 0)
    keeps: dict[CubeReading, Sequence[bool] | None] = {CubeReading.ALL: None}
    if CubeReading.RETRIEVED in first.readings:
        if retrieved is None or len(retrieved) != n:
            raise ValueError("the report reads the retrieved cases: give `retrieved`, aligned with the ratings")
        keeps[CubeReading.RETRIEVED] = retrieved
    unrated = "no human rating for this dimension (add a column for it to the ratings file)"
    judges: dict[str, dict[CubeReading, ReadingFigures]] = {}
    for row in report.judges:
        figures = {}
        for reading in row.readings:
            keep = keeps[reading]
            if keep is not None and not any(keep):
                figures[reading] = _reading_na(reading, dims, NO_RETRIEVED_CASE)
                continue
            means = {d: _dimension_mean(human[d], d, proportion, keep) if d in human
                     else _na(f"trimmed_mean_{d}", unrated) for d in dims}
            figures[reading] = _reading(reading, means, row.bound_means, row.bound_totals, row.weights,
                                        report.r_at_k)
        judges[row.judge] = figures
    spreads = {reading: _reading_spread([judges[row.judge][reading] for row in report.judges], sorted(dims))
               for reading in first.readings}
    rated = sum(1 for i in range(n) if any(human[d][i] is not None for d in human))
    return HumanCube(judges=judges, reading=report.reading, spreads=spreads, n_rated=rated)


# --------------------------------------------------------------------------- retrieved-only analysis (5.3)


class DimensionRetrievalSplit(_Frozen):
    """One dimension: correlation with the rank score on all samples and on retrieved samples only,
    and the mean and sd (sample, ddof=1) of the scores on retrieved samples."""

    correlation_all: MetricValue
    correlation_retrieved: MetricValue
    mean_retrieved: float | None
    sd_retrieved: float | None
    n_retrieved: int


def retrieved_only_analysis(
    dimension_scores: Mapping[str, Sequence[float | None]], rank_scores: RankScores
) -> dict[str, DimensionRetrievalSplit]:
    """Seed 000, 5.3: does rank matter once the gold document is retrieved at all?

    The seed finds the correlation with rank drops from moderate (all samples) to weak (retrieved ones):
    whether the gold document is retrieved matters, its position among the top N much less. Both correlations
    are n/a, with the reason, when the rule gives no rank scores.
    """
    ranks, values = rank_scores.ranks, rank_scores.scores
    retrieved = [i for i, r in enumerate(ranks) if is_retrieved(r)]

    def correlation(scores: Sequence[float | None], indices: Sequence[int], name: str) -> MetricValue:
        if values is None:
            return _na(name, f"no rank score: {rank_scores.na_reason}")
        return pearson([scores[i] for i in indices], [values[i] for i in indices], name=name,
                       labels=("the RAG score", RANK_SCORE))

    result: dict[str, DimensionRetrievalSplit] = {}
    for dim, scores in dimension_scores.items():
        if len(scores) != len(ranks):
            raise ValueError(f"scores of {dim} must align with ranks")
        kept = [scores[i] for i in retrieved]
        kept_scored = [float(s) for s in kept if s is not None]
        summary = spread(kept_scored)
        result[dim] = DimensionRetrievalSplit(
            correlation_all=correlation(scores, range(len(ranks)), f"pearson_{dim}_rank_all"),
            correlation_retrieved=correlation(scores, retrieved, f"pearson_{dim}_rank_retrieved"),
            mean_retrieved=summary.mean,
            sd_retrieved=summary.sd,
            n_retrieved=len(kept_scored),
        )
    return result
