"""nodes/reconciliation: the jury's verdicts on one check into one decision (pure), and the route after it."""

from __future__ import annotations

import pytest
from langgraph.runtime import Runtime

from ragcourt.judging.reconciliation import reconcile_check
from ragcourt.nodes.names import HUMAN_REVIEW, RETRIEVE, SCORE
from ragcourt.nodes.reconciliation import normal_coverage, route_after_reconcile
from ragcourt.nodes.state import EvalContext
from ragcourt.schema import (
    LOOSE,
    NORMAL,
    Check,
    CheckKind,
    Label,
    Reconciled,
    ReconcileMethod,
    Review,
    ReviewAction,
    UnscoredReason,
    Verdict,
    VerdictStatus,
)
from ragcourt.schema.config import EvalConfig, ReviewMode

RUN = "run-r"
CONFIG = EvalConfig()  # escalate_below_agreement 1.0, escalate_score_spread 3.0


def binary_check(subject: str = "Acme was founded in 1990.", kind: CheckKind = CheckKind.ELEMENT_IN_CONTEXT,
                 condition=NORMAL) -> Check:
    return Check(kind=kind, sample_id="s1", condition=condition, subject_id=f"e:{subject}", subject_text=subject,
                 target_id=f"context:{condition.key}", target_text="Acme opened in 1990.", question="When?")


CHECK = binary_check()
SCORE_CHECK = Check(kind=CheckKind.DIMENSION_SCORE, sample_id="s1", condition=NORMAL, subject_id="answer",
                    subject_text="Ada.", target_id="rubric:relevance", target_text="rubric", question="Who?",
                    dimension="relevance")


def said(judge: str, label: Label, check: Check = CHECK, **extra) -> Verdict:
    return Verdict(check_id=check.id, judge_id=judge, status=VerdictStatus.OK, label=label, **extra)


def scored(judge: str, score: float) -> Verdict:
    return Verdict(check_id=SCORE_CHECK.id, judge_id=judge, status=VerdictStatus.OK, score=score)


def unscored(judge: str, reason: UnscoredReason = UnscoredReason.TIMEOUT, check: Check = CHECK) -> Verdict:
    return Verdict(check_id=check.id, judge_id=judge, status=VerdictStatus.UNSCORED, unscored_reason=reason)


def review(action: ReviewAction, label: Label | None = None, score: float | None = None,
           check: Check = CHECK) -> Review:
    return Review(run_id=RUN, check_id=check.id, reviewer="ann", action=action, label=label, score=score)


def test_majority_label_with_its_agreement_and_vote_shares() -> None:
    decided = reconcile_check(RUN, CHECK, [said("a", Label.YES), said("b", Label.NO), said("c", Label.YES)], CONFIG)
    assert (decided.label, decided.method, decided.n_scored, decided.n_unscored) == (
        Label.YES, ReconcileMethod.MAJORITY, 3, 0)
    assert decided.agreement == pytest.approx(2 / 3)
    assert decided.probabilities == pytest.approx({Label.YES: 2 / 3, Label.NO: 1 / 3})
    # 2/3 < 1.0 (the default bound: any disagreement escalates)
    assert (decided.escalated, decided.provisional) == (True, True)
    assert decided.escalation_reason == "judges disagree (yes 2, no 1)"
    assert (decided.run_id, decided.check_id, decided.kind, decided.sample_id) == (
        RUN, CHECK.id, CheckKind.ELEMENT_IN_CONTEXT, "s1")


def test_majority_within_the_agreement_bound_does_not_escalate() -> None:
    config = EvalConfig(escalate_below_agreement=0.6)
    decided = reconcile_check(RUN, CHECK, [said("a", Label.NO), said("b", Label.NO), said("c", Label.YES)], config)
    assert (decided.label, decided.escalated, decided.provisional, decided.escalation_reason) == (
        Label.NO, False, False, None)
    unanimous = reconcile_check(RUN, CHECK, [said("a", Label.YES), said("b", Label.YES)], CONFIG)
    assert (unanimous.label, unanimous.agreement, unanimous.escalated) == (Label.YES, 1.0, False)


