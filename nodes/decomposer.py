"""Node: the question into sub-queries (Q-CARE) and the reference answer into frozen elements (seed 003)."""

from __future__ import annotations

from langgraph.runtime import Runtime

from ragcourt.config import Method
from ragcourt.decomposers import frozen_split
from ragcourt.schema import DecompositionKind, Element, SubQuery, content_id
from ragcourt.state import EvalContext, SampleState


async def decompose_inputs(state: SampleState, runtime: Runtime[EvalContext]) -> SampleState:
    ctx, sample = runtime.context, state["sample"]
    update: SampleState = {}
    if Method.QCARE in ctx.config.methods:
        split = await frozen_split(
            ctx.store, ctx.decomposer, DecompositionKind.SUBQUERIES, sample.question, sample.question
        )
        update["subqueries"] = tuple(
            SubQuery(id=content_id(split.id, i, text), text=text, index=i) for i, text in enumerate(split.items)
        )
    if Method.ELEMENTS in ctx.config.methods and sample.reference_answer:
        split = await frozen_split(
            ctx.store, ctx.decomposer, DecompositionKind.ELEMENTS, sample.reference_answer, sample.question
        )
        update["elements"] = tuple(
            Element(id=content_id(split.id, i, text), text=text, index=i) for i, text in enumerate(split.items)
        )
    return update
