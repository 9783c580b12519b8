"""DICE ranking (seed 001, 3.3): a Swiss (or round-robin) tournament of RAG systems judged pairwise, and the
single-system mode against High / Medium / Low baselines.

Systems are answer sets: precomputed JSONL files (one per system: id, question, answer, contexts?) or live
`RAGSystem`s answered once up front. Every match is the pairwise checks, in both orders (the default) or in
one seeded order per question (seed 001's protocol), of the same questions (all common questions, or a
seeded sample of them) by the whole jury and any scalar threshold judges (graphs/tournament.py).
The pairing, Elo and bootstrap intervals are `metrics.dice.run_tournament`, which calls matches
synchronously: it runs in a worker thread and hands each match to the event loop that owns the jury.
"""

from __future__ import annotations

import asyncio
import json
import random
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field

from ragcourt.data.loaders import load_samples
from ragcourt.graphs.tournament import build_match_graph
from ragcourt.judging import Judge
from ragcourt.metrics.dice import (
    DEFAULT_BOOTSTRAP_RESAMPLES,
    DEFAULT_K,
    INITIAL_RATING,
    Baseline,
    BaselineTier,
    MatchFn,
    MatchResult,
    ProbabilitySource,
    TierPosition,
    TournamentMode,
    TournamentResult,
    position_bias_rate,
    round_robin_schedule,
    run_tournament,
    swiss_rounds,
    tier_position,
)
from ragcourt.nodes.tournament_state import (
    AnswerSet,
    JudgeCallCount,
    MatchContext,
    OrderProtocol,
    QuestionOutcome,
    ScoreScheme,
)
from ragcourt.schema import NORMAL, MetricValue, RunInfo, Sample, content_id
from ragcourt.schema.config import PairwiseJury, ThresholdJudgeSpec
from ragcourt.stores.records import RecordStore
from ragcourt.systems import RAGSystem

POOL_MANIFEST = "baselines.json"
T = TypeVar("T")


# --------------------------------------------------------------------------- answer sets


def load_answer_set(path: Path, name: str | None = None) -> AnswerSet:
    """A system's answers from a samples file (JSONL / JSON / CSV: id, question, answer, contexts?).

    Rows without an answer are refused: a missing answer is not an empty one. DatasetError names the line.
    """
    samples = load_samples(path).samples
    unanswered = [s.id for s in samples if s.answer is None]
    if unanswered:
        raise ValueError(f"{path}: {len(unanswered)} rows have no 'answer' (first: id {unanswered[0]})")
    return AnswerSet(name=name or Path(path).stem, answers={s.id: s for s in samples}, source=str(path))


async def answer_set_from_system(
    name: str, system: RAGSystem, questions: Sequence[Sample], k: int = 5, score_threshold: float | None = None
) -> AnswerSet:
    """Ask a live system every question once (normal condition): its answers and retrieved chunks."""

    async def one(question: Sample) -> Sample:
        chunks = await system.retrieve(question, k, score_threshold)
        generation = await system.generate(question, chunks, NORMAL)
        return question.model_copy(update={"answer": generation.text, "contexts": tuple(chunks)})

    answered = await asyncio.gather(*(one(q) for q in questions))
    return AnswerSet(name=name, answers={s.id: s for s in answered}, source=f"live:{getattr(system, 'name', name)}")


def common_questions(
    answer_sets: Sequence[AnswerSet], references: Mapping[str, Sample] | None = None
) -> tuple[list[Sample], int]:
    """The questions every system answered (in the first set's order), with the reference answer from
    `references` (or from an answer file's own reference_answer), and how many questions were dropped."""
    first = answer_sets[0]
    ids = [i for i in first.answers if all(i in s.answers for s in answer_sets[1:])]
    dropped = len({i for s in answer_sets for i in s.answers}) - len(ids)
    questions = []
    for question_id in ids:
        given = (references or {}).get(question_id)
        reference = given.reference_answer if given else next(
            (s.answers[question_id].reference_answer for s in answer_sets if s.answers[question_id].reference_answer),
            None,
        )
        base = first.answers[question_id]
        questions.append(Sample(id=question_id, question=given.question if given else base.question,
                                reference_answer=reference))
    return questions, dropped


def sample_questions(questions: Sequence[Sample], n: int | None, seed: int) -> list[Sample]:
    """A seeded sample of n questions (all when n is None or not smaller), in their original order."""
    if n is None or n >= len(questions):
        return list(questions)
    chosen = set(random.Random(seed).sample(range(len(questions)), n))
    return [q for i, q in enumerate(questions) if i in chosen]