@pytest.mark.parametrize(("first", "second"), [(Label.NO, Label.YES), (Label.YES, Label.NO)])
def test_a_tie_is_split_with_no_label_whichever_judge_is_listed_first(first: Label, second: Label) -> None:
    """Seed 003 averages the two judges: a 1-1 split has no majority label (it used to be the first judge's),
    counts 0.5 and goes to review."""
    decided = reconcile_check(RUN, CHECK, [said("a", first), said("b", second)], CONFIG)
    assert (decided.label, decided.split, decided.yes_value) == (None, True, 0.5)
    assert (decided.agreement, decided.escalated, decided.provisional) == (0.5, True, True)
    assert decided.escalation_reason == "judges split (no 1, yes 1)"
    assert decided.probabilities == pytest.approx({Label.YES: 0.5, Label.NO: 0.5})
    assert not decided.decided


def test_a_split_keeps_the_judges_mean_probabilities_and_is_the_same_record_in_either_order() -> None:
    lexical = said("lexical", Label.YES, probabilities={Label.YES: 0.7, Label.NO: 0.3})
    semantic = said("semantic", Label.NO, probabilities={Label.YES: 0.4, Label.NO: 0.6})
    forward = reconcile_check(RUN, CHECK, [lexical, semantic], CONFIG)
    backward = reconcile_check(RUN, CHECK, [semantic, lexical], CONFIG)
    assert forward == backward
    assert (forward.label, forward.split, forward.method) == (None, True, ReconcileMethod.MEAN_PROBABILITY)
    assert forward.probabilities == pytest.approx({Label.YES: 0.55, Label.NO: 0.45})  # kept, not the decider


def test_a_split_escalates_even_when_the_agreement_bound_would_let_it_pass() -> None:
    decided = reconcile_check(RUN, CHECK, [said("a", Label.YES), said("b", Label.NO)],
                              EvalConfig(escalate_below_agreement=0.5))
    assert (decided.label, decided.split, decided.escalated, decided.provisional) == (None, True, True, True)


def test_a_two_two_split_of_four_judges_is_split_and_a_two_one_majority_is_not() -> None:
    four = [said("a", Label.YES), said("b", Label.NO), said("c", Label.NO), said("d", Label.YES)]
    assert (reconcile_check(RUN, CHECK, four, CONFIG).split, reconcile_check(RUN, CHECK, four, CONFIG).label) == (
        True, None)
    three = reconcile_check(RUN, CHECK, four[:3], CONFIG)
    assert (three.label, three.split, three.yes_value) == (Label.NO, False, 0.0)


def test_a_pairwise_split_is_a_tie_in_either_order() -> None:
    pair = Check(kind=CheckKind.PAIRWISE, sample_id="s1", condition=NORMAL, subject_id="a", subject_text="Ada.",
                 target_id="b", target_text="Bob.", question="Who?")
    votes = [said("a", Label.A, check=pair), said("b", Label.B, check=pair)]
    forward = reconcile_check(RUN, pair, votes, CONFIG)
    assert forward == reconcile_check(RUN, pair, votes[::-1], CONFIG)
    assert (forward.label, forward.split, forward.escalated, forward.yes_value) == (Label.TIE, True, True, None)


def test_unscored_verdicts_are_excluded_and_counted() -> None:
    verdicts = [said("a", Label.YES), unscored("b"), said("c", Label.YES)]
    decided = reconcile_check(RUN, CHECK, verdicts, CONFIG)
    assert (decided.label, decided.agreement, decided.n_scored, decided.n_unscored) == (Label.YES, 1.0, 2, 1)
    assert (decided.escalated, decided.provisional) == (False, False)
    assert decided.probabilities == {Label.YES: 1.0}
    # An unscored judge does not break a tie of the scored ones: they split (the first scored one used to decide).
    tie = reconcile_check(RUN, CHECK, [unscored("a"), said("b", Label.NO), said("c", Label.YES)], CONFIG)
    assert (tie.label, tie.split, tie.n_scored, tie.n_unscored, tie.provisional) == (None, True, 2, 1, True)


