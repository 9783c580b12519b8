"""Decisions are looked up by subject text: two equal claims share one content-addressed check."""

from __future__ import annotations

from ragcourt.nodes.scorer import Decisions
from ragcourt.schema import NORMAL, Check, CheckKind, Label, Reconciled, ReconcileMethod


def test_two_claims_with_the_same_text_both_get_the_one_checks_decision() -> None:
    first = Check(kind=CheckKind.CLAIM_SUPPORTED, sample_id="s", condition=NORMAL, subject_id="claim-1",
                  subject_text="Paris is in France.", target_id="ctx", target_text="Paris, France.")
    second = first.model_copy(update={"subject_id": "claim-2"})
    assert Check(**second.model_dump(exclude={"id"})).id == first.id  # one check for both claims
    decided = Reconciled(run_id="r", check_id=first.id, kind=first.kind, sample_id="s", label=Label.YES,
                         method=ReconcileMethod.MAJORITY, n_scored=1, n_unscored=0)
    decisions = Decisions([first], {first.id: decided})
    assert decisions.get(CheckKind.CLAIM_SUPPORTED, "Paris is in France.", "ctx") is True
    assert decisions.get(CheckKind.CLAIM_SUPPORTED, "Paris is not in France.", "ctx") is None
