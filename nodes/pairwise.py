"""Node: the pairwise checks of one match, judged by every judge in both orders or in one drawn order.

For each question: check (A, B) shows A's answer first, check (B, A) shows B's first. Under
`OrderProtocol.BOTH` both are judged; under `SINGLE` (seed 001's protocol) one, drawn per question from the
order seed, the question and the two systems, so a re-run draws the same. The judge sees the question, the evidence each system retrieved (labelled by the position its answer is shown in) and the
reference answer when there is one. Checks are content addressed by texts, not system names, so the
same pair of answers is judged once per judge whatever the tournament; verdicts already in the store
are reused (transient failures are asked again), and a re-run makes no judge call.

Scalar metric judges (seed 001 4.2's threshold baseline) decide each judged check from the two answers'
columns; they call nothing and store nothing, so a changed figure in an answer file is never served stale.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence

from langgraph.runtime import Runtime

from ragcourt.judging import Judge
from ragcourt.metrics.dice import system_score, threshold_label
from ragcourt.nodes.state import verdict_key
from ragcourt.nodes.tournament_state import MatchContext, MatchState, OrderProtocol, PairChecks
from ragcourt.schema import (
    NORMAL,
    Check,
    CheckKind,
    Chunk,
    Sample,
    UnscoredReason,
    Verdict,
    VerdictStatus,
    content_id,
    reusable,
)
from ragcourt.schema.config import ThresholdJudgeSpec


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


def a_shown_first(seed: int, question_id: str, system_a: str, system_b: str) -> bool:
    """The single order's draw: a fair coin per question and match, reproducible from the seed."""
    return random.Random(f"{seed}|{question_id}|{system_a}|{system_b}").random() < 0.5


def match_checks(question: Sample, answer_a: Sample, answer_b: Sample, orders: OrderProtocol,
                 a_first: bool = True) -> PairChecks:
    """The checks judged for one question: both orders, or the one with A first when `a_first`, else B first."""
    first, second = both_orders(question, answer_a, answer_b)
    if orders is OrderProtocol.BOTH:
        return PairChecks(first, second)
    return PairChecks(first, None) if a_first else PairChecks(None, second)


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def metric_verdict(spec: ThresholdJudgeSpec, check: Check, shown_a: Sample, shown_b: Sample) -> Verdict:
    """The threshold baseline on one check: Score_S(q) of the answer shown as A against the one shown as B."""
    score_a, score_b = (system_score([_number(s.metadata.get(c)) for c in spec.columns]) for s in (shown_a, shown_b))
    if score_a.value is None or score_b.value is None:
        missing = [c for c in spec.columns if any(_number(s.metadata.get(c)) is None for s in (shown_a, shown_b))]
        return Verdict.unscored(check.id, spec.judge_id, UnscoredReason.MISSING_ITEM,
                                detail=f"no numeric figure for {', '.join(missing)} in both answers")
    label = threshold_label(score_a.value, score_b.value, spec.tie_margin)
    return Verdict(check_id=check.id, judge_id=spec.judge_id, status=VerdictStatus.OK, label=label,
                   rationale=f"Score_S(q): A {score_a.value:.4g}, B {score_b.value:.4g}, tie band {spec.tie_margin:g}")


def _metric_verdicts(ctx: MatchContext, pairs: dict[str, PairChecks], answer_a: dict[str, Sample],
                     answer_b: dict[str, Sample]) -> list[Verdict]:
    verdicts = []
    for question_id, pair in pairs.items():
        a, b = answer_a[question_id], answer_b[question_id]
        for spec in ctx.metric_judges:
            if pair.a_first is not None:
                verdicts.append(metric_verdict(spec, pair.a_first, a, b))
            if pair.b_first is not None:
                verdicts.append(metric_verdict(spec, pair.b_first, b, a))
    return verdicts


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
    system_a, system_b = state["system_a"], state["system_b"]
    set_a, set_b = ctx.answer_sets[system_a], ctx.answer_sets[system_b]
    pairs = {
        q.id: match_checks(q, set_a.answers[q.id], set_b.answers[q.id], ctx.orders,
                           a_shown_first(ctx.order_seed, q.id, system_a, system_b))
        for q in ctx.questions
    }
    # identical answers give one check for both orders: judge it once
    checks = list({c.id: c for pair in pairs.values() for c in pair.judged()}.values())
    await ctx.store.aput(*checks)
    await asyncio.gather(*(ctx.store.alink_checks(ctx.run_id, question_id, [c.id for c in pair.judged()])
                           for question_id, pair in pairs.items()))  # one group commit for all the questions
    verdicts = await asyncio.gather(*(_jury_member(ctx, judge, checks) for judge in ctx.judges))
    metric = _metric_verdicts(ctx, pairs, dict(set_a.answers), dict(set_b.answers))
    return {
        "checks": pairs,
        "verdicts": {verdict_key(v.check_id, v.judge_id): v for batch in [*verdicts, metric] for v in batch},
    }
