"""Node: the pairwise checks of one match, judged in both orders by every judge.

For each question: check (A, B) shows A's answer first, check (B, A) shows B's first. The judge sees the
question, the evidence each system retrieved (labelled by the position its answer is shown in) and the
reference answer when there is one. Checks are content addressed by texts, not system names, so the
same pair of answers is judged once per judge whatever the tournament; verdicts already in the store
are reused (transient failures are asked again), and a re-run makes no judge call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from langgraph.runtime import Runtime

from ragcourt.judging import Judge
from ragcourt.nodes.state import verdict_key
from ragcourt.nodes.tournament_state import MatchContext, MatchState
from ragcourt.schema import (
    NORMAL,
    Check,
    CheckKind,
    Chunk,
    Sample,
    Verdict,
    content_id,
    reusable,
)


def _chunk_lines(side: str, chunks: Sequence[Chunk]) -> str:
    if not chunks:
        return f"Retrieved for answer {side}: nothing (no retrieval, or a closed-book system)."
    lines = [f"Retrieved for answer {side}:"]
    for rank, chunk in enumerate(chunks, start=1):
        title = f" ({chunk.title})" if chunk.title else ""
        lines.append(f"[{side}{rank}]{title} {chunk.text}")
    return "\n".join(lines)


def render_evidence(first: Sample, second: Sample) -> str | None:
    """The chunks behind the answer shown as A, then those behind B; None when neither gives contexts."""
    if first.contexts is None and second.contexts is None:
        return None
    return f"{_chunk_lines('A', first.contexts or ())}\n\n{_chunk_lines('B', second.contexts or ())}"


def answer_id(text: str) -> str:
    return content_id("answer", text)


def pairwise_check(question: Sample, first: Sample, second: Sample) -> Check:
    """One order: `first`'s answer shown as A. The reference comes from the question sample."""
    a_text, b_text = first.answer or "", second.answer or ""
    return Check(
        kind=CheckKind.PAIRWISE, sample_id=question.id, condition=NORMAL,
        subject_id=answer_id(a_text), subject_text=a_text, target_id=answer_id(b_text), target_text=b_text,
        question=question.question, reference=question.reference_answer, evidence=render_evidence(first, second),
    )


def both_orders(question: Sample, answer_a: Sample, answer_b: Sample) -> tuple[Check, Check]:
    return pairwise_check(question, answer_a, answer_b), pairwise_check(question, answer_b, answer_a)


async def _ask(ctx: MatchContext, judge: Judge, check: Check) -> list[Verdict]:
    async with ctx.semaphore():
        try:
            return await judge.judge(CheckKind.PAIRWISE, [check])
        except Exception as error:  # noqa: BLE001 - a judge must never take the tournament down
            return [Verdict.failed(check.id, judge.judge_id, error)]


async def _jury_member(ctx: MatchContext, judge: Judge, checks: Sequence[Check]) -> list[Verdict]:
    stored = await ctx.store.aget_verdicts([c.id for c in checks], judge_id=judge.judge_id)
    known = {v.check_id: v for v in stored if reusable(v)}
    missing = [c for c in checks if c.id not in known]
    fresh = [v for batch in await asyncio.gather(*(_ask(ctx, judge, c) for c in missing)) for v in batch]
    await ctx.store.aput(*fresh)
    ctx.calls.asked += len(fresh)
    ctx.calls.reused += len(known)
    return [*known.values(), *fresh]


async def judge_pairs(state: MatchState, runtime: Runtime[MatchContext]) -> MatchState:
    ctx = runtime.context
    set_a, set_b = ctx.answer_sets[state["system_a"]], ctx.answer_sets[state["system_b"]]
    pairs = {q.id: both_orders(q, set_a.answers[q.id], set_b.answers[q.id]) for q in ctx.questions}
    # identical answers give one check for both orders: judge it once
    checks = list({c.id: c for pair in pairs.values() for c in pair}.values())
    await ctx.store.aput(*checks)
    for question_id, pair in pairs.items():
        await asyncio.to_thread(ctx.store.link_checks, ctx.run_id, question_id, [c.id for c in pair])
    verdicts = await asyncio.gather(*(_jury_member(ctx, judge, checks) for judge in ctx.judges))
    return {
        "checks": pairs,
        "verdicts": {verdict_key(v.check_id, v.judge_id): v for batch in verdicts for v in batch},
    }
