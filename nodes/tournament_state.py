"""State and runtime context of one DICE match (system A vs system B over the questions), and what a
match produces per question. Built by `ranking` and handed to the match graph (graphs/tournament.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import NamedTuple, TypedDict

from pydantic import BaseModel, ConfigDict

from ragcourt.judging import Judge
from ragcourt.metrics.dice import DecisionProbabilities, MatchResult
from ragcourt.schema import Check, Label, Sample, Verdict
from ragcourt.schema.config import PairwiseJury, ThresholdJudgeSpec
from ragcourt.stores.records import RecordStore


class ScoreScheme(StrEnum):
    """How one question scores for A (seed 001, 3.2): hard = argmax A 1 / Tie 0.5 / B 0; soft = P_A + P_Tie/2."""

    HARD = "hard"
    SOFT = "soft"


class OrderProtocol(StrEnum):
    """Which orders a pair is judged in (seed 001, 3.1 judges one and does not say which).

    both (the default): A shown first and B shown first; orders that disagree count as Tie and are flagged
    as position bias, whose rate is reported; twice the judge calls. single: the seed's one order, the A/B
    position drawn per question from the seed so neither system is always shown first; half the calls, and
    position bias is neither measured nor neutralised.
    """

    BOTH = "both"
    SINGLE = "single"


class PairChecks(NamedTuple):
    """One question's pairwise checks in the match's frame; under the single order one of them is None."""

    a_first: Check | None  # the match's A shown as A
    b_first: Check | None  # the match's B shown as A

    def judged(self) -> tuple[Check, ...]:
        return tuple(c for c in self if c is not None)


@dataclass(frozen=True)
class AnswerSet:
    """One system's answers, by question id: Samples carrying `answer` and, when retrieved, `contexts`."""

    name: str
    answers: Mapping[str, Sample]
    source: str = ""


class JudgeDecision(BaseModel):
    """One judge on one question, both orders resolved into A's frame (A = the match's first system).

    label None (with na_reason) when a judged order is unscored. position_bias: the two orders disagreed,
    so the judge counts as Tie for this pair. Under the single order only one of label_first / label_second
    is set (the order that was shown) and position_bias stays False: it was not measured.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    judge_id: str
    label: Label | None
    label_first: Label | None  # as given with A shown first
    label_second: Label | None  # as given with B shown first, mapped back to A's frame
    position_bias: bool = False
    probabilities: dict[Label, float] | None = None  # from logprobs, averaged over the judged orders
    na_reason: str | None = None


class QuestionOutcome(BaseModel):
    """The jury on one question of a match: per-judge decisions, the A/B/Tie probabilities and A's score."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    question_id: str
    check_ids: tuple[str, ...]  # the judged orders: (A shown first, B shown first), or the one shown
    decisions: tuple[JudgeDecision, ...]
    probabilities: DecisionProbabilities
    score_a: float | None
    na_reason: str | None = None


class MatchState(TypedDict, total=False):
    system_a: str
    system_b: str
    checks: dict[str, PairChecks]  # question id -> its checks
    verdicts: dict[str, Verdict]  # verdict_key(check id, judge id) -> verdict
    outcomes: tuple[QuestionOutcome, ...]
    result: MatchResult


@dataclass
class JudgeCallCount:
    asked: int = 0  # verdicts obtained from a judge in this process
    reused: int = 0  # verdicts found in the record store (no judge call)


@dataclass
class MatchContext:
    """What the composition root built: the jury, the store, the answer sets and the questions."""

    judges: Sequence[Judge]
    store: RecordStore
    answer_sets: Mapping[str, AnswerSet]
    questions: Sequence[Sample]  # the questions of every match, with references when known
    run_id: str
    scheme: ScoreScheme = ScoreScheme.HARD
    orders: OrderProtocol = OrderProtocol.BOTH
    order_seed: int = 0  # draws the shown order per question under OrderProtocol.SINGLE
    metric_judges: Sequence[ThresholdJudgeSpec] = ()  # scalar baselines judging beside the jury, no calls
    jury: PairwiseJury = PairwiseJury.MAJORITY_TIE  # how the hard score's label comes from the jury
    tie_margin: float = 0.0  # mean_probability's margin on P_B - P_A (a calibration profile's)
    concurrency: int = 8
    calls: JudgeCallCount = field(default_factory=JudgeCallCount)
    _semaphore: asyncio.Semaphore | None = None

    def semaphore(self) -> asyncio.Semaphore:
        # created lazily, inside the event loop that uses it
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.concurrency)
        return self._semaphore