# --------------------------------------------------------------------------- tournament


class RankSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: TournamentMode = TournamentMode.SWISS
    rounds: int | None = Field(default=None, ge=1)
    k: float = DEFAULT_K
    seed: int = 0
    questions: int | None = Field(default=None, ge=1, description="a seeded sample of questions per match")
    scheme: ScoreScheme = ScoreScheme.HARD
    n_bootstrap: int = DEFAULT_BOOTSTRAP_RESAMPLES
    concurrency: int = Field(default=8, ge=1)
    orders: OrderProtocol = Field(default=OrderProtocol.BOTH, description="both orders, or seed 001's single "
                                  "order with the A/B position drawn per question from `seed`")
    metric_judges: tuple[ThresholdJudgeSpec, ...] = Field(default=(), description="seed 001 4.2's threshold "
                                                           "baseline on answer-file columns, judging beside the jury")
    jury: PairwiseJury = Field(default=PairwiseJury.MAJORITY_TIE, description="how the hard score's label "
                               "comes from the jury's mean probabilities (schema.config.PairwiseJury)")
    tie_margin: float = Field(default=0.0, ge=0.0, description="mean_probability's tie margin on P_B - P_A, "
                              "learned into a calibration profile (`rank --calibration-profile`)")

    def run_config(self) -> dict:
        """The settings as the run records them; options added later appear only when set, so the run id of
        a ranking that does not use them stays what it was."""
        dump = self.model_dump(mode="json")
        for name in ("orders", "metric_judges", "jury", "tie_margin"):
            if getattr(self, name) == type(self).model_fields[name].default:
                dump.pop(name)
        return dump

    @property
    def judge_ids(self) -> list[str]:
        return [m.judge_id for m in self.metric_judges]


@dataclass
class RankingReport:
    run_id: str
    tournament: TournamentResult
    questions: list[Sample]
    dropped_questions: int
    outcomes: dict[tuple[str, str], tuple[QuestionOutcome, ...]]  # (A, B) of each played match
    calls: JudgeCallCount
    judge_ids: list[str] = field(default_factory=list)
    orders: OrderProtocol = OrderProtocol.BOTH

    @property
    def probability_sources(self) -> dict[ProbabilitySource, int]:
        counts = dict.fromkeys(ProbabilitySource, 0)
        for outcomes in self.outcomes.values():
            for outcome in outcomes:
                if outcome.score_a is not None:
                    counts[outcome.probabilities.source] += 1
        return counts

    @property
    def position_bias(self) -> dict[str, tuple[int, int]]:
        """Per judge: (pairs flagged for position bias, pairs the judge decided)."""
        flagged = dict.fromkeys(self.judge_ids, 0)
        decided = dict.fromkeys(self.judge_ids, 0)
        for outcomes in self.outcomes.values():
            for outcome in outcomes:
                for d in outcome.decisions:
                    decided[d.judge_id] += d.label is not None
                    flagged[d.judge_id] += d.position_bias
        return {j: (flagged[j], decided[j]) for j in self.judge_ids}

    @property
    def position_bias_rates(self) -> dict[str, MetricValue]:
        """Per judge: the share of decided pairs whose two orders disagreed; n/a under the single order."""
        return bias_rates(self.position_bias, self.orders)

    @property
    def unscored_questions(self) -> int:
        return sum(o.score_a is None for outcomes in self.outcomes.values() for o in outcomes)


def bias_rates(counts: Mapping[str, tuple[int, int]], orders: OrderProtocol) -> dict[str, MetricValue]:
    if orders is OrderProtocol.SINGLE:
        return {j: MetricValue(name="position_bias_rate", value=None,
                               na_reason="not measured: one order per question") for j in counts}
    return {j: position_bias_rate(flagged, decided) for j, (flagged, decided) in counts.items()}


def _record_run(store: RecordStore, run_id: str, questions: Sequence[Sample], config: dict, systems: str) -> None:
    store.put(RunInfo(run_id=run_id, dataset="pairwise", system=systems, config=config))
    store.put_samples(run_id, questions)


MatchProgress = Callable[[int, int], None]
"""Told (matches played, matches planned) after each match, from the worker thread that plays them."""


