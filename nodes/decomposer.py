"""Node: the question into sub-queries (Q-CARE) and the reference answer into frozen elements (seed 003)."""

from __future__ import annotations

import asyncio

from langgraph.runtime import Runtime

from ragcourt.judging.decomposers import SplitRequest, joint_splits, split_for_sample
from ragcourt.metrics.elements import is_pointer_element
from ragcourt.nodes.names import SPLIT_ANSWERS, SPLIT_INPUTS
from ragcourt.nodes.state import EvalContext, SampleState
from ragcourt.schema import (
    NORMAL,
    Claim,
    Decomposition,
    DecompositionKind,
    Element,
    SubQuery,
    VerdictStatus,
    content_id,
)
from ragcourt.schema.config import Batching, Method


async def route_splits(state: SampleState, runtime: Runtime[EvalContext]) -> list[str]:
    """After the answers: their claims and, on the first pass, the question and reference too. Both in one
    superstep, so neither LLM round waits for the other (LangGraph runs a step's nodes concurrently and the
    next step after all of them); the loose pass has inputs split already. Batching joint: the first pass's
    splits are one node's one call (the normal answer's claims with them); the claims of CUE-R's perturbed
    answers, if any, beside it."""
    if state.get("loose_requested"):
        return [SPLIT_ANSWERS]
    config = runtime.context.config
    if config.batching is Batching.JOINT and Method.CUER not in config.methods:
        return [SPLIT_INPUTS]
    return [SPLIT_INPUTS, SPLIT_ANSWERS]


async def decompose_inputs(state: SampleState, runtime: Runtime[EvalContext]) -> SampleState:
    ctx, sample = runtime.context, state["sample"]
    wants_subqueries = Method.QCARE in ctx.config.methods
    wants_elements = bool({Method.ELEMENTS, Method.REFERENCE} & set(ctx.config.methods)) \
        and bool(sample.reference_answer)
    if ctx.config.batching is Batching.JOINT:
        return await _joint(ctx, state, wants_subqueries, wants_elements)
    # Both splits at once: they are independent, and one LLM round less per sample shortens its critical path.
    subquery_split, element_split = await asyncio.gather(
        _split(ctx, state, DecompositionKind.SUBQUERIES, sample.question, wants_subqueries),
        _split(ctx, state, DecompositionKind.ELEMENTS, sample.reference_answer or "", wants_elements),
    )
    return _inputs_update(ctx, subquery_split, element_split)


async def _joint(ctx: EvalContext, state: SampleState, wants_subqueries: bool, wants_elements: bool) -> SampleState:
    """Batching joint: the question, the reference and the normal answer split in one call (those not frozen)."""
    sample = state["sample"]
    requests = []
    if wants_subqueries:
        requests.append(SplitRequest(DecompositionKind.SUBQUERIES, sample.question))
    if wants_elements:
        requests.append(SplitRequest(DecompositionKind.ELEMENTS, sample.reference_answer or ""))
    answer = state.get("answers", {}).get(NORMAL.key)
    # With CUE-R, decompose_answers splits every answer's claims beside this node (route_splits).
    methods = set(ctx.config.methods)
    wants_claims = bool({Method.QCARE, Method.REFERENCE} & methods) and Method.CUER not in methods
    answer_claims = wants_claims and answer is not None and answer.status is VerdictStatus.OK \
        and NORMAL.key not in state.get("claims", {})
    if answer_claims and answer is not None and answer.text:  # the empty answer has no claims to split (below)
        requests.append(SplitRequest(DecompositionKind.CLAIMS, answer.text))
    splits = await joint_splits(
        ctx.store, ctx.decomposer, requests, sample.question, run_id=state["run_id"], sample_id=sample.id,
        pinned=state.get("pinned_splits", ()), in_flight=ctx.splits_in_flight, history=sample.history)
    update = _inputs_update(ctx, splits.get(DecompositionKind.SUBQUERIES), splits.get(DecompositionKind.ELEMENTS))
    claims = splits.get(DecompositionKind.CLAIMS)
    if answer_claims and answer is not None and not answer.text:
        update["claims"] = {NORMAL.key: ()}
    elif claims is not None and claims.status is VerdictStatus.OK:  # a failed split sets nothing, as decompose_answers
        update["claims"] = {NORMAL.key: tuple(Claim(id=content_id(claims.id, i, item), text=item, index=i)
                                              for i, item in enumerate(claims.items))}
    return update


def _inputs_update(ctx: EvalContext, subquery_split: Decomposition | None,
                   element_split: Decomposition | None) -> SampleState:
    update: SampleState = {}
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
