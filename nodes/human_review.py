"""Node: inline human review. The graph interrupts with the pending escalations and resumes with the
person's decisions (`Command(resume=[ReviewDecision...])`), possibly in another process: the
checkpointer keeps the state. Decisions are stored at once and override the jury.

Deferred review (the default for batch runs) needs no node: provisional escalations stay in the store's
review queue and `ragcourt review` resolves them later.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import interrupt
from pydantic import TypeAdapter

from ragcourt.judging.reconciliation import reconcile_check
from ragcourt.nodes.state import EvalContext, SampleState, verdict_key
from ragcourt.schema import Review
from ragcourt.schema.review import ReviewDecision

_DECISIONS = TypeAdapter(list[ReviewDecision])


def escalation_payload(state: SampleState) -> list[dict[str, Any]]:
    checks, verdicts = state.get("checks", {}), state.get("verdicts", {})
    payload = []
    for rec in state.get("reconciled", {}).values():
        if not rec.provisional:
            continue
        check = checks[rec.check_id]
        jury = [v for key, v in verdicts.items() if key.startswith(f"{check.id}|")]
        payload.append({
            "check": check.model_dump(mode="json"), "reason": rec.escalation_reason,
            "provisional_label": rec.label, "verdicts": [v.model_dump(mode="json") for v in jury],
        })
    return payload


async def human_review(state: SampleState, runtime: Runtime[EvalContext]) -> SampleState:
    ctx, run_id = runtime.context, state["run_id"]
    decisions = _DECISIONS.validate_python(interrupt(escalation_payload(state)))
    reviews = {
        d.check_id: Review(run_id=run_id, check_id=d.check_id, reviewer=d.reviewer, action=d.action, label=d.label,
                           score=d.score, accepted_judge=d.accepted_judge, comment=d.comment)
        for d in decisions if d.check_id in state.get("checks", {})
    }
    for review in reviews.values():
        await ctx.store.aput(review)
    verdicts = state.get("verdicts", {})
    updated = {}
    for check_id, review in reviews.items():
        check = state["checks"][check_id]
        jury = [verdicts[k] for k in (verdict_key(check_id, j.judge_id) for j in ctx.judges) if k in verdicts]
        updated[check_id] = reconcile_check(run_id, check, jury, ctx.config, review)
    if updated:
        await ctx.store.aput(*updated.values())
    return {"reviews": reviews, "reconciled": updated}
