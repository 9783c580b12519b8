"""Node: the multi-judge. One task per judge x check kind x condition, fanned out with `Send`.

Verdicts already in the store are reused (a resumed run asks no judge twice); unscored verdicts from
transient faults (timeout, error) are asked again, deterministic ones (parse failure, refusal) are not. A pass
that mends a split an earlier pass of the run failed to get asks each batch with new checks whole
(`splits_mended`), so the sample ends with the verdicts a run without the fault gives.
"""

from __future__ import annotations

from collections import defaultdict

from langgraph.runtime import Runtime
from langgraph.types import Send

from ragcourt.judging import SampleJudge
from ragcourt.judging.combined_checks import COMBINABLE, MAX_REPLY_ITEMS
from ragcourt.nodes.names import JUDGE, RECONCILE
from ragcourt.nodes.state import EvalContext, JudgeTask, SampleState, verdict_key
from ragcourt.schema import NORMAL, Check, CheckKind, DecompositionKind, Verdict, reusable
from ragcourt.schema.config import Batching


def splits_mended(state: SampleState) -> bool:
    """Whether this pass uses a split this run had not given the sample before, when it had given others: a
    split that failed (all its tries used) in an earlier pass is mended now. The earlier pass judged the
    sample's batches without that split's checks, and a judge's answer on one item may depend on the rest of
    its batch (a combined call lists every item), so those verdicts are not what a fault-free run decides."""
    pinned = {split.kind for split in state.get("pinned_splits", ())}
    if not pinned:  # the sample's first pass in this run
        return False
    used = {kind for kind, present in ((DecompositionKind.SUBQUERIES, "subqueries" in state),
                                       (DecompositionKind.ELEMENTS, "elements" in state),
                                       # the empty answer's no claims come from no split
                                       (DecompositionKind.CLAIMS, bool(state.get("claims", {}).get(NORMAL.key))))
            if present}
    return bool(used - pinned)


async def fan_out(state: SampleState, runtime: Runtime[EvalContext]) -> list[Send] | str:
    """Conditional edge after planning: one Send per judge and batch of pending checks."""
    verdicts = state.get("verdicts", {})
    batches: dict[tuple[CheckKind, str], list[Check]] = defaultdict(list)
    for check in state.get("checks", {}).values():
        batches[(check.kind, check.condition.key)].append(check)
    per_sample = runtime.context.config.batching.combines
    whole_batch = splits_mended(state)
    sends = []
    for index, judge in enumerate(runtime.context.judges):
        # per_sample: a judge that can (an LLM judge) gets one batch of every alignment kind per condition.
        # Such a batch holds several kinds; its task's `kind` is its first check's, and `judge` below
        # dispatches on the kinds it holds.
        grouped: dict[tuple[CheckKind | None, str], list[Check]] = defaultdict(list)
        for (kind, condition), checks in batches.items():
            combine = per_sample and kind in COMBINABLE and isinstance(judge, SampleJudge)
            grouped[(None if combine else kind, condition)].extend(checks)
        for checks in grouped.values():
            pending = [c for c in checks if verdict_key(c.id, judge.judge_id) not in verdicts]
            if pending:
                sends.append(Send(JUDGE, JudgeTask(judge_index=index, kind=pending[0].kind, checks=pending,
                                                   whole_batch=whole_batch)))
    return sends or RECONCILE


async def judge(state: JudgeTask, runtime: Runtime[EvalContext]) -> SampleState:
    """One jury member on one batch (`state` is the batch a `Send` of fan_out carries, not the graph state)."""
    task = state
    ctx = runtime.context
    jury_member = ctx.judges[task["judge_index"]]
    checks = task["checks"]
    stored = await ctx.store.aget_verdicts([c.id for c in checks], judge_id=jury_member.judge_id)
    known = {v.check_id: v for v in stored if reusable(v)}
    missing = [c for c in checks if c.id not in known]
    if missing and task["whole_batch"]:  # the stored ones were judged without the mended split's checks
        known, missing = {}, checks
    fresh: list[Verdict] = []
    if missing:
        try:
            if isinstance(jury_member, SampleJudge) and len({c.kind for c in missing}) > 1:
                # joint: long replies cut to fit, and what a reply leaves out asked again once
                # and the sufficiency of each sub-query on the reply's own serve links (stored for the next round)
                joint = ctx.config.batching is Batching.JOINT
                fresh = await (jury_member.judge_sample(missing, follow_up=True, reply_limit=MAX_REPLY_ITEMS,
                                                        sufficiency_from_links=True)
                               if joint else jury_member.judge_sample(missing))
            else:
                # missing[0]'s kind, not the task's: a resumed combined batch may have only another kind left
                fresh = await jury_member.judge(missing[0].kind, missing)
        except Exception as error:  # a judge must never take the run down: record why it gave nothing
            fresh = [Verdict.failed(c.id, jury_member.judge_id, error) for c in missing]
        await ctx.store.aput(*fresh)
    # A joint reply's verdicts on the sufficiency checks planned next round join the state now: fan_out then
    # finds them and goes straight to reconcile, one superstep less (until then no check reads them).
    return {"verdicts": {verdict_key(v.check_id, v.judge_id): v for v in [*known.values(), *fresh]}}
