"""Every check kind has the question a reviewer answers in plain words, and the provisional decision says
which judge's verdict accepting would keep."""

from __future__ import annotations

from ragcourt.schema import (
    CheckKind,
    Label,
    Reconciled,
    ReconcileMethod,
    UnscoredReason,
    Verdict,
    VerdictStatus,
)
from ragcourt.schema.review_questions import (
    REVIEW_QUESTIONS,
    accepting_keeps,
    provisional_text,
    review_question,
)


def _reconciled(label: Label | None = None, split: bool = False, score: float | None = None) -> Reconciled:
    return Reconciled(run_id="r", check_id="c", kind=CheckKind.ELEMENT_IN_CONTEXT, sample_id="s", label=label,
                      score=score, method=ReconcileMethod.MAJORITY, n_scored=2, n_unscored=0, escalated=True,
                      escalation_reason="judges disagree", provisional=True, split=split)


def _verdict(judge: str, label: Label | None = None, score: float | None = None) -> Verdict:
    return Verdict(check_id="c", judge_id=judge, status=VerdictStatus.OK, label=label, score=score)


def test_every_check_kind_asks_a_question_naming_what_it_compares():
    assert set(REVIEW_QUESTIONS) == set(CheckKind)
    for kind in CheckKind:
        asked = review_question(kind)
        assert asked.question.endswith("?") and asked.subject and asked.evidence
    assert review_question(CheckKind.ELEMENT_IN_CONTEXT).question == \
        "Does the evidence contain this element of the reference answer?"
    assert "0 to 10" in review_question(CheckKind.DIMENSION_SCORE).question


def test_accepting_the_judge_that_agrees_keeps_the_provisional_decision():
    jury = _reconciled(Label.YES)
    assert provisional_text(jury) == "yes"
    assert accepting_keeps(jury, _verdict("lexical", Label.YES)) is True
    assert accepting_keeps(jury, _verdict("semantic", Label.NO)) is False
    unscored = Verdict.unscored("c", "semantic", UnscoredReason.BEYOND_RULE)
    assert accepting_keeps(jury, unscored) is None  # nothing to accept


def test_a_split_has_no_label_to_keep_and_any_accept_settles_it():
    split = _reconciled(split=True)
    assert provisional_text(split) == "judges split (counts 0.5 until decided)"
    assert accepting_keeps(split, _verdict("lexical", Label.YES)) is False
    scored = _reconciled(score=6.0)
    assert provisional_text(scored) == "6.0"
    assert accepting_keeps(scored, _verdict("a", score=6.0)) is True
    assert accepting_keeps(scored, _verdict("b", score=8.0)) is False
