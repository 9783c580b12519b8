"""judging.reconciliation.reconcile_weighted: a binary check decided by the jury's posterior, escalations as the
majority rule gives them plus a low posterior, and everything else exactly as reconcile_check."""

from __future__ import annotations

import pytest

from ragcourt.judging.reconciliation import reconcile_check, reconcile_weighted
from ragcourt.schema import (
    NORMAL,
    Check,
    CheckKind,
    Label,
    ReconcileMethod,
    Review,
    ReviewAction,
    UnscoredReason,
    Verdict,
    VerdictStatus,
)
from ragcourt.schema.config import EvalConfig

CONFIG = EvalConfig()  # escalate_below_agreement 1.0, escalate_below_posterior 0.8
CHECK = Check(kind=CheckKind.CLAIM_SUPPORTED, sample_id="s1", condition=NORMAL, subject_id="c", subject_text="claim",
              target_id="k", target_text="chunk", question="q")


def vote(judge: str, label: Label) -> Verdict:
    return Verdict(check_id=CHECK.id, judge_id=judge, status=VerdictStatus.OK, label=label)


def test_the_posterior_overrules_a_two_to_one_vote_and_the_disagreement_still_escalates() -> None:
    verdicts = [vote("strong", Label.NO), vote("weak1", Label.YES), vote("weak2", Label.YES)]
    rec = reconcile_weighted("r", CHECK, verdicts, CONFIG, {Label.YES: 0.3, Label.NO: 0.7})
    assert rec.label is Label.NO and rec.method is ReconcileMethod.WEIGHTED
    assert rec.probabilities == {Label.YES: 0.3, Label.NO: 0.7}
    assert rec.agreement == pytest.approx(1 / 3)  # the share of judges agreeing with the label decided
    assert rec.escalated and rec.provisional
    assert rec.escalation_reason == "judges disagree (yes 2, no 1); posterior 0.70 < 0.8"


def test_a_unanimous_check_escalates_only_on_a_low_posterior() -> None:
    verdicts = [vote("a", Label.YES), vote("b", Label.YES)]
    sure = reconcile_weighted("r", CHECK, verdicts, CONFIG, {Label.YES: 0.95, Label.NO: 0.05})
    assert sure.label is Label.YES and not sure.escalated and sure.escalation_reason is None
    unsure = reconcile_weighted("r", CHECK, verdicts, CONFIG, {Label.YES: 0.75, Label.NO: 0.25})
    assert unsure.label is Label.YES and unsure.escalated and unsure.escalation_reason == "posterior 0.75 < 0.8"


def test_the_posterior_decides_a_split_and_an_even_posterior_stays_split() -> None:
    verdicts = [vote("a", Label.YES), vote("b", Label.NO)]
    decided = reconcile_weighted("r", CHECK, verdicts, CONFIG, {Label.YES: 0.9, Label.NO: 0.1})
    assert decided.label is Label.YES and not decided.split and decided.yes_value == 1.0
    assert decided.escalated and decided.escalation_reason == "judges split (no 1, yes 1)"
    even = reconcile_weighted("r", CHECK, verdicts, CONFIG, {Label.YES: 0.5, Label.NO: 0.5})
    assert even.label is None and even.split and even.yes_value == 0.5 and even.escalated


def test_without_a_posterior_a_review_or_a_scored_verdict_it_is_reconcile_check() -> None:
    verdicts = [vote("a", Label.YES), vote("b", Label.NO), vote("c", Label.NO)]
    posterior = {Label.YES: 0.99, Label.NO: 0.01}
    assert reconcile_weighted("r", CHECK, verdicts, CONFIG, None) == reconcile_check("r", CHECK, verdicts, CONFIG)
    review = Review(run_id="r", check_id=CHECK.id, reviewer="ann", action=ReviewAction.OVERRIDE, label=Label.NO)
    human = reconcile_weighted("r", CHECK, verdicts, CONFIG, posterior, review)
    assert human == reconcile_check("r", CHECK, verdicts, CONFIG, review) and human.label is Label.NO
    unscored = [Verdict.unscored(CHECK.id, "a", UnscoredReason.PARSE_FAILURE)]
    nobody = reconcile_weighted("r", CHECK, unscored, CONFIG, posterior)
    assert nobody.method is ReconcileMethod.NONE and nobody.label is None


def test_a_pairwise_or_score_check_is_left_to_the_majority_rule() -> None:
    pairwise = CHECK.model_copy(update={"kind": CheckKind.PAIRWISE})
    verdicts = [Verdict(check_id=pairwise.id, judge_id="a", status=VerdictStatus.OK, label=Label.A)]
    rec = reconcile_weighted("r", pairwise, verdicts, CONFIG, {Label.YES: 0.9, Label.NO: 0.1})
    assert rec == reconcile_check("r", pairwise, verdicts, CONFIG)
