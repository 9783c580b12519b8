"""The review desk's logic, free of HTTP: the queue of pending escalations and storing a decision.

A decision is one of: accept a judge's verdict, decide yourself (a label, or a 0-10 score), or skip.
Every decision is a `Review` with the reviewer's name, written to the store at once.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ragcourt.schema import (
    NORMAL,
    SCORE_RANGE,
    Answer,
    Check,
    CheckKind,
    Label,
    Reconciled,
    Review,
    ReviewAction,
    Sample,
    Verdict,
    VerdictStatus,
)
from ragcourt.stores.records import RecordStore
from ragcourt.validity.review_budget import review_queue


class DecisionError(ValueError):
    """A decision that does not fit the check (wrong label kind, unknown judge, bad score); `field` names
    the part of the decision that is wrong (check_id, decision, score, reviewer or comment)."""

    def __init__(self, message: str, field: str = "decision") -> None:
        super().__init__(message)
        self.field = field


class UnknownCheckError(DecisionError):
    """The run has no check of that id."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "check_id")


class NotPendingError(DecisionError):
    """A check of the run that is not a pending escalation: never escalated, or a person decided it already
    (`review` is that decision)."""

    def __init__(self, message: str, review: Review | None = None) -> None:
        super().__init__(message, "check_id")
        self.review = review


class Choice(StrEnum):
    ACCEPT = "accept"  # accept one judge's verdict
    LABEL = "label"  # decide a label yourself
    SCORE = "score"  # decide a 0-10 score yourself
    SKIP = "skip"


@dataclass(frozen=True)
class QueueState:
    escalated: int  # escalated checks of the run
    pending: int  # of those, not yet decided by a person
    skipped: int  # pending ones this session skipped

    @property
    def decided(self) -> int:
        return self.escalated - self.pending


@dataclass(frozen=True)
class DeskItem:
    """One pending escalation with everything a person needs to decide it."""

    check: Check
    reconciled: Reconciled
    verdicts: tuple[Verdict, ...]
    sample: Sample | None
    answer: Answer | None
    position: int  # 1-based place in the pending queue
    queue: QueueState

    @property
    def labels(self) -> tuple[Label, ...]:
        return self.check.kind.labels

    @property
    def takes_score(self) -> bool:
        return self.check.kind is CheckKind.DIMENSION_SCORE


def queue_state(store: RecordStore, run_id: str, skipped: Collection[str]) -> QueueState:
    pending = {r.check_id for r in store.pending_escalations(run_id)}
    escalated = sum(1 for r in store.get_reconciled(run_id) if r.escalated)
    return QueueState(escalated=escalated, pending=len(pending), skipped=len(pending & set(skipped)))


def next_check_id(pending: Sequence[Reconciled], skipped: Collection[str]) -> str | None:
    """The first of `pending` (in review order) that this session has not skipped."""
    return next((r.check_id for r in pending if r.check_id not in skipped), None)


def next_item(store: RecordStore, run_id: str, skipped: Collection[str] = ()) -> DeskItem | None:
    """The pending escalation this session has not skipped that comes first in review order
    (validity.review_budget.REVIEW_ORDER); None when there is none."""
    pending = review_queue(store, run_id)
    escalated = sum(1 for r in store.get_reconciled(run_id) if r.escalated)
    first = next_check_id(pending, skipped)
    if first is None:
        return None
    rec = next(r for r in pending if r.check_id == first)
    found = store.get_checks([rec.check_id])
    if not found:
        raise LookupError(f"escalated check {rec.check_id} is not in the store")
    check = found[0]
    sample = next((s for s in store.get_samples(run_id) if s.id == check.sample_id), None)
    answers = store.get_answers(run_id, check.sample_id)
    answer = next((a for a in answers if a.condition == check.condition), None) or next(
        (a for a in answers if a.condition == NORMAL), None)
    queue = QueueState(escalated=escalated, pending=len(pending),
                       skipped=sum(1 for r in pending if r.check_id in skipped))
    return DeskItem(check=check, reconciled=rec, verdicts=tuple(store.run_verdicts(run_id, [check.id])), sample=sample,
                    answer=answer, position=queue.skipped + 1, queue=queue)


