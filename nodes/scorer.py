"""Node: the per-sample metrics and diagnostics, written to the store (the runner streams them to callers).

Figures come from the reconciled decisions (a person's review wins); every metric carries how many of
its checks were unscored and how many were escalated.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from langgraph.runtime import Runtime

from ragcourt.metrics import cuer, qcare
from ragcourt.metrics.elements import element_coverage, element_outcome
from ragcourt.metrics.values import Decision, MetricKey, MetricName, NaCause, not_available
from ragcourt.nodes.state import EvalContext, SampleState
from ragcourt.schema import (
    LOOSE,
    NORMAL,
    Check,
    CheckKind,
    Label,
    MetricValue,
    Reconciled,
    SampleDiagnostics,
    SampleStatus,
    TokenUsage,
    VerdictStatus,
    WholeTarget,
)
from ragcourt.schema.config import Method

QCARE_KINDS = {
    "c_prec": (CheckKind.SUBQUERY_IN_CHUNK,),
    "c_ndcg": (CheckKind.SUBQUERY_IN_CHUNK,),
    "completeness": (CheckKind.CLAIM_SERVES_SUBQUERY, CheckKind.SUBQUERY_ANSWERED),
    "conciseness": (CheckKind.CLAIM_SERVES_SUBQUERY, CheckKind.SUBQUERY_ANSWERED),
    "verifiableness": (CheckKind.CLAIM_SUPPORTED,),
}
ELEMENT_KINDS = (CheckKind.ELEMENT_IN_CONTEXT, CheckKind.ELEMENT_IN_ANSWER)
NO_REFERENCE = "the sample has no reference answer: elements are split from one (seed 003)"
SPLIT_FAILED = "the {what} could not be split into {units} (the decomposer gave no scored split)"


class Decisions:
    """Reconciled labels looked up by (kind, subject, target, condition)."""

    def __init__(self, checks: Iterable[Check], reconciled: dict[str, Reconciled]) -> None:
        self._by_key: dict[tuple[CheckKind, str, str, str], Reconciled] = {}
        for check in checks:
            if check.id in reconciled:
                # By subject text: identical texts (two equal claims) share one content-addressed check.
                key = (check.kind, check.subject_text, check.target_id, check.condition.key)
                self._by_key[key] = reconciled[check.id]

    def get(self, kind: CheckKind, subject: str, target: str, condition: str = NORMAL.key) -> Decision:
        rec = self._by_key.get((kind, subject, target, condition))
        if rec is None or rec.label is None:
            return None
        return rec.label is Label.YES

    def escalated(self, kinds: Sequence[CheckKind]) -> int:
        return sum(1 for (kind, *_), rec in self._by_key.items() if kind in kinds and rec.escalated)


def _qcare(state: SampleState, decisions: Decisions) -> tuple[list[MetricValue], dict | None, list[str], list[str]]:
    subqueries = state.get("subqueries", ())
    normal = state.get("retrievals", {}).get(NORMAL.key)
    chunks = normal.chunks if normal else ()
    claims = state.get("claims", {}).get(NORMAL.key, ())
    if not subqueries:
        return [], None, [], []
    kind = CheckKind
    covers = [[decisions.get(kind.SUBQUERY_IN_CHUNK, sq.text, c.id) for sq in subqueries] for c in chunks]
    serves = [[decisions.get(kind.CLAIM_SERVES_SUBQUERY, cl.text, sq.id) for sq in subqueries] for cl in claims]
    supports = [[decisions.get(kind.CLAIM_SUPPORTED, cl.text, c.id) for c in chunks] for cl in claims]
    # Without claims nothing answers a sub-query: that is a decided "no", not an unscored check.
    answered = [decisions.get(kind.SUBQUERY_ANSWERED, sq.text, WholeTarget.CLAIMS) if claims else False for sq in subqueries]
    # k is the retrieval's own (top_k), the same for every sample, so C-Prec@k is one metric across the run;
    # given contexts have none, and every sample's chunks count whole under the name without @k.
    values = qcare.qcare_metrics(covers, serves, answered, supports, k=normal.k if normal else None)
    if normal is None:  # the retrieval is unknown (not empty): what needs the chunks is n/a, never 0
        why = state.get("retrieval_hidden") or state.get("unavailable", {}).get(NORMAL.key, "no normal retrieval")
        values = tuple(
            m if m.name in (MetricName.COMPLETENESS, MetricName.CONCISENESS)
            else not_available(m.name, NaCause.UNKNOWN_CHUNKS.reason(why))
            for m in values
        )
    if NORMAL.key not in state.get("claims", {}):  # the claims are unknown (not none): never a completeness of 0
        why = _why_no_claims(state)
        values = tuple(
            not_available(m.name, why)
            if m.name in (MetricName.COMPLETENESS, MetricName.CONCISENESS, MetricName.VERIFIABLENESS) else m
            for m in values
        )
    metrics = [
        m.model_copy(update={"n_escalated": decisions.escalated(QCARE_KINDS.get(MetricKey.of(m.name).base, ()))})
        for m in values
    ]
    graph = qcare.alignment_graph_json(qcare.alignment_graph(subqueries, chunks, claims, covers, serves, supports))
    unsupported = [cl.text for cl, row in zip(claims, supports, strict=True) if row and all(d is False for d in row)]
    if claims and not chunks and normal is not None:
        unsupported = [cl.text for cl in claims]
    uncovered = [
        sq.text for j, sq in enumerate(subqueries) if all(row[j] is False for row in covers)
    ] if normal is not None else []
    return metrics, graph, unsupported, uncovered


def _why_no_claims(state: SampleState) -> str:
    answer = state.get("answers", {}).get(NORMAL.key)
    if answer is None:
        return f"there is no answer: {state.get('unavailable', {}).get(NORMAL.key, 'the system gave none')}"
    if answer.status is not VerdictStatus.OK:
        return f"the answer failed: {answer.error or answer.unscored_reason}"
    return "the answer's claims could not be split (the decomposer gave no scored split)"


def _answer_metrics(state: SampleState) -> list[MetricValue]:
    sample = state["sample"]
    answer = state.get("answers", {}).get(NORMAL.key)
    if not sample.gold_answers or answer is None:
        return []
    text = answer.text if answer.status is VerdictStatus.OK else None
    metrics = list(cuer.score_answer(text, sample.gold_answers, answer.confidence))
    normal = state.get("retrievals", {}).get(NORMAL.key)
    if sample.gold_titles and normal is not None and text is not None:
        titles = {c.id: c.title for c in normal.chunks}
        used = [titles.get(i) for i in answer.used_chunk_ids]
        metrics.append(MetricValue(name="grounding_score", value=cuer.grounding_score(used, sample.gold_titles), n=1))
    return metrics


def _perturbations(state: SampleState) -> tuple:
    sample, answers = state["sample"], state.get("answers", {})
    original = answers.get(NORMAL.key)
    others = [a for key, a in answers.items() if key != NORMAL.key and a.condition.kind.is_perturbation]
    if original is None or not others:
        return ()

    def outcome(answer):  # noqa: ANN001, ANN202 - local adapter
        text = answer.text if answer.status is VerdictStatus.OK else None
        return cuer.Outcome.score(answer.condition, text, sample.gold_answers, answer.confidence,
                                  answer.used_chunk_ids if text is not None else None)

    normal = state.get("retrievals", {}).get(NORMAL.key)
    titles = {c.id: c.title for c in normal.chunks} if normal else {}
    return cuer.utility_table(outcome(original), [outcome(a) for a in others], titles, sample.gold_titles).rows


async def score(state: SampleState, runtime: Runtime[EvalContext]) -> SampleState:
    ctx, sample = runtime.context, state["sample"]
    checks = list(state.get("checks", {}).values())
    reconciled = state.get("reconciled", {})
    decisions = Decisions(checks, reconciled)
    verdicts = list(state.get("verdicts", {}).values())
    qcare_metrics, graph, unsupported, uncovered = _qcare(state, decisions)
    if Method.QCARE in ctx.config.methods and "subqueries" not in state:  # the split failed: n/a, not absent
        normal = state.get("retrievals", {}).get(NORMAL.key)
        qcare_metrics = [not_available(m.name, SPLIT_FAILED.format(what="question", units="sub-queries"))
                         for m in qcare.qcare_metrics([], [], [], [], k=normal.k if normal else None)]
    elements = tuple(
        element_outcome(
            e,
            decisions.get(CheckKind.ELEMENT_IN_CONTEXT, e.text, NORMAL.context_target),
            decisions.get(CheckKind.ELEMENT_IN_CONTEXT, e.text, LOOSE.context_target, LOOSE.key),
            decisions.get(CheckKind.ELEMENT_IN_ANSWER, e.text, WholeTarget.ANSWER),
        )
        for e in state.get("elements", ())
    )
    element_metrics = (
        [element_coverage(elements).model_copy(update={"n_escalated": decisions.escalated(ELEMENT_KINDS)})]
        if elements else []
    )
    if Method.ELEMENTS in ctx.config.methods and not sample.reference_answer:  # said, not silently left out
        element_metrics = [not_available(MetricName.ELEMENT_COVERAGE.value, NO_REFERENCE)]
    elif Method.ELEMENTS in ctx.config.methods and "elements" not in state:
        element_metrics = [not_available(MetricName.ELEMENT_COVERAGE.value,
                                         SPLIT_FAILED.format(what="reference answer", units="elements"))]
    unknown_retrieval = state.get("retrieval_hidden")
    if elements and unknown_retrieval and NORMAL.key not in state.get("retrievals", {}):
        element_metrics = [not_available(MetricName.ELEMENT_COVERAGE.value,
                                         NaCause.UNKNOWN_CHUNKS.reason(unknown_retrieval))]
    if ctx.config.drop_pointer_elements and "dropped_elements" in state:
        dropped = len(state["dropped_elements"])
        element_metrics.append(MetricValue(name=MetricName.POINTER_ELEMENTS_DROPPED.value, value=float(dropped),
                                           n=dropped + len(elements)))
    usage = sum((v.usage for v in verdicts), TokenUsage()) + sum(
        (a.usage for a in state.get("answers", {}).values()), TokenUsage()
    )
    unavailable = state.get("unavailable", {})
    normal_answer = state.get("answers", {}).get(NORMAL.key)
    error = unavailable.get(NORMAL.key) or (
        normal_answer.error if normal_answer is not None and normal_answer.status is not VerdictStatus.OK else None
    )
    diagnostics = SampleDiagnostics(
        run_id=state["run_id"], sample_id=sample.id, question=sample.question,
        status=SampleStatus.FAILED if error else SampleStatus.OK, error=error,
        metrics=tuple([*qcare_metrics, *element_metrics, *_answer_metrics(state)]),
        elements=elements, unsupported_claims=tuple(unsupported), uncovered_subqueries=tuple(uncovered),
        perturbations=_perturbations(state),
        escalations=tuple(sorted(r.check_id for r in reconciled.values() if r.provisional)),  # stable across runs
        n_checks=len(checks), n_unscored=sum(1 for v in verdicts if not v.scored), usage=usage,
        alignment_graph=graph,
    )
    await ctx.store.aput(diagnostics)
    return {"diagnostics": diagnostics}
