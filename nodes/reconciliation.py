"""Node: the jury's verdicts into one decision per check, and the route that follows.

Binary checks: majority label; on a tie the first judge of the configuration decides provisionally.
Scores: mean. Probabilities: the mean of the judges' probabilities, or the vote shares without them.
A check escalates when the share of scored judges agreeing with the label is below
`escalate_below_agreement`, when scores spread more than `escalate_score_spread`, or when no judge gave
a scored verdict. Unscored verdicts are excluded and counted. A person's review overrides everything.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from statistics import mean

from langgraph.runtime import Runtime

from ragcourt.schema.config import EvalConfig, Method, ReviewMode
from ragcourt.metrics.elements import needs_loose
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
    Verdict,
)
from ragcourt.nodes.state import EvalContext, SampleState, verdict_key

HUMAN_REVIEW, SCORE, RETRIEVE = "human_review", "score", "retrieve_perturb"


def reconcile_check(
    run_id: str, check: Check, verdicts: Sequence[Verdict], config: EvalConfig, review: Review | None = None
) -> Reconciled:
    # A verdict counts only when it carries what the kind needs (a score for dimensions, else a label):
    # a judge that gave the wrong field has not decided this check.
    wanted = "score" if check.kind is CheckKind.DIMENSION_SCORE else "label"
    scored = [v for v in verdicts if v.scored and getattr(v, wanted) is not None]
    base = {"run_id": run_id, "check_id": check.id, "kind": check.kind, "sample_id": check.sample_id,
            "n_scored": len(scored), "n_unscored": len(verdicts) - len(scored)}
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
    label = leaders[0] if len(leaders) == 1 else next(v.label for v in scored if v.label in leaders)
    agreement = top / len(scored)
    escalated = agreement < config.escalate_below_agreement
    return Reconciled(
        label=label, probabilities=_probabilities(scored, votes), agreement=agreement,
        method=ReconcileMethod.MEAN_PROBABILITY if any(v.probabilities for v in scored) else ReconcileMethod.MAJORITY,
        escalated=escalated, provisional=escalated,
        escalation_reason=f"judges disagree ({_tally(votes)})" if escalated else None, **base,
    )


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


def normal_coverage(state: SampleState, reconciled: dict[str, Reconciled]) -> float | None:
    """Share of elements judged present in the normal context; None when nothing was decided."""
    decided = [
        reconciled[c.id].label for c in state.get("checks", {}).values()
        if c.kind is CheckKind.ELEMENT_IN_CONTEXT and c.condition == NORMAL and c.id in reconciled
        and reconciled[c.id].label is not None
    ]
    return sum(label is Label.YES for label in decided) / len(decided) if decided else None


async def reconcile(state: SampleState, runtime: Runtime[EvalContext]) -> SampleState:
    ctx, run_id = runtime.context, state["run_id"]
    verdicts = state.get("verdicts", {})
    # check id -> newest review, read for this sample's checks only (a run's reviews grow with its samples)
    stored = await asyncio.to_thread(ctx.store.latest_reviews, run_id, list(state.get("checks", {})))
    reviews = {**stored, **state.get("reviews", {})}
    decided = {}
    for check in state.get("checks", {}).values():
        jury = [verdicts[k] for k in (verdict_key(check.id, j.judge_id) for j in ctx.judges) if k in verdicts]
        decided[check.id] = reconcile_check(run_id, check, jury, ctx.config, reviews.get(check.id))
    await ctx.store.aput(*decided.values())
    update: SampleState = {"reconciled": decided}
    if (Method.ELEMENTS in ctx.config.methods and not state.get("loose_requested")
            and needs_loose(normal_coverage(state, decided), ctx.config.loose_coverage_threshold)):
        update["loose_requested"] = True
    return update


def route_after_reconcile(state: SampleState, runtime: Runtime[EvalContext]) -> str:
    if state.get("loose_requested") and LOOSE.key not in state.get("retrievals", {}) \
            and LOOSE.key not in state.get("unavailable", {}):
        return RETRIEVE
    pending = [r for r in state.get("reconciled", {}).values() if r.provisional]
    if pending and runtime.context.config.review_mode is ReviewMode.INLINE:
        return HUMAN_REVIEW
    return SCORE
