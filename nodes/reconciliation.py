"""Node: the jury's verdicts into one decision per check (judging.reconciliation's policy), the loose
re-retrieval trigger of seed 003 (element coverage under the threshold) and the route that follows: the loose
round, or the Q-CARE sufficiency round (its checks need R(q), the reconciled serve decisions), review, score."""


from __future__ import annotations

from langgraph.runtime import Runtime

from ragcourt.judging.reconciliation import reconcile_check, reconcile_weighted
from ragcourt.metrics.elements import coverage_of, needs_loose
from ragcourt.nodes.check_planner import record_checks, sufficiency_due, unplanned_sufficiency_checks
from ragcourt.nodes.names import HUMAN_REVIEW, PLAN_CHECKS, RETRIEVE, SCORE
from ragcourt.nodes.state import EvalContext, SampleState, verdict_key
from ragcourt.schema import (
    LOOSE,
    NORMAL,
    Check,
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
    ctx = runtime.context
    earlier = state.get("reconciled", {})
    decided = await _decide(ctx, state, list(state.get("checks", {}).values()), earlier)
    update: SampleState = {}
    # Batching joint: the judge's one reply also judged each sub-query's sufficiency on the claims it found to
    # serve it. Where R(q) is known now and every judge already gave a check on it a verdict, that check is
    # planned and decided here: no planning and reconciliation round of its own (the route finds it planned).
    verdicts = state.get("verdicts", {})
    answered = [c for c in unplanned_sufficiency_checks({**state, "reconciled": {**earlier, **decided}}, ctx.config)
                if all(verdict_key(c.id, j.judge_id) in verdicts for j in ctx.judges)]
    if answered:
        await record_checks(ctx, state, answered)
        decided.update(await _decide(ctx, state, answered, {}))
        update["checks"] = {c.id: c for c in answered}
    if decided:
        await ctx.store.aput(*decided.values())
    update["reconciled"] = decided
    if (Method.ELEMENTS in ctx.config.methods and not state.get("loose_requested")
            and needs_loose(normal_coverage(state, {**earlier, **decided}), ctx.config.loose_coverage_threshold)):
        update["loose_requested"] = True
    return update


async def _decide(ctx: EvalContext, state: SampleState, checks: list[Check],
                  earlier: dict[str, Reconciled]) -> dict[str, Reconciled]:
    """The jury's decision on each of `checks` not decided in `earlier`, and on each with a review."""
    run_id, verdicts = state["run_id"], state.get("verdicts", {})
    # check id -> newest review, read for these checks only (a run's reviews grow with its samples)
    stored = await ctx.store.aread(ctx.store.latest_reviews, run_id, [c.id for c in checks])
    reviews = {**stored, **state.get("reviews", {})}
    decided = {}
    for check in checks:
        if check.id in earlier and check.id not in reviews:
            # Decided in an earlier round of this sample, and nobody reviewed it since: a check's verdicts are
            # asked once per judge and the posteriors are fixed for the run, so the decision stands as it is.
            continue
        jury = [verdicts[k] for k in (verdict_key(check.id, j.judge_id) for j in ctx.judges) if k in verdicts]
        posterior = ctx.posteriors.get(check.id)
        decided[check.id] = (
            reconcile_weighted(run_id, check, jury, ctx.config, posterior, reviews.get(check.id)) if posterior
            else reconcile_check(run_id, check, jury, ctx.config, reviews.get(check.id))
        )
    return decided


async def route_after_reconcile(state: SampleState, runtime: Runtime[EvalContext]) -> str:
    if state.get("loose_requested") and LOOSE.key not in state.get("retrievals", {}) \
            and LOOSE.key not in state.get("unavailable", {}):
        return RETRIEVE  # the loose round plans the sufficiency checks too, when they are due
    if sufficiency_due(state, runtime.context.config):  # Q-CARE: R(q) is known now, judge sufficiency on it
        return PLAN_CHECKS
    pending = [r for r in state.get("reconciled", {}).values() if r.provisional]
    if pending and runtime.context.config.review_mode is ReviewMode.INLINE:
        return HUMAN_REVIEW
    return SCORE
