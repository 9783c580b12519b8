"""What a person is asked about an escalated check, in plain words: one question per check kind, with the
names of the two texts it compares. The review desk and the terminal review (`ragcourt review`) both show
these, so a reviewer reads the same question wherever they decide.

`provisional_text` says what the jury's provisional decision is, and `accepting_keeps` whether accepting a
judge's verdict keeps it: an escalated check counts in the metrics as the jury left it until a person decides.
"""

from __future__ import annotations

from dataclasses import dataclass

from ragcourt.schema.enums import CheckKind, VerdictStatus
from ragcourt.schema.records import Reconciled, Verdict


@dataclass(frozen=True)
class ReviewQuestion:
    """The question a reviewer answers for one kind of check; `subject` and `evidence` name what the check's
    subject text and target text are (the desk's two panels)."""

    question: str
    subject: str
    evidence: str


REVIEW_QUESTIONS: dict[CheckKind, ReviewQuestion] = {
    CheckKind.ELEMENT_IN_CONTEXT: ReviewQuestion(
        "Does the evidence contain this element of the reference answer?",
        "an element of the reference answer", "the context the retrieval returned"),
    CheckKind.ELEMENT_IN_ANSWER: ReviewQuestion(
        "Does the system's answer state this element of the reference answer?",
        "an element of the reference answer", "the system's answer"),
    CheckKind.SUBQUERY_IN_CHUNK: ReviewQuestion(
        "Does this retrieved chunk contain information that answers the sub-query?",
        "a sub-query of the question", "one retrieved chunk"),
    CheckKind.CLAIM_SERVES_SUBQUERY: ReviewQuestion(
        "Does this claim of the answer help answer the sub-query (whether or not the claim is true)?",
        "a claim of the system's answer", "a sub-query of the question"),
    CheckKind.SUBQUERY_ANSWERED: ReviewQuestion(
        "Do these claims of the answer, taken together, answer the sub-query fully?",
        "a sub-query of the question", "the answer's claims related to it"),
    CheckKind.CLAIM_SUPPORTED: ReviewQuestion(
        "Does this retrieved chunk support the claim of the answer?",
        "a claim of the system's answer", "one retrieved chunk"),
    CheckKind.CLAIM_IN_REFERENCE: ReviewQuestion(
        "Does the reference answer (its elements) support this claim of the answer?",
        "a claim of the system's answer", "the elements of the reference answer"),
    CheckKind.ELEMENT_IN_CHUNK: ReviewQuestion(
        "Does this retrieved chunk state this element of the reference answer?",
        "an element of the reference answer", "one retrieved chunk"),
    CheckKind.DIMENSION_SCORE: ReviewQuestion(
        "How well does the answer do on this dimension, from 0 to 10, by the rubric and the source?",
        "the system's answer", "the dimension's rubric"),
    CheckKind.PAIRWISE: ReviewQuestion(
        "Which answer is better by the evidence and the reference: A, B, or a tie?",
        "answer A", "answer B"),
}


def review_question(kind: CheckKind) -> ReviewQuestion:
    return REVIEW_QUESTIONS[kind]


def provisional_text(reconciled: Reconciled) -> str:
    """The jury's decision as it counts until a person decides: a label, a score, a split, or undecided."""
    if reconciled.split and reconciled.label is None:
        return "judges split (counts 0.5 until decided)"
    if reconciled.label is not None:
        return str(reconciled.label)
    if reconciled.score is not None:
        return f"{reconciled.score:.1f}"
    return "undecided (no judge scored it)"


def accepting_keeps(reconciled: Reconciled, verdict: Verdict) -> bool | None:
    """Whether accepting this judge's verdict keeps the provisional decision (True), changes it (False), or
    cannot be accepted (None: the judge left the check unscored). A score is kept only when it is the same."""
    if verdict.status is VerdictStatus.UNSCORED:
        return None
    if reconciled.split and reconciled.label is None:
        return False  # any accepted verdict settles the split
    if verdict.label is not None:
        return verdict.label == reconciled.label
    return verdict.score is not None and reconciled.score is not None and verdict.score == reconciled.score