def planned_matches(n_systems: int, settings: RankSettings) -> int:
    """How many matches a tournament plays: every pair of each round-robin round played, or n // 2 per Swiss
    round (a Swiss round may pair fewer when only rematches are left: then fewer are played)."""
    if settings.mode is TournamentMode.ROUND_ROBIN:
        schedule = list(round_robin_schedule([str(i) for i in range(n_systems)]))[:settings.rounds]
        return sum(len(pairing.pairs) for pairing in schedule)
    return (swiss_rounds(n_systems) if settings.rounds is None else settings.rounds) * (n_systems // 2)


async def _play(
    answer_sets: Mapping[str, AnswerSet], questions: Sequence[Sample], judges: Sequence[Judge], store: RecordStore,
    run_id: str, settings: RankSettings, schedule: Callable[[MatchFn], T], planned: int = 0,
    on_match: MatchProgress | None = None,
) -> tuple[T, dict[tuple[str, str], tuple[QuestionOutcome, ...]], JudgeCallCount]:
    """Run `schedule(match_fn)` in a worker thread; each match is the match graph on this event loop."""
    context = MatchContext(judges=judges, store=store, answer_sets=answer_sets, questions=questions, run_id=run_id,
                           scheme=settings.scheme, orders=settings.orders, order_seed=settings.seed,
                           metric_judges=settings.metric_judges, concurrency=settings.concurrency,
                           jury=settings.jury, tie_margin=settings.tie_margin)
    graph = build_match_graph()
    loop = asyncio.get_running_loop()
    played: dict[tuple[str, str], tuple[QuestionOutcome, ...]] = {}

    def match_fn(a: str, b: str) -> MatchResult:
        state = asyncio.run_coroutine_threadsafe(
            graph.ainvoke({"system_a": a, "system_b": b}, context=context), loop
        ).result()
        played[(a, b)] = state["outcomes"]
        if on_match is not None:
            on_match(len(played), max(planned, len(played)))
        return state["result"]

    result = await asyncio.to_thread(schedule, match_fn)
    return result, played, context.calls


async def rank_systems(
    answer_sets: Sequence[AnswerSet], judges: Sequence[Judge], store: RecordStore, settings: RankSettings,
    references: Mapping[str, Sample] | None = None, run_id: str | None = None, on_match: MatchProgress | None = None,
) -> RankingReport:
    names = [s.name for s in answer_sets]
    if len(set(names)) != len(names):
        raise ValueError(f"system names must be unique, got {names}")
    questions, dropped = common_questions(answer_sets, references)
    if not questions:
        raise ValueError("the systems have no question in common")
    questions = sample_questions(questions, settings.questions, settings.seed)
    config = {"settings": settings.run_config(), "judges": [j.judge_id for j in judges]}
    run_id = run_id or f"rank-{content_id(config, names, [q.id for q in questions])[:10]}"
    await asyncio.to_thread(_record_run, store, run_id, questions, config, ",".join(names))

    def schedule(match_fn: MatchFn) -> TournamentResult:
        return run_tournament(names, match_fn, settings.mode, settings.rounds, settings.k, seed=settings.seed,
                              n_bootstrap=settings.n_bootstrap)

    by_name = {s.name: s for s in answer_sets}
    result, played, calls = await _play(by_name, questions, judges, store, run_id, settings, schedule,
                                        planned_matches(len(names), settings), on_match)
    return RankingReport(run_id=run_id, tournament=result, questions=questions,
                         dropped_questions=dropped, outcomes=played, calls=calls,
                         judge_ids=[*(j.judge_id for j in judges), *settings.judge_ids], orders=settings.orders)


# --------------------------------------------------------------------------- baseline tiers


class PoolEntry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    file: str  # relative to the pool directory
    rating: float
    tier: BaselineTier | None = None


class BaselinePool(BaseModel):
    """Ranked systems' answer sets kept for single-system evaluation; one entry per tier is marked."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    entries: tuple[PoolEntry, ...]
    judges: tuple[str, ...]
    run_id: str
    # the tournament that rated the entries: a new system's Elo against them uses the same scale
    k: float = DEFAULT_K
    initial_rating: float = INITIAL_RATING

    def tiered(self) -> list[PoolEntry]:
        order = list(BaselineTier)
        return sorted((e for e in self.entries if e.tier), key=lambda e: order.index(e.tier))  # type: ignore[arg-type]


def tiers_by_rank(names_best_first: Sequence[str]) -> dict[str, BaselineTier]:
    """High = the best, Low = the worst, Medium = the middle of the ranking (needs three systems)."""
    if len(names_best_first) < 3:
        raise ValueError("a baseline pool needs at least three ranked systems (high, medium, low)")
    middle = names_best_first[(len(names_best_first) - 1) // 2]
    return {names_best_first[0]: BaselineTier.HIGH, middle: BaselineTier.MEDIUM,
            names_best_first[-1]: BaselineTier.LOW}


def save_pool(directory: Path, report: RankingReport, answer_sets: Sequence[AnswerSet]) -> BaselinePool:
    """Copy the ranked answer sets into `directory` with a manifest of their final Elo and tiers."""
    directory.mkdir(parents=True, exist_ok=True)
    standings = report.tournament.standings
    tiers = tiers_by_rank([s.system for s in standings])
    files = {s.name: s for s in answer_sets}
    entries = []
    for standing in standings:
        answer_set = files[standing.system]
        target = directory / f"{standing.system}.jsonl"
        if answer_set.source and Path(answer_set.source).is_file():
            if Path(answer_set.source).resolve() != target.resolve():
                shutil.copyfile(answer_set.source, target)
        else:
            target.write_text("".join(s.model_dump_json(exclude_defaults=True) + "\n"
                                      for s in answer_set.answers.values()), encoding="utf-8")
        entries.append(PoolEntry(name=standing.system, file=target.name, rating=standing.elo,
                                 tier=tiers.get(standing.system)))
    pool = BaselinePool(entries=tuple(entries), judges=tuple(report.judge_ids), run_id=report.run_id,
                        k=report.tournament.k, initial_rating=report.tournament.initial_rating)
    (directory / POOL_MANIFEST).write_text(pool.model_dump_json(indent=2), encoding="utf-8")
    return pool


def load_pool(directory: Path) -> tuple[BaselinePool, dict[str, AnswerSet]]:
    manifest = directory / POOL_MANIFEST
    if not manifest.is_file():
        raise ValueError(f"{directory}: no {POOL_MANIFEST}; make a pool with `ragcourt rank ... --save-baselines`")
    pool = BaselinePool.model_validate(json.loads(manifest.read_text(encoding="utf-8")))
    sets = {e.name: load_answer_set(directory / e.file, e.name) for e in pool.tiered()}
    return pool, sets


@dataclass
class TierReport:
    run_id: str
    system: str
    position: TierPosition
    outcomes: dict[str, tuple[QuestionOutcome, ...]]  # baseline name -> the new system (as A) vs it
    calls: JudgeCallCount
    n_questions: int
    k: float  # of the pool's tournament, which the new system's Elo uses too
    initial_rating: float
    orders: OrderProtocol = OrderProtocol.BOTH


async def place_against_baselines(
    new: AnswerSet, directory: Path, judges: Sequence[Judge], store: RecordStore, settings: RankSettings,
    references: Mapping[str, Sample] | None = None, run_id: str | None = None, on_match: MatchProgress | None = None,
) -> TierReport:
    """Seed 001's single-system mode: the new system plays one match against each tier's baseline."""
    pool, baseline_sets = load_pool(directory)
    tiered = pool.tiered()
    if new.name in baseline_sets:
        raise ValueError(f"the new system's name {new.name!r} is already a baseline's name")
    all_sets = [new, *baseline_sets.values()]
    questions, _ = common_questions(all_sets, references)
    if not questions:
        raise ValueError("the new system and the baselines have no question in common")
    questions = sample_questions(questions, settings.questions, settings.seed)
    config = {"settings": settings.run_config(), "judges": [j.judge_id for j in judges],
              "baselines": pool.model_dump(mode="json")}
    run_id = run_id or f"tiers-{content_id(config, new.name, [q.id for q in questions])[:10]}"
    await asyncio.to_thread(_record_run, store, run_id, questions, config, new.name)

    def schedule(match_fn: MatchFn) -> list[MatchResult]:
        return [match_fn(new.name, entry.name) for entry in tiered]

    results, played, calls = await _play({s.name: s for s in all_sets}, questions, judges, store, run_id, settings,
                                         schedule, len(tiered), on_match)
    baselines = [Baseline(name=e.name, tier=e.tier, rating=e.rating) for e in tiered]  # type: ignore[arg-type]
    # the new system's Elo is the seed's update on the pool's scale: the K and initial rating of the tournament
    # that rated the baselines, as the pool recorded them (metrics.dice.elo_against_baselines)
    pairs = list(zip(baselines, results, strict=True))
    position = tier_position(pairs, k=pool.k, initial_rating=pool.initial_rating)  # type: ignore[arg-type]
    return TierReport(run_id=run_id, system=new.name, position=position,
                      outcomes={b: o for (_, b), o in played.items()}, calls=calls, n_questions=len(questions),
                      k=pool.k, initial_rating=pool.initial_rating, orders=settings.orders)
