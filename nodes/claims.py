"""Node: each judged answer into self-contained atomic claims (seed 002, 3.2).

Q-CARE judges the normal answer's claims. CUE-R needs the claims of every answer whose system reports no
trace (normal and each perturbed condition), so the jury can find the chunks that support them: that is the
judged trace (`judged_trace_conditions`).
"""

from __future__ import annotations

import asyncio

from langgraph.runtime import Runtime

from ragcourt.judging.decomposers import frozen_split, split_for_sample
from ragcourt.nodes.state import EvalContext, SampleState
from ragcourt.schema import (
    NORMAL,
    Claim,
    Condition,
    DecompositionKind,
    TraceSource,
    VerdictStatus,
    content_id,
)
from ragcourt.schema.config import Method


def judged_trace_conditions(state: SampleState) -> list[str]:
    """The conditions whose answer gets a judged CUE-R trace: normal, then the perturbations (sorted, so a
    resumed run plans the same checks), answered, without a trace from the system, and shown some chunk
    (shown none, the used set is empty without any check)."""
    answers, retrievals = state.get("answers", {}), state.get("retrievals", {})
    perturbed = sorted(key for key in retrievals if Condition.parse(key).kind.is_perturbation)
    return [
        key for key in (NORMAL.key, *perturbed)
        if key in answers and key in retrievals and retrievals[key].chunks
        and answers[key].status is VerdictStatus.OK and answers[key].trace_source is TraceSource.NONE
    ]


async def decompose_answers(state: SampleState, runtime: Runtime[EvalContext]) -> SampleState:
    """Claims of the normal answer for Q-CARE, and of the answers CUE-R must judge a trace for."""
    ctx = runtime.context
    wanted = [NORMAL.key] if {Method.QCARE, Method.REFERENCE} & set(ctx.config.methods) else []
    if Method.CUER in ctx.config.methods:
        wanted += judged_trace_conditions(state)
    answers, have = state.get("answers", {}), state.get("claims", {})
    pending = [
        key for key in dict.fromkeys(wanted)
        if key not in have and key in answers and answers[key].status is VerdictStatus.OK
    ]
    splits = await asyncio.gather(*(_claims(ctx, state, key) for key in pending))
    # A failed split sets nothing: unknown claims, not an answer without claims (the scorer says n/a).
    found = {key: claims for key, claims in zip(pending, splits, strict=True) if claims is not None}
    return {"claims": found} if found else {}


async def _claims(ctx: EvalContext, state: SampleState, key: str) -> tuple[Claim, ...] | None:
    sample, text = state["sample"], state["answers"][key].text
    if not text:  # the empty answer states nothing: no claims, and no decomposer asked to find some in it
        return ()
    if key == NORMAL.key:
        split = await split_for_sample(
            ctx.store, ctx.decomposer, DecompositionKind.CLAIMS, text, sample.question, run_id=state["run_id"],
            sample_id=sample.id, pinned=state.get("pinned_splits", ()), in_flight=ctx.splits_in_flight,
            history=sample.history,
        )
    else:  # not pinned: a run pins one claim split per sample, the normal answer's
        split = await frozen_split(ctx.store, ctx.decomposer, DecompositionKind.CLAIMS, text, sample.question,
                                   ctx.splits_in_flight, history=sample.history)
    if split.status is not VerdictStatus.OK:
        return None
    return tuple(Claim(id=content_id(split.id, i, item), text=item, index=i) for i, item in enumerate(split.items))
