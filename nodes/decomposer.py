"""Node: the question into sub-queries (Q-CARE) and the reference answer into frozen elements (seed 003)."""

from __future__ import annotations

import asyncio

from langgraph.runtime import Runtime

from ragcourt.judging.decomposers import split_for_sample
from ragcourt.metrics.elements import is_pointer_element
from ragcourt.nodes.names import SPLIT_ANSWERS, SPLIT_INPUTS
from ragcourt.nodes.state import EvalContext, SampleState
from ragcourt.schema import Decomposition, DecompositionKind, Element, SubQuery, VerdictStatus, content_id
from ragcourt.schema.config import Method


def route_splits(state: SampleState) -> list[str]:
    """After the answers: their claims and, on the first pass, the question and reference too. Both in one
    superstep, so neither LLM round waits for the other (LangGraph runs a step's nodes concurrently and the
    next step after all of them); the loose pass has inputs split already."""
    return [SPLIT_ANSWERS] if state.get("loose_requested") else [SPLIT_INPUTS, SPLIT_ANSWERS]


async def decompose_inputs(state: SampleState, runtime: Runtime[EvalContext]) -> SampleState:
    ctx, sample = runtime.context, state["sample"]
    update: SampleState = {}
    wants_subqueries = Method.QCARE in ctx.config.methods
    wants_elements = Method.ELEMENTS in ctx.config.methods and bool(sample.reference_answer)
    # Both splits at once: they are independent, and one LLM round less per sample shortens its critical path.
    subquery_split, element_split = await asyncio.gather(
        _split(ctx, state, DecompositionKind.SUBQUERIES, sample.question, wants_subqueries),
        _split(ctx, state, DecompositionKind.ELEMENTS, sample.reference_answer or "", wants_elements),
    )
    # A failed split sets nothing: the scorer reports its metrics n/a instead of leaving them out.
    if subquery_split is not None and subquery_split.status is VerdictStatus.OK:
        update["subqueries"] = tuple(
            SubQuery(id=content_id(subquery_split.id, i, text), text=text, index=i)
            for i, text in enumerate(subquery_split.items)
        )
    if element_split is not None and element_split.status is VerdictStatus.OK:
        elements = tuple(
            Element(id=content_id(element_split.id, i, text), text=text, index=i)
            for i, text in enumerate(element_split.items)
        )
        # The pointer rule runs over the frozen (possibly edited) list, never changes what is stored, and the
        # dropped elements stay in the state so the scorer reports them.
        dropped = tuple(e for e in elements if ctx.config.drop_pointer_elements and is_pointer_element(e.text))
        update["elements"] = tuple(e for e in elements if e not in dropped)
        update["dropped_elements"] = dropped
    return update


async def _split(
    ctx: EvalContext, state: SampleState, kind: DecompositionKind, text: str, wanted: bool
) -> Decomposition | None:
    if not wanted:
        return None
    sample = state["sample"]
    # Sub-queries of a conversation's question are resolved against its history (seed 002, section 6);
    # elements are the split of a reference alone.
    history = sample.history if kind is DecompositionKind.SUBQUERIES else ()
    return await split_for_sample(
        ctx.store, ctx.decomposer, kind, text, sample.question, run_id=state["run_id"],
        sample_id=sample.id, pinned=state.get("pinned_splits", ()), in_flight=ctx.splits_in_flight,
        history=history,
    )