def test_no_scored_verdict_escalates_with_no_label() -> None:
    verdicts = [unscored("a", UnscoredReason.PARSE_FAILURE), unscored("b", UnscoredReason.TIMEOUT)]
    decided = reconcile_check(RUN, CHECK, verdicts, CONFIG)
    assert (decided.label, decided.score, decided.agreement, decided.method) == (None, None, None, ReconcileMethod.NONE)
    assert (decided.n_scored, decided.n_unscored, decided.escalated, decided.provisional) == (0, 2, True, True)
    assert decided.escalation_reason == "no judge gave a scored verdict"
    assert not decided.decided
    nobody = reconcile_check(RUN, CHECK, [], CONFIG)
    assert (nobody.label, nobody.n_scored, nobody.n_unscored, nobody.escalated) == (None, 0, 0, True)


def test_scores_take_the_mean_and_escalate_beyond_the_spread() -> None:
    wide = reconcile_check(RUN, SCORE_CHECK, [scored("a", 2.0), scored("b", 6.0)], CONFIG)
    assert (wide.score, wide.method, wide.label) == (4.0, ReconcileMethod.MEAN, None)
    assert (wide.escalated, wide.provisional) == (True, True)  # spread 4 > 3
    assert wide.escalation_reason == "scores spread 4 > 3"
    at_bound = reconcile_check(RUN, SCORE_CHECK, [scored("a", 5.0), scored("b", 8.0), scored("c", 6.5)], CONFIG)
    assert (at_bound.score, at_bound.escalated) == (pytest.approx(6.5), False)  # spread 3 is not beyond 3
    with_unscored = reconcile_check(RUN, SCORE_CHECK, [scored("a", 7.0), unscored("b", check=SCORE_CHECK)], CONFIG)
    assert (with_unscored.score, with_unscored.n_scored, with_unscored.n_unscored) == (7.0, 1, 1)


def test_judge_probabilities_are_averaged() -> None:
    verdicts = [
        said("a", Label.YES, probabilities={Label.YES: 0.9, Label.NO: 0.1}),
        said("b", Label.YES, probabilities={Label.YES: 0.5, Label.NO: 0.5}),
    ]
    decided = reconcile_check(RUN, CHECK, verdicts, CONFIG)
    assert decided.method is ReconcileMethod.MEAN_PROBABILITY
    assert decided.probabilities == pytest.approx({Label.YES: 0.7, Label.NO: 0.3})


def test_a_review_overrides_the_jury() -> None:
    tie = [said("a", Label.NO), said("b", Label.YES)]
    decided = reconcile_check(RUN, CHECK, tie, CONFIG, review(ReviewAction.OVERRIDE, Label.YES))
    assert (decided.label, decided.method, decided.provisional, decided.agreement) == (
        Label.YES, ReconcileMethod.HUMAN, False, None)
    assert (decided.escalated, decided.escalation_reason) == (True, "decided by a person")
    assert (decided.n_scored, decided.n_unscored) == (2, 0)
    # Even a unanimous jury and an all-unscored jury give way to a person.
    unanimous = reconcile_check(RUN, CHECK, [said("a", Label.YES), said("b", Label.YES)], CONFIG,
                                review(ReviewAction.OVERRIDE, Label.NO))
    assert (unanimous.label, unanimous.method) == (Label.NO, ReconcileMethod.HUMAN)
    rescued = reconcile_check(RUN, CHECK, [unscored("a"), unscored("b")], CONFIG,
                              review(ReviewAction.ACCEPT, Label.NO))
    assert (rescued.label, rescued.provisional, rescued.decided) == (Label.NO, False, True)
    score = reconcile_check(RUN, SCORE_CHECK, [scored("a", 1.0), scored("b", 9.0)], CONFIG,
                            review(ReviewAction.OVERRIDE, score=8.0, check=SCORE_CHECK))
    assert (score.score, score.method, score.provisional) == (8.0, ReconcileMethod.HUMAN, False)


