"""Node: turn the state into the atomic checks the jury must decide (content addressed, so stable)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypedDict, Unpack

from langgraph.runtime import Runtime

from ragcourt.judging.llm_judge import HISTORY_KINDS, claims_target_text
from ragcourt.nodes.claims import judged_trace_conditions
from ragcourt.nodes.state import EvalContext, SampleState
from ragcourt.prompts.library import PromptId, load_prompt
from ragcourt.schema import (
    LOOSE,
    NORMAL,
    Check,
    CheckKind,
    Chunk,
    Claim,
    Condition,
    ConditionKind,
    Label,
    Sample,
    SubQuery,
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


class _CheckMaker:
    """Builds one sample's checks: what every check of the sample shares is given once."""

    def __init__(self, sample: Sample) -> None:
        self.sample = sample

    def __call__(self, kind: CheckKind, condition: Condition, subject: tuple[str, str], target: tuple[str, str],
                 **extra: Unpack[_CheckExtra]) -> Check:
        # The history joins a check only where its prompt shows it, so a sample without history, and every
        # other kind, keeps its check ids (and its stored verdicts).
        sample = self.sample
        history = sample.history if kind in HISTORY_KINDS else ()
        return Check(kind=kind, sample_id=sample.id, condition=condition, subject_id=subject[0],
                     subject_text=subject[1], target_id=target[0], target_text=target[1],
                     question=sample.question, history=history, **extra)


def _sufficiency_checks(check: _CheckMaker, sq: SubQuery,
                        relevant: dict[str, tuple[tuple[Claim, ...], ...]]) -> Iterator[Check]:
    """Sub-query q's sufficiency checks, one per claim set R(q) (none when no claim serves q: not covered,
    nothing to ask)."""
    for related in relevant.get(sq.id, ()):
        joined = claims_target_text(c.text for c in related)
        yield check(CheckKind.SUBQUERY_ANSWERED, NORMAL, (sq.id, sq.text), (WholeTarget.CLAIMS, joined))


def _checks(state: SampleState, config: EvalConfig) -> Iterator[Check]:
    sample = state["sample"]
    retrievals, answers = state.get("retrievals", {}), state.get("answers", {})
    normal = retrievals.get(NORMAL.key)
    answer = answers.get(NORMAL.key)
    answered = answer is not None and answer.status is VerdictStatus.OK
    check = _CheckMaker(sample)

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
        relevant = sufficiency_sets(state) or {}
        for sq in subqueries:
            for chunk in chunks:
                yield check(CheckKind.SUBQUERY_IN_CHUNK, NORMAL, (sq.id, sq.text), (chunk.id, chunk.text))
            yield from _sufficiency_checks(check, sq, relevant)
        for claim in claims:
            for chunk in chunks:
                yield check(CheckKind.CLAIM_SUPPORTED, NORMAL, (claim.id, claim.text), (chunk.id, chunk.text))
            for sq in subqueries:
                yield check(CheckKind.CLAIM_SERVES_SUBQUERY, NORMAL, (claim.id, claim.text), (sq.id, sq.text))
    if Method.REFERENCE in config.methods and state.get("elements"):
        # The answer's claims against the reference as its frozen elements (one a line), and every element
        # against every chunk of the normal retrieval: the checks behind claim precision / factual F1 and
        # context precision with reference.
        elements = state.get("elements", ())
        reference = (WholeTarget.REFERENCE, claims_target_text(e.text for e in elements))
        for claim in state.get("claims", {}).get(NORMAL.key, ()):
            yield check(CheckKind.CLAIM_IN_REFERENCE, NORMAL, (claim.id, claim.text), reference)
        if Method.ELEMENTS not in config.methods and answered and answer is not None:  # recall's own checks
            for element in elements:
                yield check(CheckKind.ELEMENT_IN_ANSWER, NORMAL, (element.id, element.text),
                            (WholeTarget.ANSWER, answer.text))
        for element in elements:
            for chunk in normal.chunks if normal else ():
                yield check(CheckKind.ELEMENT_IN_CHUNK, NORMAL, (element.id, element.text), (chunk.id, chunk.text))
    if Method.CUER in config.methods:
        # CUE-R's judged trace: each claim of an answer without a reported trace against each chunk its condition
        # showed. A claim and a chunk make the same question under any condition, so a pair is judged once, under
        # the first condition showing it (normal first): a perturbed answer equal to the normal one costs no call.
        judged: set[tuple[str, str, str]] = set()
        for key in judged_trace_conditions(state):
            retrieval = retrievals[key]
            for claim in state.get("claims", {}).get(key, ()):
                for chunk in retrieval.chunks:
                    if (claim.text, chunk.id, chunk.text) not in judged:
                        judged.add((claim.text, chunk.id, chunk.text))
                        yield check(CheckKind.CLAIM_SUPPORTED, retrieval.condition, (claim.id, claim.text),
                                    (chunk.id, chunk.text))
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


