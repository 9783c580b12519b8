"""Node: each judged answer into self-contained atomic claims (seed 002, 3.2)."""

from __future__ import annotations

from langgraph.runtime import Runtime

from ragcourt.judging.decomposers import split_for_sample
from ragcourt.nodes.state import EvalContext, SampleState
from ragcourt.schema import NORMAL, Claim, DecompositionKind, VerdictStatus, content_id
from ragcourt.schema.config import Method


async def decompose_answers(state: SampleState, runtime: Runtime[EvalContext]) -> SampleState:
    """Claims are needed for the normal answer only: Q-CARE judges the system as it runs."""
    ctx = runtime.context
    if Method.QCARE not in ctx.config.methods or NORMAL.key in state.get("claims", {}):
        return {}
    answer = state.get("answers", {}).get(NORMAL.key)
    if answer is None or answer.status is not VerdictStatus.OK:
        return {}
    sample = state["sample"]
    split = await split_for_sample(
        ctx.store, ctx.decomposer, DecompositionKind.CLAIMS, answer.text, sample.question, run_id=state["run_id"],
        sample_id=sample.id, pinned=state.get("pinned_splits", ()), in_flight=ctx.splits_in_flight,
    )
    if split.status is not VerdictStatus.OK:  # unknown claims, not an answer without claims: the scorer says n/a
        return {}
    claims = tuple(Claim(id=content_id(split.id, i, text), text=text, index=i) for i, text in enumerate(split.items))
    return {"claims": {NORMAL.key: claims}}
