"""The jury's verdicts on one check into one decision: the pure reconciliation policy.

Binary checks: majority label. When the scored judges split evenly (1-1 for two judges) there is no majority:
the record is `split`, has no label (a binary check) or Tie (a pairwise one, seed 001's hard score), and always
escalates; where seed 003 averages the two judges' results a split counts 0.5 (`Reconciled.yes_value`).
Nothing depends on the order the judges are listed in: not the label, the probabilities, nor the reason.
Scores: mean. Probabilities: the mean of the judges' probabilities, or the vote shares without them.
A check escalates when the share of scored judges agreeing with the label is below
`escalate_below_agreement`, when the judges split, when scores spread more than `escalate_score_spread`, or
when no judge gave a scored verdict. Unscored verdicts are excluded and counted. A person's review overrides
everything.

Weighted (`reconcile: weighted`): a binary check is decided by the posterior of the run's jury (Dawid-Skene,
validity.jury_weights) instead of the vote: its label is the more probable one and its probabilities are the
posterior. It escalates as the majority rule would (the judges disagree, split, or none scored) and also when
the posterior of its label is below `escalate_below_posterior`; an even posterior is a split.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from statistics import mean
from typing import Any

from ragcourt.schema import (
    Check,
    CheckKind,
    Label,
    Reconciled,
    ReconcileMethod,
    Review,
    ReviewAction,
    Verdict,
)
from ragcourt.schema.config import EvalConfig


def reconcile_check(
    run_id: str, check: Check, verdicts: Sequence[Verdict], config: EvalConfig, review: Review | None = None
) -> Reconciled:
    # A verdict counts only when it carries what the kind needs (a score for dimensions, else a label):
    # a judge that gave the wrong field has not decided this check.
    wanted = "score" if check.kind is CheckKind.DIMENSION_SCORE else "label"
    scored = [v for v in verdicts if v.scored and getattr(v, wanted) is not None]
    base: dict[str, Any] = {"run_id": run_id, "check_id": check.id, "kind": check.kind,
                            "sample_id": check.sample_id, "n_scored": len(scored),
                            "n_unscored": len(verdicts) - len(scored)}
    if review is not None and review.action is not ReviewAction.SKIP:
        return Reconciled(label=review.label, score=review.score, method=ReconcileMethod.HUMAN, agreement=None,
                          escalated=True, escalation_reason="decided by a person", **base)
    if not scored:
        return Reconciled(method=ReconcileMethod.NONE, escalated=True, provisional=True,
                          escalation_reason="no judge gave a scored verdict", **base)
    if check.kind is CheckKind.DIMENSION_SCORE:
        scores = [v.score for v in scored if v.score is not None]
        spread = max(scores) - min(scores)
        escalated = spread > config.escalate_score_spread
        return Reconciled(score=mean(scores), method=ReconcileMethod.MEAN, agreement=None, escalated=escalated,
                          provisional=escalated,
                          escalation_reason=f"scores spread {spread:g} > {config.escalate_score_spread:g}"
                          if escalated else None, **base)
    votes: dict[Label, int] = {}  # a dict, not a Counter: this runs for every check of every sample
    for verdict in scored:
        if verdict.label is not None:
            votes[verdict.label] = votes.get(verdict.label, 0) + 1
    top = max(votes.values())
    leaders = [label for label, count in votes.items() if count == top]
    agreement = top / len(scored)
    decision: dict[str, Any] = {
        "probabilities": _probabilities(scored, votes), "agreement": agreement,
        "method": ReconcileMethod.MEAN_PROBABILITY if any(v.probabilities for v in scored) else ReconcileMethod.MAJORITY,
    }
    if len(leaders) > 1:  # no majority: picking a leader would let the judges' listed order decide
        return Reconciled(label=Label.TIE if check.kind is CheckKind.PAIRWISE else None, split=True, escalated=True,
                          provisional=True, escalation_reason=f"judges split ({_tally(votes)})", **decision, **base)
    escalated = agreement < config.escalate_below_agreement
    return Reconciled(
        label=leaders[0], escalated=escalated, provisional=escalated,
        escalation_reason=f"judges disagree ({_tally(votes)})" if escalated else None, **decision, **base,
    )


def reconcile_weighted(
    run_id: str, check: Check, verdicts: Sequence[Verdict], config: EvalConfig,
    posterior: Mapping[Label, float] | None, review: Review | None = None,
) -> Reconciled:
    """`reconcile_check`, with a binary check decided by `posterior` (P(yes), P(no) from the jury's estimates);
    without a posterior, or for another kind, or when no judge scored it, exactly `reconcile_check`."""
    voted = reconcile_check(run_id, check, verdicts, config, review)
    if posterior is None or not check.kind.is_binary or voted.method in (ReconcileMethod.HUMAN, ReconcileMethod.NONE):
        return voted
    p_yes, p_no = posterior.get(Label.YES, 0.0), posterior.get(Label.NO, 0.0)
    label = Label.YES if p_yes > p_no else Label.NO if p_no > p_yes else None
    reasons = [voted.escalation_reason] if voted.escalated and voted.escalation_reason else []
    if label is not None and max(p_yes, p_no) < config.escalate_below_posterior:
        reasons.append(f"posterior {max(p_yes, p_no):.2f} < {config.escalate_below_posterior:g}")
    if label is None:
        reasons.append("posterior even (0.50)")
    escalated = bool(reasons)
    agreeing = sum(1 for v in verdicts if v.scored and v.label is label)
    return voted.model_copy(update={
        "label": label, "probabilities": {Label.YES: p_yes, Label.NO: p_no}, "method": ReconcileMethod.WEIGHTED,
        "agreement": agreeing / voted.n_scored if label is not None else voted.agreement,
        "split": label is None, "escalated": escalated, "provisional": escalated,
        "escalation_reason": "; ".join(reasons) if reasons else None,
    })


def _tally(votes: dict[Label, int]) -> str:
    """`yes 2, no 1`, most votes first: people read the reason (review desk, report, decisions.csv)."""
    return ", ".join(f"{label.value} {n}" for label, n in sorted(votes.items(), key=lambda kv: (-kv[1], kv[0])))


def _probabilities(scored: Sequence[Verdict], votes: dict[Label, int]) -> dict[Label, float]:
    with_probs = [v.probabilities for v in scored if v.probabilities]
    if with_probs:
        labels = {label for p in with_probs for label in p}
        return {label: mean(p.get(label, 0.0) for p in with_probs) for label in labels}
    total = sum(votes.values())
    return {label: count / total for label, count in votes.items()}