def make_review(item_check: Check, verdicts: tuple[Verdict, ...], run_id: str, reviewer: str, choice: Choice,
                value: str = "", comment: str = "") -> Review:
    """The Review for a decision on a check; DecisionError when the decision does not fit the check."""
    reviewer = reviewer.strip()
    if not reviewer:
        raise DecisionError("a decision needs the reviewer's name", "reviewer")
    common: dict[str, Any] = {"run_id": run_id, "check_id": item_check.id, "reviewer": reviewer,
                              "comment": comment.strip()}
    if choice is Choice.SKIP:
        return Review(action=ReviewAction.SKIP, **common)
    if choice is Choice.ACCEPT:
        verdict = next((v for v in verdicts if v.judge_id == value), None)
        if verdict is None:
            raise DecisionError(f"no verdict of judge '{value}' on this check")
        if verdict.status is VerdictStatus.UNSCORED:
            raise DecisionError(f"judge '{value}' left this check unscored: there is nothing to accept")
        return Review(action=ReviewAction.ACCEPT, label=verdict.label, score=verdict.score,
                      accepted_judge=verdict.judge_id, **common)
    if choice is Choice.LABEL:
        allowed = item_check.kind.labels
        label = next((label for label in allowed if label.value == value), None)
        if label is None:
            raise DecisionError(f"'{value}' is not a decision for a {item_check.kind} check "
                                f"(use {', '.join(a.value for a in allowed) or 'a score'})")
        return Review(action=ReviewAction.OVERRIDE, label=label, **common)
    if item_check.kind is not CheckKind.DIMENSION_SCORE:
        raise DecisionError(f"a {item_check.kind} check takes a label, not a score")
    try:
        score = float(value)
    except ValueError:
        raise DecisionError(f"'{value}' is not a score", "score") from None
    if not SCORE_RANGE[0] <= score <= SCORE_RANGE[1]:
        raise DecisionError(f"a score is between {SCORE_RANGE[0]:g} and {SCORE_RANGE[1]:g}, not {score:g}", "score")
    return Review(action=ReviewAction.OVERRIDE, score=score, **common)


def parse_choice(decision: str) -> tuple[Choice, str]:
    """'accept:JUDGE', 'label:LABEL', 'score' or 'score:N', 'skip' as the choice and its value."""
    choice_text, _, value = decision.partition(":")
    try:
        return Choice(choice_text.strip()), value.strip()
    except ValueError:
        raise DecisionError(f"'{decision}' is not a decision (use accept:JUDGE, label:LABEL, score:N or skip)",
                            "decision") from None


def pending_check(store: RecordStore, run_id: str, check_id: str) -> Check:
    """The check, if it is a pending escalation of the run: UnknownCheckError when the run has no such
    check, NotPendingError when it was not escalated or a person has decided it."""
    if not check_id:
        raise DecisionError("a decision names its check (check_id)", "check_id")
    if check_id not in {r.check_id for r in store.pending_escalations(run_id)}:
        reconciled = store.reconciled_of_checks(run_id, [check_id])
        if not reconciled:
            raise UnknownCheckError(f"run {run_id} has no check {check_id}")
        if not any(r.escalated for r in reconciled):
            raise NotPendingError(f"check {check_id} was not escalated in run {run_id}: the jury decided it")
        review = store.latest_reviews(run_id, [check_id]).get(check_id)
        by = f" ({review.action} by {review.reviewer})" if review else ""
        raise NotPendingError(f"check {check_id} is not a pending escalation of run {run_id}: "
                              f"a person has decided it{by}", review)
    found = store.get_checks([check_id])
    if not found:
        raise LookupError(f"escalated check {check_id} is not in the store")
    return found[0]


def decide(store: RecordStore, run_id: str, check_id: str, reviewer: str, choice: Choice, value: str = "",
           comment: str = "") -> tuple[Check, Review]:
    """Store a person's decision on a pending escalation of the run, at once; the check and the stored review.
    Nothing is stored when the decision is refused (DecisionError)."""
    check = pending_check(store, run_id, check_id)
    review = make_review(check, tuple(store.run_verdicts(run_id, [check_id])), run_id, reviewer, choice, value, comment)
    store.add_review(review)
    return check, review
