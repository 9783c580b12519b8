"""Node: the per-sample metrics and diagnostics, written to the store (the runner streams them to callers).

Figures come from the reconciled decisions (a person's review wins); every metric carries how many of
its checks were unscored and how many were escalated.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

from langgraph.runtime import Runtime

from ragcourt.judging import SampleJudge
from ragcourt.judging.llm_judge import claims_target_text
from ragcourt.metrics import cuer, qcare, reference
from ragcourt.metrics.elements import ANSWER_SIDE, CONTEXT_SIDE, JuryValue, element_coverage, element_outcome
from ragcourt.metrics.values import Decision, MetricKey, MetricName, NaCause, any_true, not_available
from ragcourt.nodes.claims import judged_trace_conditions
from ragcourt.nodes.state import EvalContext, SampleState
from ragcourt.schema import (
    LOOSE,
    NORMAL,
    Check,
    CheckKind,
    Claim,
    ConfidenceSource,
    DecompositionKind,
    ElementOutcome,
    FigureFlag,
    InputFlag,
    Label,
    MetricValue,
    Reconciled,
    SampleDiagnostics,
    SampleStatus,
    SubQuery,
    TokenUsage,
    TraceSource,
    VerdictStatus,
    WholeTarget,
)
from ragcourt.schema.config import Batching, Method

QCARE_KINDS = {
    "c_prec": (CheckKind.SUBQUERY_IN_CHUNK,),
    "c_ndcg": (CheckKind.SUBQUERY_IN_CHUNK,),
    "completeness": (CheckKind.CLAIM_SERVES_SUBQUERY, CheckKind.SUBQUERY_ANSWERED),
    "conciseness": (CheckKind.CLAIM_SERVES_SUBQUERY, CheckKind.SUBQUERY_ANSWERED),
    "verifiableness": (CheckKind.CLAIM_SUPPORTED,),
}
# The check kind each element coverage is the mean of, whose escalations it counts (the loose re-run's
# element_in_context checks included: one kind, and together the two sides count every element check once).
ELEMENT_SIDE_KINDS = {CONTEXT_SIDE: (CheckKind.ELEMENT_IN_CONTEXT,), ANSWER_SIDE: (CheckKind.ELEMENT_IN_ANSWER,)}
NO_REFERENCE = NaCause.NO_REFERENCE.reason("elements are split from one (seed 003)")
SPLIT_FAILED = "the {what} could not be split into {units} (the decomposer gave no scored split)"


class Decisions:
    """Reconciled labels looked up by (kind, subject, target, condition); the target is the target id, except
    for subquery_answered: its text, the claims R(q) it was judged on (every such check's id is `claims`)."""

    def __init__(self, checks: Iterable[Check], reconciled: dict[str, Reconciled]) -> None:
        self._by_key: dict[tuple[CheckKind, str, str, str], Reconciled] = {}
        for check in checks:
            if check.id in reconciled:
                # By subject text: identical texts (two equal claims) share one content-addressed check.
                target = check.target_text if check.kind is CheckKind.SUBQUERY_ANSWERED else check.target_id
                key = (check.kind, check.subject_text, target, check.condition.key)
                self._by_key[key] = reconciled[check.id]

    def get(self, kind: CheckKind, subject: str, target: str, condition: str = NORMAL.key) -> Decision:
        """The decision; None when undecided, and when the judges split (it waits for a person)."""
        rec = self._by_key.get((kind, subject, target, condition))
        if rec is None or rec.label is None:
            return None
        return rec.label is Label.YES

    def value(self, kind: CheckKind, subject: str, target: str, condition: str = NORMAL.key) -> JuryValue:
        """The decision as seed 003's average of the judges: 1 / 0, 0.5 when they split, None undecided."""
        rec = self._by_key.get((kind, subject, target, condition))
        return None if rec is None else rec.yes_value

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
    # Sufficiency is judged on R(q), the claims the jury found to serve q (seed 002, 3.4.2): the check on exactly
    # that set decides. A q no claim serves has no such check (None): it is not covered whatever sufficiency
    # would say (`covered_subqueries`), so without claims every sub-query is a decided "not covered".
    answered = [_sufficiency(decisions, sq, claims, [row[j] for row in serves]) for j, sq in enumerate(subqueries)]
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


def _sufficiency(decisions: Decisions, subquery: SubQuery, claims: Sequence[Claim],
                 serving: Sequence[Decision]) -> Decision:
    """Whether R(q) answers q: the sufficiency check on the claims decided to serve q, None when none is. A serve
    check left undecided (unscored, or the judges split) may put its claim in R(q): then only a "sufficient"
    decides (more claims cannot answer q less), and "not sufficient" is undecided, never a decided "not covered"."""
    if not any(d is True for d in serving):
        return None
    known = claims_target_text(claim.text for claim, d in zip(claims, serving, strict=True) if d is True)
    decided = decisions.get(CheckKind.SUBQUERY_ANSWERED, subquery.text, known)
    return None if decided is False and None in serving else decided


REFERENCE_KINDS = (CheckKind.CLAIM_IN_REFERENCE, CheckKind.ELEMENT_IN_ANSWER, CheckKind.ELEMENT_IN_CHUNK)
REFERENCE_METRICS = (MetricName.CLAIM_PRECISION, MetricName.ELEMENT_RECALL, MetricName.FACTUAL_F1,
                     MetricName.CONTEXT_PRECISION_REF)
# The check kinds each reference figure is decided by, whose escalations it counts.
REFERENCE_METRIC_KINDS = {MetricName.CLAIM_PRECISION.value: (CheckKind.CLAIM_IN_REFERENCE,),
                          MetricName.ELEMENT_RECALL.value: (CheckKind.ELEMENT_IN_ANSWER,),
                          MetricName.FACTUAL_F1.value: (CheckKind.CLAIM_IN_REFERENCE, CheckKind.ELEMENT_IN_ANSWER),
                          MetricName.CONTEXT_PRECISION_REF.value: (CheckKind.ELEMENT_IN_CHUNK,)}


def _reference(state: SampleState, decisions: Decisions) -> list[MetricValue]:
    """Method reference: claim precision, element recall, factual F1, context precision with reference."""
    if not state["sample"].reference_answer:
        return [not_available(name.value, NO_REFERENCE) for name in REFERENCE_METRICS]
    if "elements" not in state:
        why = SPLIT_FAILED.format(what="reference answer", units="elements")
        return [not_available(name.value, why) for name in REFERENCE_METRICS]
    elements = state["elements"]
    claims = state.get("claims", {}).get(NORMAL.key)
    precision = (reference.claim_precision([decisions.value(CheckKind.CLAIM_IN_REFERENCE, c.text, WholeTarget.REFERENCE)
                                            for c in claims])
                 if claims is not None else not_available(MetricName.CLAIM_PRECISION.value, _why_no_claims(state)))
    answer = state.get("answers", {}).get(NORMAL.key)
    recall = (reference.element_recall([decisions.value(CheckKind.ELEMENT_IN_ANSWER, e.text, WholeTarget.ANSWER)
                                        for e in elements])
              if answer is not None and answer.status is VerdictStatus.OK
              else not_available(MetricName.ELEMENT_RECALL.value, _why_no_claims(state)))
    normal = state.get("retrievals", {}).get(NORMAL.key)
    if normal is None:
        why = state.get("retrieval_hidden") or state.get("unavailable", {}).get(NORMAL.key, "no normal retrieval")
        context = not_available(MetricName.CONTEXT_PRECISION_REF.value, NaCause.UNKNOWN_CHUNKS.reason(why))
    else:  # the chunks in the retrieval's rank order, each relevant when it states some element
        context = reference.context_precision_with_reference([
            any_true(decisions.get(CheckKind.ELEMENT_IN_CHUNK, e.text, chunk.id) for e in elements)
            for chunk in normal.chunks])
    values = [precision, recall, reference.factual_f1(precision, recall), context]
    return [m.model_copy(update={"n_escalated": decisions.escalated(REFERENCE_METRIC_KINDS[m.name])}) for m in values]


def _why_no_answer(state: SampleState) -> str | None:
    """Why the normal condition has no answer to judge (none given, or it failed); None when it has one."""
    answer = state.get("answers", {}).get(NORMAL.key)
    if answer is None:
        return NaCause.NO_ANSWER.reason(state.get("unavailable", {}).get(NORMAL.key, "the system gave none"))
    if answer.status is not VerdictStatus.OK:
        return NaCause.ANSWER_FAILED.reason(str(answer.error or answer.unscored_reason))
    return None


def _why_no_claims(state: SampleState) -> str:
    return _why_no_answer(state) or "the answer's claims could not be split (the decomposer gave no scored split)"


NO_TRACE = ("the system reports no trace and no claim-chunk support was judged for this answer (the judged trace "
            "needs the cuer or qcare method)")
UNDECIDED_TRACE = "the judged trace is undecided: {n} claim-chunk checks have no decision (unscored, or judges split)"


class Trace(NamedTuple):
    """The CUE-R used-chunk set U of one answer (None: unknown), whose it is, and the claim-chunk checks behind
    a judged one that have no decision (unscored, or judges split) or that were escalated."""

    used: frozenset[str] | None
    source: TraceSource
    unscored: int = 0
    escalated: int = 0


def cuer_traces(state: SampleState) -> dict[str, Trace]:
    """U per answered condition: the system's report, else the chunks the jury found to support the answer's
    claims (metrics.cuer.judged_trace). check_planner judges a claim-chunk pair once per sample, under the first
    condition showing it, so the decisions are looked up by claim text and chunk id whatever their condition."""
    reconciled, retrievals = state.get("reconciled", {}), state.get("retrievals", {})
    support = {(c.subject_text, c.target_id): reconciled[c.id] for c in state.get("checks", {}).values()
               if c.kind is CheckKind.CLAIM_SUPPORTED and c.id in reconciled}
    traces = {}
    for key, answer in state.get("answers", {}).items():
        retrieval, claims = retrievals.get(key), state.get("claims", {}).get(key)
        if answer.trace_source is TraceSource.REPORTED:
            traces[key] = Trace(frozenset(answer.used_chunk_ids), TraceSource.REPORTED)
        elif retrieval is not None and not retrieval.chunks:  # shown nothing, it used nothing
            traces[key] = Trace(frozenset(), TraceSource.JUDGED)
        elif retrieval is None or claims is None:
            traces[key] = Trace(None, TraceSource.NONE)
        else:
            pairs = {chunk.id: [support.get((claim.text, chunk.id)) for claim in claims] for chunk in retrieval.chunks}
            found = [rec for recs in pairs.values() for rec in recs]
            used = cuer.judged_trace({chunk_id: [None if rec is None or rec.label is None else rec.label is Label.YES
                                                 for rec in recs] for chunk_id, recs in pairs.items()})
            traces[key] = Trace(used, TraceSource.JUDGED, sum(rec is None or rec.label is None for rec in found),
                                sum(rec is not None and rec.escalated for rec in found))
    return traces


def _titles(state: SampleState, key: str) -> dict[str, str | None]:
    retrieval = state.get("retrievals", {}).get(key)
    return {c.id: c.title for c in retrieval.chunks} if retrieval else {}


def _answer_metrics(state: SampleState, traces: dict[str, Trace]) -> list[MetricValue]:
    sample = state["sample"]
    answer = state.get("answers", {}).get(NORMAL.key)
    if not sample.gold_answers or answer is None:
        return []
    text = answer.text if answer.status is VerdictStatus.OK else None
    metrics = list(cuer.score_answer(text, sample.gold_answers, answer.confidence))
    if answer.confidence_source is ConfidenceSource.PROBED and answer.confidence is None:
        metrics = [not_available(m.name, "the confidence probe gave no usable answer")
                   if m.name == MetricName.CONFIDENCE_ERROR and m.value is None and text is not None else m
                   for m in metrics]
    normal = state.get("retrievals", {}).get(NORMAL.key)
    if sample.gold_titles and normal is not None and text is not None:
        trace = traces[NORMAL.key]
        if trace.used is None:
            reason = UNDECIDED_TRACE.format(n=trace.unscored) if trace.source is TraceSource.JUDGED else NO_TRACE
            metrics.append(not_available(MetricName.GROUNDING.value, reason, n_unscored=trace.unscored))
        else:
            titles = _titles(state, NORMAL.key)
            value = cuer.grounding_score([titles.get(i) for i in sorted(trace.used)], sample.gold_titles)
            metrics.append(MetricValue(name=MetricName.GROUNDING.value, value=value, n=1,
                                       n_escalated=trace.escalated))
    return metrics


def _perturbations(state: SampleState, traces: dict[str, Trace]) -> tuple:
    sample, answers = state["sample"], state.get("answers", {})
    original = answers.get(NORMAL.key)
    others = [a for key, a in answers.items() if key != NORMAL.key and a.condition.kind.is_perturbation]
    if original is None or not others:
        return ()

    def outcome(answer):  # noqa: ANN001, ANN202 - local adapter
        text = answer.text if answer.status is VerdictStatus.OK else None
        trace = traces[answer.condition.key]
        return cuer.Outcome.score(
            answer.condition, text, sample.gold_answers, answer.confidence,
            trace.used if text is not None else None, chunk_titles=_titles(state, answer.condition.key),
            gold_titles=sample.gold_titles, trace_source=trace.source, confidence_source=answer.confidence_source,
            trace_unscored=trace.unscored, trace_escalated=trace.escalated,
        )

    titles = _titles(state, NORMAL.key)
    return cuer.utility_table(outcome(original), [outcome(a) for a in others], titles, sample.gold_titles).rows


ELEMENT_SIDES = (ANSWER_SIDE, CONTEXT_SIDE)  # answer side first: it is the figure seed 003's noise is measured on


def _element_metrics(state: SampleState, elements: Sequence[ElementOutcome], decisions: Decisions) -> list[MetricValue]:
    """Both element coverages, each counting the escalations of its own side's checks; n/a with the typed reason
    when the sample has no reference, its split failed, the retrieval is unknown (context side) or there is no
    answer (answer side). An element list split to nothing reports neither."""
    sample = state["sample"]
    if not sample.reference_answer:  # said, not silently left out
        return [not_available(side.metric.value, NO_REFERENCE) for side in ELEMENT_SIDES]
    if "elements" not in state:
        split_failed = SPLIT_FAILED.format(what="reference answer", units="elements")
        return [not_available(side.metric.value, split_failed) for side in ELEMENT_SIDES]
    if not elements:
        return []
    hidden = state.get("retrieval_hidden")
    unknown_chunks = (NaCause.UNKNOWN_CHUNKS.reason(hidden)
                      if hidden and NORMAL.key not in state.get("retrievals", {}) else None)
    why_na = {ANSWER_SIDE: _why_no_answer(state), CONTEXT_SIDE: unknown_chunks}
    return [
        not_available(side.metric.value, why) if (why := why_na[side]) is not None
        else element_coverage(elements, side).model_copy(
            update={"n_escalated": decisions.escalated(ELEMENT_SIDE_KINDS[side])})
        for side in ELEMENT_SIDES
    ]


def failed_splits(state: SampleState, methods: Sequence[Method]) -> tuple[DecompositionKind, ...]:
    """The splits the sample needed that the decomposer gave no scored result for: a failed split sets nothing
    in the state (decompose_inputs, decompose_answers). Claims are needed of an answer only, so a sample whose
    system gave none has no failed claim split."""
    sample, wanted = state["sample"], set(methods)
    failed = []
    if Method.QCARE in wanted and "subqueries" not in state:
        failed.append(DecompositionKind.SUBQUERIES)
    if {Method.ELEMENTS, Method.REFERENCE} & wanted and sample.reference_answer and "elements" not in state:
        failed.append(DecompositionKind.ELEMENTS)
    claims_wanted = bool({Method.QCARE, Method.REFERENCE} & wanted) or (
        Method.CUER in wanted and NORMAL.key in judged_trace_conditions(state))
    if claims_wanted and _why_no_answer(state) is None and NORMAL.key not in state.get("claims", {}):
        failed.append(DecompositionKind.CLAIMS)
    return tuple(failed)


# The check kinds each figure is decided by (by base name): a figure with none (answer F1, the counts) is no
# judge's, so no judge call that lacked a split can have changed it.
FIGURE_KINDS: dict[str, tuple[CheckKind, ...]] = {
    **QCARE_KINDS, **{side.metric.value: ELEMENT_SIDE_KINDS[side] for side in ELEMENT_SIDES},
    **REFERENCE_METRIC_KINDS, MetricName.GROUNDING.value: (CheckKind.CLAIM_SUPPORTED,),
}
# What each failed split leaves its figures n/a for: the figures over its units, said n/a with SPLIT_FAILED.
SPLIT_FIGURES = {
    DecompositionKind.SUBQUERIES: frozenset(QCARE_KINDS),
    DecompositionKind.ELEMENTS: frozenset({*(side.metric.value for side in ELEMENT_SIDES), *REFERENCE_METRIC_KINDS}),
    DecompositionKind.CLAIMS: frozenset({MetricName.COMPLETENESS.value, MetricName.CONCISENESS.value,
                                         MetricName.VERIFIABLENESS.value, MetricName.CLAIM_PRECISION.value,
                                         MetricName.FACTUAL_F1.value, MetricName.GROUNDING.value}),
}


def flag_figures(metrics: Sequence[MetricValue], failed: Sequence[DecompositionKind], combined_calls: bool,
                 unjudged: frozenset[str] = frozenset()) -> tuple[MetricValue, ...]:
    """Each figure a failed split touched, flagged: n/a over the split's units (SPLIT_FAILED), or a value whose
    checks a combined judge call decided without the split's units listed (JUDGED_WITHOUT_SPLIT; only with
    `combined_calls`, one call per sample for an LLM judge: per-kind calls of the other kinds are the calls a
    run without the fault makes). `unjudged`: figures this sample computed without checks (a reported trace's
    grounding)."""
    if not failed:
        return tuple(metrics)
    out = []
    for m in metrics:
        base = MetricKey.of(m.name).base
        if m.value is None:
            splits = tuple(kind for kind in failed if base in SPLIT_FIGURES[kind])
            flag = InputFlag(cause=FigureFlag.SPLIT_FAILED, splits=splits) if splits else None
        else:
            judged = combined_calls and bool(FIGURE_KINDS.get(base)) and base not in unjudged
            flag = InputFlag(cause=FigureFlag.JUDGED_WITHOUT_SPLIT, splits=tuple(failed)) if judged else None
        out.append(m if flag is None else m.model_copy(update={"flag": flag}))
    return tuple(out)


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
            decisions.value(CheckKind.ELEMENT_IN_CONTEXT, e.text, NORMAL.context_target),
            decisions.value(CheckKind.ELEMENT_IN_CONTEXT, e.text, LOOSE.context_target, LOOSE.key),
            decisions.value(CheckKind.ELEMENT_IN_ANSWER, e.text, WholeTarget.ANSWER),
        )
        for e in (state.get("elements", ()) if Method.ELEMENTS in ctx.config.methods else ())
    )
    element_metrics = (_element_metrics(state, elements, decisions)
                       if Method.ELEMENTS in ctx.config.methods else [])
    if ctx.config.drop_pointer_elements and "dropped_elements" in state:
        dropped = len(state["dropped_elements"])
        element_metrics.append(MetricValue(name=MetricName.POINTER_ELEMENTS_DROPPED.value, value=float(dropped),
                                           n=dropped + len(elements)))
    usage = sum((v.usage for v in verdicts), TokenUsage()) + sum(
        (a.usage for a in state.get("answers", {}).values()), TokenUsage()
    )
    reference_metrics = _reference(state, decisions) if Method.REFERENCE in ctx.config.methods else []
    if ctx.config.batching is Batching.JOINT:  # said per sample, so the summary shows what asking again cost
        reference_metrics.append(MetricValue(name=MetricName.FOLLOW_UP_CALLS.value, value=float(usage.follow_up_calls),
                                             n=usage.follow_up_checks))
    unavailable = state.get("unavailable", {})
    normal_answer = state.get("answers", {}).get(NORMAL.key)
    error = unavailable.get(NORMAL.key) or (
        normal_answer.error if normal_answer is not None and normal_answer.status is not VerdictStatus.OK else None
    )
    traces = cuer_traces(state)
    failed = failed_splits(state, ctx.config.methods)
    combined_calls = ctx.config.batching.combines and any(isinstance(j, SampleJudge) for j in ctx.judges)
    metrics = [*qcare_metrics, *element_metrics, *_answer_metrics(state, traces), *reference_metrics]
    reported_trace = frozenset({MetricName.GROUNDING.value} if NORMAL.key in traces
                               and traces[NORMAL.key].source is TraceSource.REPORTED else ())
    diagnostics = SampleDiagnostics(
        run_id=state["run_id"], sample_id=sample.id, question=sample.question,
        status=SampleStatus.FAILED if error else SampleStatus.OK, error=error,
        metrics=flag_figures(metrics, failed, combined_calls, reported_trace), failed_splits=failed,
        elements=elements, unsupported_claims=tuple(unsupported), uncovered_subqueries=tuple(uncovered),
        perturbations=_perturbations(state, traces),
        trace_source=traces[NORMAL.key].source if NORMAL.key in traces else None,
        confidence_source=normal_answer.confidence_source if normal_answer is not None else None,
        escalations=tuple(sorted(r.check_id for r in reconciled.values() if r.provisional)),  # stable across runs
        n_checks=len(checks), n_unscored=sum(1 for v in verdicts if not v.scored), usage=usage,
        alignment_graph=graph,
    )
    await ctx.store.aput(diagnostics)
    return {"diagnostics": diagnostics}
