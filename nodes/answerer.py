"""Node: the system's answer under every condition that has a context and needs an answer.

Loose retrieval is only judged for element coverage (seed 003), so it gets no answer. A condition the
system cannot answer (precomputed outputs exist only for normal) is recorded as unavailable with the
reason; a system that raises gives an unscored answer with the error, and the run goes on. An answer says
whether its trace is the system's own (reported) or there is none, and, with `confidence_probe` configured,
gets a probed confidence where the system reports none (CUE-R's conditions only).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from langgraph.runtime import Runtime

from ragcourt.nodes.state import EvalContext, SampleState
from ragcourt.schema import (
    LOOSE,
    NORMAL,
    Answer,
    ConditionKind,
    ConfidenceSource,
    Retrieval,
    TraceSource,
    VerdictStatus,
    reusable,
)
from ragcourt.systems import ConditionUnavailable, Generation


async def answer(state: SampleState, runtime: Runtime[EvalContext]) -> SampleState:
    ctx = runtime.context
    # Answers stored by an earlier, interrupted attempt of this run are reused: the system is not asked twice,
    # unless it failed transiently then (it raised or timed out): that sample is being evaluated again.
    answers = state.get("answers") or {
        a.condition.key: a
        for a in await ctx.store.aread(ctx.store.get_answers, state["run_id"], state["sample"].id)
        if reusable(a)
    }
    pending = [
        r for key, r in state.get("retrievals", {}).items()
        if key not in answers and key != LOOSE.key and key not in state.get("unavailable", {})
    ]
    if state.get("retrieval_hidden") and NORMAL.key not in answers:
        # The system answers without showing its retrieval: ask for its answer with no chunks (not stored as
        # a retrieval, so nothing downstream mistakes it for an empty one).
        pending.append(Retrieval(run_id=state["run_id"], sample_id=state["sample"].id, condition=NORMAL,
                                 chunks=(), made_by="retrieval not shown by the system"))
    results = await asyncio.gather(*(_answer_one(ctx, state, r) for r in pending))
    made = [a for a in results if isinstance(a, Answer)]
    unavailable = {r.condition.key: reason for r, reason in zip(pending, results, strict=True) if isinstance(reason, str)}
    if made:
        await ctx.store.aput(*made)
    return {"answers": {**answers, **{a.condition.key: a for a in made}}, "unavailable": unavailable}


async def _answer_one(ctx: EvalContext, state: SampleState, retrieval: Retrieval) -> Answer | str:
    sample = state["sample"]
    started = time.perf_counter()
    common: dict[str, Any] = {
        "run_id": state["run_id"], "sample_id": sample.id, "condition": retrieval.condition
    }
    try:
        generation = await ctx.system.generate(sample, retrieval.chunks, retrieval.condition)
    except ConditionUnavailable as reason:
        return str(reason)
    except Exception as error:  # the system under test failed on this sample: keep the reason
        return Answer.failed(error, latency_s=time.perf_counter() - started, **common)
    latency = time.perf_counter() - started
    confidence, source = generation.confidence, ConfidenceSource.REPORTED
    if confidence is None:
        confidence, source = await _probed(ctx, sample.question, retrieval, generation)
    reported = generation.used_chunk_ids is not None
    return Answer(
        text=generation.text, used_chunk_ids=generation.used_chunk_ids or (),
        trace_source=TraceSource.REPORTED if reported else TraceSource.NONE,
        confidence=confidence, confidence_source=source,
        latency_s=latency, usage=generation.usage, status=generation.status,
        unscored_reason=generation.unscored_reason, error=generation.error, raw_output=generation.raw_output,
        **common,
    )


async def _probed(ctx: EvalContext, question: str, retrieval: Retrieval, generation: Generation
                  ) -> tuple[float | None, ConfidenceSource]:
    """The configured probe's confidence for an answer of CUE-R's conditions that came without one (PROBED with
    None: the probe's reply was unusable); NONE when the probe is off or there is nothing to rate."""
    kind = retrieval.condition.kind
    cuer_condition = kind.is_perturbation or kind in (ConditionKind.NORMAL, ConditionKind.CLOSED_BOOK)
    if ctx.confidence_probe is None or generation.status is not VerdictStatus.OK or not cuer_condition:
        return None, ConfidenceSource.NONE
    try:
        return await ctx.confidence_probe.probe(question, retrieval.chunks, generation.text), ConfidenceSource.PROBED
    except Exception:  # a probe must not fail the answer it rates: the confidence stays unknown
        return None, ConfidenceSource.PROBED
