"""Node: the jury's verdicts into one decision per check (judging.reconciliation's policy), the loose
re-retrieval trigger of seed 003 (element coverage under the threshold) and the route that follows: the loose
round, or the Q-CARE sufficiency round (its checks need R(q), the reconciled serve decisions), review, score."""


from __future__ import annotations

import asyncio

from langgraph.runtime import Runtime

from ragcourt.judging.reconciliation import reconcile_check, reconcile_weighted
from ragcourt.metrics.elements import coverage_of, needs_loose
from ragcourt.nodes.check_planner import sufficiency_due
from ragcourt.nodes.names import HUMAN_REVIEW, PLAN_CHECKS, RETRIEVE, SCORE
from ragcourt.nodes.state import EvalContext, SampleState, verdict_key
from ragcourt.schema import (
    LOOSE,
    NORMAL,
    CheckKind,
    Reconciled,
)
from ragcourt.schema.config import Method, ReviewMode


def normal_coverage(state: SampleState, reconciled: dict[str, Reconciled]) -> float | None:
    """Share of elements judged present in the normal context, a split counting 0.5 (the scorer's element
    coverage, the same function); None when nothing was decided."""
    return coverage_of(
        reconciled[c.id].yes_value for c in state.get("checks", {}).values()
        if c.kind is CheckKind.ELEMENT_IN_CONTEXT and c.condition == NORMAL and c.id in reconciled
    ).value


async def reconcile(state: SampleState, runtime: Runtime[EvalContext]) -> SampleState:
    ctx, run_id = runtime.context, state["run_id"]
    verdicts = state.get("verdicts", {})
    # check id -> newest review, read for this sample's checks only (a run's reviews grow with its samples)
    stored = await asyncio.to_thread(ctx.store.latest_reviews, run_id, list(state.get("checks", {})))
    reviews = {**stored, **state.get("reviews", {})}
    decided = {}
    for check in state.get("checks", {}).values():
        jury = [verdicts[k] for k in (verdict_key(check.id, j.judge_id) for j in ctx.judges) if k in verdicts]
        posterior = ctx.posteriors.get(check.id)
        decided[check.id] = (
            reconcile_weighted(run_id, check, jury, ctx.config, posterior, reviews.get(check.id)) if posterior
            else reconcile_check(run_id, check, jury, ctx.config, reviews.get(check.id))
        )
    await ctx.store.aput(*decided.values())
    update: SampleState = {"reconciled": decided}
    if (Method.ELEMENTS in ctx.config.methods and not state.get("loose_requested")
            and needs_loose(normal_coverage(state, decided), ctx.config.loose_coverage_threshold)):
        update["loose_requested"] = True
    return update


def route_after_reconcile(state: SampleState, runtime: Runtime[EvalContext]) -> str:
    if state.get("loose_requested") and LOOSE.key not in state.get("retrievals", {}) \
            and LOOSE.key not in state.get("unavailable", {}):
        return RETRIEVE  # the loose round plans the sufficiency checks too, when they are due
    if sufficiency_due(state, runtime.context.config):  # Q-CARE: R(q) is known now, judge sufficiency on it
        return PLAN_CHECKS
    pending = [r for r in state.get("reconciled", {}).values() if r.provisional]
    if pending and runtime.context.config.review_mode is ReviewMode.INLINE:
        return HUMAN_REVIEW
    return SCORE