def sufficiency_sets(state: SampleState) -> dict[str, tuple[tuple[Claim, ...], ...]] | None:
    """Per sub-query id, the claim sets its sufficiency is judged on: R(q) of seed 002 (3.4.2), the normal
    answer's claims the jury judged to serve q (a provisional label counts as it stands), and, when the judges
    split on whether some claims serve q, R(q) with those too: what a person's decision of the split makes R(q),
    so rescoring after the review needs no judge. Empty sets are left out (no claim serves q: nothing to ask).

    None until every serve check of the sample is reconciled: these checks are planned in the round after the
    serve checks' (`sufficiency_due`), or with the loose re-run's round.
    """
    claims = state.get("claims", {}).get(NORMAL.key, ())
    subqueries = state.get("subqueries", ())
    reconciled = state.get("reconciled", {})
    serves = {(c.subject_text, c.target_id): reconciled[c.id] for c in state.get("checks", {}).values()
              if c.kind is CheckKind.CLAIM_SERVES_SUBQUERY and c.condition == NORMAL and c.id in reconciled}
    if not claims or not subqueries or any((cl.text, sq.id) not in serves for cl in claims for sq in subqueries):
        return None
    sets = {}
    for sq in subqueries:
        served = tuple(cl for cl in claims if serves[(cl.text, sq.id)].label is Label.YES)
        with_split = tuple(cl for cl in claims if cl in served or serves[(cl.text, sq.id)].split)
        sets[sq.id] = tuple(dict.fromkeys(s for s in (served, with_split) if s))
    return sets


def unplanned_sufficiency_checks(state: SampleState, config: EvalConfig) -> list[Check]:
    """The sufficiency checks on R(q) not planned yet, once the serve checks are decided (none before)."""
    relevant = sufficiency_sets(state) if Method.QCARE in config.methods else None
    if relevant is None:
        return []
    known, check = state.get("checks", {}), _CheckMaker(state["sample"])
    # Only the sufficiency checks are built: this runs after every reconciliation, and in its route.
    return [c for sq in state.get("subqueries", ()) for c in _sufficiency_checks(check, sq, relevant)
            if c.id not in known]


def sufficiency_due(state: SampleState, config: EvalConfig) -> bool:
    """Whether the serve checks are decided and some sufficiency check on R(q) is not planned yet."""
    return bool(unplanned_sufficiency_checks(state, config))


async def record_checks(ctx: EvalContext, state: SampleState, checks: Sequence[Check]) -> None:
    """Store newly planned checks and link them to the run's sample."""
    await ctx.store.aput_checks(state["run_id"], state["sample"].id, checks)


async def plan_checks(state: SampleState, runtime: Runtime[EvalContext]) -> SampleState:
    ctx = runtime.context
    known = state.get("checks", {})
    new = [c for c in build_checks(state, ctx.config) if c.id not in known]
    await record_checks(ctx, state, new)
    return {"checks": {c.id: c for c in new}}
