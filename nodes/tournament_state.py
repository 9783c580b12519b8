"""State and runtime context of one DICE match (system A vs system B over the questions), and what a
match produces per question. Built by `ranking` and handed to the match graph (graphs/tournament.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TypedDict

from pydantic import BaseModel, ConfigDict

from ragcourt.judging import Judge
from ragcourt.metrics.dice import DecisionProbabilities, MatchResult
from ragcourt.schema import Check, Label, Sample, Verdict
from ragcourt.stores.records import RecordStore


class ScoreScheme(StrEnum):
    """How one question scores for A (seed 001, 3.2): hard = argmax A 1 / Tie 0.5 / B 0; soft = P_A + P_Tie/2."""

    HARD = "hard"
    SOFT = "soft"


@dataclass(frozen=True)
class AnswerSet:
    """One system's answers, by question id: Samples carrying `answer` and, when retrieved, `contexts`."""

    name: str
    answers: Mapping[str, Sample]
    source: str = ""


class JudgeDecision(BaseModel):
    """One judge on one question, both orders resolved into A's frame (A = the match's first system).

    label None (with na_reason) when either order is unscored. position_bias: the two orders disagreed, so
    the judge counts as Tie for this pair (seed 001 runs both orders; the disagreement is the bias).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    judge_id: str
    label: Label | None
    label_first: Label | None  # as given with A shown first
    label_second: Label | None  # as given with B shown first, mapped back to A's frame
    position_bias: bool = False
    probabilities: dict[Label, float] | None = None  # from logprobs, averaged over both orders
    na_reason: str | None = None


class QuestionOutcome(BaseModel):
    """The jury on one question of a match: per-judge decisions, the A/B/Tie probabilities and A's score."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    question_id: str
    check_ids: tuple[str, str]  # (A shown first, B shown first)
    decisions: tuple[JudgeDecision, ...]
    probabilities: DecisionProbabilities
    score_a: float | None
    na_reason: str | None = None


class MatchState(TypedDict, total=False):
    system_a: str
    system_b: str
    checks: dict[str, tuple[Check, Check]]  # question id -> (A first, B first)
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
    concurrency: int = 8
    calls: JudgeCallCount = field(default_factory=JudgeCallCount)
    _semaphore: asyncio.Semaphore | None = None

    def semaphore(self) -> asyncio.Semaphore:
        # created lazily, inside the event loop that uses it
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.concurrency)
        return self._semaphore