def test_a_skipped_review_leaves_the_jury_decision_pending() -> None:
    tie = [said("a", Label.NO), said("b", Label.YES)]
    decided = reconcile_check(RUN, CHECK, tie, CONFIG, review(ReviewAction.SKIP))
    assert (decided.label, decided.split, decided.method, decided.provisional) == (
        None, True, ReconcileMethod.MAJORITY, True)


# --------------------------------------------------------------------------- coverage and route


def reconciled(check: Check, label: Label | None, provisional: bool = False) -> Reconciled:
    return Reconciled(run_id=RUN, check_id=check.id, kind=check.kind, sample_id="s1", label=label,
                      method=ReconcileMethod.MAJORITY if label else ReconcileMethod.NONE, n_scored=1 if label else 0,
                      n_unscored=0 if label else 1, escalated=provisional, provisional=provisional)


def test_normal_coverage_counts_decided_normal_context_checks_only() -> None:
    e1, e2, e3 = (binary_check(s) for s in ("one.", "two.", "three."))
    loose = binary_check("one.", condition=LOOSE)
    answer = binary_check("two.", kind=CheckKind.ELEMENT_IN_ANSWER)
    state = {"checks": {c.id: c for c in (e1, e2, e3, loose, answer)}}
    decisions = {e1.id: reconciled(e1, Label.YES), e2.id: reconciled(e2, Label.NO), e3.id: reconciled(e3, None),
                 loose.id: reconciled(loose, Label.YES), answer.id: reconciled(answer, Label.YES)}
    assert normal_coverage(state, decisions) == 0.5  # e1 yes, e2 no; e3 undecided, loose/answer not counted
    assert normal_coverage(state, {e3.id: reconciled(e3, None)}) is None
    # e3 split by the judges counts 0.5: (1 + 0 + 0.5) / 3
    split = Reconciled(run_id=RUN, check_id=e3.id, kind=e3.kind, sample_id="s1", method=ReconcileMethod.MAJORITY,
                       n_scored=2, n_unscored=0, split=True, escalated=True, provisional=True)
    assert normal_coverage(state, {**decisions, e3.id: split}) == pytest.approx(0.5)
    assert normal_coverage(state, {e1.id: decisions[e1.id], e3.id: split}) == pytest.approx(0.75)


def runtime(review_mode: ReviewMode) -> Runtime:
    context = EvalContext(config=EvalConfig(review_mode=review_mode), system=None, judges=[], decomposer=None,
                          store=None)  # type: ignore[arg-type]
    return Runtime(context=context)


async def test_route_after_reconcile() -> None:
    pending = {CHECK.id: reconciled(CHECK, Label.NO, provisional=True)}
    settled = {CHECK.id: reconciled(CHECK, Label.NO)}
    loose_due = {"loose_requested": True, "retrievals": {}, "reconciled": pending}
    assert await route_after_reconcile(loose_due, runtime(ReviewMode.INLINE)) == RETRIEVE
    # loose retrieval was tried and failed: do not loop, go on
    assert await route_after_reconcile({**loose_due, "unavailable": {LOOSE.key: "failed"}},
                                       runtime(ReviewMode.INLINE)) == HUMAN_REVIEW
    assert await route_after_reconcile({"reconciled": pending}, runtime(ReviewMode.INLINE)) == HUMAN_REVIEW
    assert await route_after_reconcile({"reconciled": pending}, runtime(ReviewMode.DEFERRED)) == SCORE
    assert await route_after_reconcile({"reconciled": settled}, runtime(ReviewMode.INLINE)) == SCORE


def test_a_verdict_without_the_field_its_kind_needs_counts_as_unscored() -> None:
    """A dimension check judged with a label only (a third-party judge's mistake) is not decided by it."""
    check = Check(kind=CheckKind.DIMENSION_SCORE, sample_id="s", condition=NORMAL, subject_id="answer",
                  subject_text="Paris.", target_id="rubric:relevance", target_text="rubric", dimension="relevance")
    labelled = Verdict(check_id=check.id, judge_id="j1", status=VerdictStatus.OK, label=Label.YES)
    rec = reconcile_check("run", check, [labelled], EvalConfig())
    assert (rec.score, rec.n_scored, rec.n_unscored, rec.escalated) == (None, 0, 1, True)
