"""Node: turn the state into the atomic checks the jury must decide (content addressed, so stable)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from typing import TypedDict, Unpack

from langgraph.runtime import Runtime

from ragcourt.nodes.state import EvalContext, SampleState
from ragcourt.prompts.library import PromptId, load_prompt
from ragcourt.schema import (
    LOOSE,
    NORMAL,
    Check,
    CheckKind,
    Chunk,
    Condition,
    ConditionKind,
    VerdictStatus,
    WholeTarget,
)
from ragcourt.schema.config import EvalConfig, Method

RUBRICS = {
    "relevance": PromptId.RUBRIC_RELEVANCE,
    "specificity": PromptId.RUBRIC_SPECIFICITY,
    "completeness": PromptId.RUBRIC_COMPLETENESS,
    "quality": PromptId.RUBRIC_QUALITY,
}
CUBE_CONDITIONS = (ConditionKind.NORMAL, ConditionKind.CLOSED_BOOK, ConditionKind.ORACLE)


class _CheckExtra(TypedDict, total=False):
    """The optional fields of a Check that some kinds set (passed on only when given)."""

    dimension: str | None
    reference: str | None


def render_context(chunks: Sequence[Chunk]) -> str:
    return "\n\n".join(f"[{c.title}] {c.text}" if c.title else c.text for c in chunks)


def build_checks(state: SampleState, config: EvalConfig) -> list[Check]:
    return list(_checks(state, config))


def _checks(state: SampleState, config: EvalConfig) -> Iterator[Check]:
    sample = state["sample"]
    retrievals, answers = state.get("retrievals", {}), state.get("answers", {})
    normal = retrievals.get(NORMAL.key)
    answer = answers.get(NORMAL.key)
    answered = answer is not None and answer.status is VerdictStatus.OK

    def check(kind: CheckKind, condition: Condition, subject: tuple[str, str], target: tuple[str, str],
              **extra: Unpack[_CheckExtra]) -> Check:
        return Check(kind=kind, sample_id=sample.id, condition=condition, subject_id=subject[0],
                     subject_text=subject[1], target_id=target[0], target_text=target[1],
                     question=sample.question, **extra)

    if Method.ELEMENTS in config.methods:
        for element in state.get("elements", ()):
            for retrieval in (normal, retrievals.get(LOOSE.key)):
                if retrieval is not None:
                    context = (retrieval.condition.context_target, render_context(retrieval.chunks))
                    yield check(CheckKind.ELEMENT_IN_CONTEXT, retrieval.condition, (element.id, element.text), context)
            if answered and answer is not None:  # answered implies an answer; the test narrows the type
                yield check(CheckKind.ELEMENT_IN_ANSWER, NORMAL, (element.id, element.text), (WholeTarget.ANSWER, answer.text))
    if Method.QCARE in config.methods:
        subqueries = state.get("subqueries", ())
        claims = state.get("claims", {}).get(NORMAL.key, ())
        chunks = normal.chunks if normal else ()
        for sq in subqueries:
            for chunk in chunks:
                yield check(CheckKind.SUBQUERY_IN_CHUNK, NORMAL, (sq.id, sq.text), (chunk.id, chunk.text))
            if claims:
                joined = "\n".join(c.text for c in claims)
                yield check(CheckKind.SUBQUERY_ANSWERED, NORMAL, (sq.id, sq.text), (WholeTarget.CLAIMS, joined))
        for claim in claims:
            for chunk in chunks:
                yield check(CheckKind.CLAIM_SUPPORTED, NORMAL, (claim.id, claim.text), (chunk.id, chunk.text))
            for sq in subqueries:
                yield check(CheckKind.CLAIM_SERVES_SUBQUERY, NORMAL, (claim.id, claim.text), (sq.id, sq.text))
    if Method.CUBE in config.methods:
        # CuBE's rubrics judge an answer against the source material: the gold documents, else the reference.
        source = render_context(sample.gold_documents) or sample.reference_answer
        for kind in CUBE_CONDITIONS:
            cube_answer = answers.get(str(kind))
            if cube_answer is None or cube_answer.status is not VerdictStatus.OK:
                continue
            for dimension in config.dimensions:
                rubric = dimension.rubric or load_prompt(RUBRICS[dimension.name]).template
                yield check(CheckKind.DIMENSION_SCORE, cube_answer.condition, (WholeTarget.ANSWER, cube_answer.text),
                            (f"rubric:{dimension.name}", rubric), dimension=dimension.name, reference=source)


async def plan_checks(state: SampleState, runtime: Runtime[EvalContext]) -> SampleState:
    ctx = runtime.context
    known = state.get("checks", {})
    new = [c for c in build_checks(state, ctx.config) if c.id not in known]
    if new:
        await ctx.store.aput(*new)
        await asyncio.to_thread(ctx.store.link_checks, state["run_id"], state["sample"].id, [c.id for c in new])
    return {"checks": {c.id: c for c in new}}
