"""The combined check mode: every alignment check of one sample and condition in one judge call.

The evidence (chunks, the retrieved context, the answer) is rendered once; elements, sub-queries and
claims are listed once each; one structured reply (`CombinedJudgements`) answers all kinds. Verdicts are
still per atomic check: `read_labels` maps every check back to its item's field, and a check whose item
or field is missing from the reply gets no label (the judge makes it `unscored`, missing_item).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field

from ragcourt.prompts.library import PromptId, load_prompt, question_block, untrusted
from ragcourt.schema import Check, CheckKind, Label

COMBINABLE = frozenset({
    CheckKind.ELEMENT_IN_CONTEXT, CheckKind.ELEMENT_IN_ANSWER, CheckKind.SUBQUERY_IN_CHUNK,
    CheckKind.SUBQUERY_ANSWERED, CheckKind.CLAIM_SUPPORTED, CheckKind.CLAIM_SERVES_SUBQUERY,
})
"""The kinds one combined call can decide (the alignment checks; not dimension scores or pairwise)."""

YesNo = Literal["yes", "no"]


class ElementCheck(BaseModel):
    item_id: str = Field(description="the element's id exactly as shown (e.g. E1)")
    reasoning: str = Field(description="one or two sentences of evidence, written before the decisions")
    in_context: YesNo | None = Field(default=None, description="is the element in the retrieved context; null if not asked")
    in_answer: YesNo | None = Field(default=None, description="is the element in the answer; null if not asked")


class SubqueryCheck(BaseModel):
    item_id: str = Field(description="the sub-query's id exactly as shown (e.g. Q1)")
    reasoning: str = Field(description="one or two sentences of evidence, written before the decisions")
    chunk_ids: list[str] | None = Field(
        default=None, description="ids of the chunks (e.g. ctx_0) that answer it; null if not asked"
    )
    answered: YesNo | None = Field(default=None, description="do the claims answer it fully; null if not asked")


class ClaimCheck(BaseModel):
    item_id: str = Field(description="the claim's id exactly as shown (e.g. C1)")
    reasoning: str = Field(description="one or two sentences of evidence, written before the decisions")
    supporting_chunk_ids: list[str] | None = Field(
        default=None, description="ids of the chunks (e.g. ctx_0) that support it; null if not asked"
    )
    served_subquery_ids: list[str] | None = Field(
        default=None, description="ids of the sub-queries (e.g. Q1) it serves; null if not asked"
    )


# The yes / no fields of a combined reply, by the check kind they decide (the others are lists of linked ids).
COMBINED_DECISION_KEYS: dict[CheckKind, str] = {
    CheckKind.ELEMENT_IN_CONTEXT: "in_context",
    CheckKind.ELEMENT_IN_ANSWER: "in_answer",
    CheckKind.SUBQUERY_ANSWERED: "answered",
}


class CombinedJudgements(BaseModel):
    """Every alignment check of one sample and condition: one entry per listed element, sub-query, claim."""

    elements: list[ElementCheck] = Field(default_factory=list)
    subqueries: list[SubqueryCheck] = Field(default_factory=list)
    claims: list[ClaimCheck] = Field(default_factory=list)


# --------------------------------------------------------------------------- rendering


@dataclass(frozen=True)
class CombinedBatch:
    """The rendered prompt and the shown ids of one combined call (shown id -> our id)."""

    prompt: str
    elements: dict[str, str]
    subqueries: dict[str, str]
    claims: dict[str, str]
    chunks: dict[str, str]


def _unique(pairs: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    return list(dict(pairs).items())


def _shown(prefix: str, pairs: Sequence[tuple[str, str]], start: int = 1) -> dict[str, tuple[str, str]]:
    return {f"{prefix}{i}": pair for i, pair in enumerate(pairs, start=start)}


def _block(shown: dict[str, tuple[str, str]], label: str) -> str:
    return "\n\n".join(f"[{sid}] {untrusted(text, label)}" for sid, (_, text) in shown.items())


def context_segments(context: str, chunk_texts: Sequence[str]) -> list[str] | None:
    """The context cut into one segment per chunk (title line included), or None when the context is not
    exactly those chunks in that order: then it must be shown on its own, or the judge would see less."""
    segments, position = [], 0
    for text in chunk_texts:
        found = context.find(text, position)
        if found < 0 or not text:
            return None
        segments.append(context[position : found + len(text)].strip())
        position = found + len(text)
    return segments if chunk_texts and not context[position:].strip() else None


def render_combined(checks: Sequence[Check]) -> CombinedBatch:
    """One prompt for all (combinable) checks of one sample and condition, the evidence shown once."""
    by_kind: dict[CheckKind, list[Check]] = {}
    for check in checks:
        if check.kind not in COMBINABLE:
            raise ValueError(f"{check.kind} checks cannot be combined")
        by_kind.setdefault(check.kind, []).append(check)

    def subjects(*kinds: CheckKind) -> list[tuple[str, str]]:
        return _unique([(c.subject_id, c.subject_text) for k in kinds for c in by_kind.get(k, ())])

    def targets(*kinds: CheckKind) -> list[tuple[str, str]]:
        return _unique([(c.target_id, c.target_text) for k in kinds for c in by_kind.get(k, ())])

    elements = _shown("E", subjects(CheckKind.ELEMENT_IN_CONTEXT, CheckKind.ELEMENT_IN_ANSWER))
    subqueries = _shown("Q", _unique([*subjects(CheckKind.SUBQUERY_IN_CHUNK, CheckKind.SUBQUERY_ANSWERED),
                                      *targets(CheckKind.CLAIM_SERVES_SUBQUERY)]))
    claims = _shown("C", subjects(CheckKind.CLAIM_SUPPORTED, CheckKind.CLAIM_SERVES_SUBQUERY))
    chunk_pairs = targets(CheckKind.SUBQUERY_IN_CHUNK, CheckKind.CLAIM_SUPPORTED)
    contexts = targets(CheckKind.ELEMENT_IN_CONTEXT)
    answers = targets(CheckKind.ELEMENT_IN_ANSWER)
    claim_sets = _unique([(c.subject_id, c.target_text) for c in by_kind.get(CheckKind.SUBQUERY_ANSWERED, ())])

    evidence: list[str] = []
    segments = context_segments(contexts[0][1], [t for _, t in chunk_pairs]) if len(contexts) == 1 else None
    if segments is not None:  # the context is the chunks: send it once, as the chunks (with their titles)
        chunk_pairs = [(cid, segment) for (cid, _), segment in zip(chunk_pairs, segments, strict=True)]
    chunks = _shown("ctx_", chunk_pairs, start=0)
    if chunks:
        evidence.append("Retrieved chunks:\n" + _block(chunks, "CHUNK"))
    if segments is not None:
        evidence.append("Retrieved context: the retrieved chunks above, taken together.")
    elif contexts:
        evidence.append("Retrieved context:\n" + "\n\n".join(untrusted(t, "CONTEXT") for _, t in contexts))
    if answers:
        evidence.append("Answer:\n" + "\n\n".join(untrusted(t, "ANSWER") for _, t in answers))
    if claim_sets:  # seed 002 3.4.2: each sub-query is judged on its own related claims R(q), shown with it
        shown_as = {our_id: sid for sid, (our_id, _) in subqueries.items()}
        evidence.append("Answer claims related to each sub-query (judge whether it is answered with these only):\n"
                        + "\n\n".join(f"[{shown_as[sq]}] {untrusted(text, 'CLAIMS')}" for sq, text in claim_sets))

    items = []
    if elements:
        items.append("Elements of the reference answer:\n" + _block(elements, "ELEMENT"))
    if subqueries:
        items.append("Sub-queries of the question:\n" + _block(subqueries, "SUBQUERY"))
    if claims:
        items.append("Claims of the answer:\n" + _block(claims, "CLAIM"))
    prompt = load_prompt(PromptId.JUDGE_COMBINED).render(
        # One sample's checks: those of the kinds that show the history all carry the same one (element
        # checks carry none).
        question=question_block(checks[0].question, next((c.history for c in checks if c.history), ())),
        evidence="\n\n".join(evidence) or "(none)",
        items="\n\n".join(items),
        tasks="\n".join(f"- {TASKS[kind]}" for kind in sorted(by_kind, key=list(TASKS).index)),
    )

    def ids(shown: dict[str, tuple[str, str]]) -> dict[str, str]:
        return {sid: our_id for sid, (our_id, _) in shown.items()}

    return CombinedBatch(prompt, ids(elements), ids(subqueries), ids(claims), ids(chunks))


TASKS: dict[CheckKind, str] = {
    CheckKind.ELEMENT_IN_CONTEXT: 'elements "in_context": is each element in the retrieved context?',
    CheckKind.ELEMENT_IN_ANSWER: 'elements "in_answer": is each element in the answer?',
    CheckKind.SUBQUERY_IN_CHUNK: 'subqueries "chunk_ids": which chunks answer each sub-query?',
    CheckKind.SUBQUERY_ANSWERED: 'subqueries "answered": do the claims related to each sub-query (shown with its id '
                                 'above) answer it fully?',
    CheckKind.CLAIM_SUPPORTED: 'claims "supporting_chunk_ids": which chunks support each claim?',
    CheckKind.CLAIM_SERVES_SUBQUERY: 'claims "served_subquery_ids": which sub-queries does each claim serve?',
}


# --------------------------------------------------------------------------- reading the reply


def shown_id(replied: str) -> str:
    """An id as the model replied it, without the brackets it was shown in ("[E1]" -> "E1")."""
    return replied.strip().strip("[]").strip()


def _linked(replied: list[str] | None, shown: dict[str, str], target_id: str) -> Label | None:
    if replied is None:
        return None
    return Label.YES if target_id in {shown.get(shown_id(i)) for i in replied} else Label.NO


def _yes_no(value: YesNo | None) -> Label | None:
    return None if value is None else Label(value)


def read_labels(batch: CombinedBatch, reply: CombinedJudgements, checks: Sequence[Check]) -> dict[str, tuple[Label, str] | None]:
    """check id -> (label, reasoning), or None when the reply has no entry or no field for that check."""
    def entries(listed: Sequence[ElementCheck | SubqueryCheck | ClaimCheck], shown: dict[str, str]) -> dict:
        return {shown[shown_id(e.item_id)]: e for e in listed if shown_id(e.item_id) in shown}

    elements = entries(reply.elements, batch.elements)
    subqueries = entries(reply.subqueries, batch.subqueries)
    claims = entries(reply.claims, batch.claims)
    out: dict[str, tuple[Label, str] | None] = {}
    for check in checks:
        label: Label | None = None
        entry: ElementCheck | SubqueryCheck | ClaimCheck | None
        if check.kind in (CheckKind.ELEMENT_IN_CONTEXT, CheckKind.ELEMENT_IN_ANSWER):
            entry = elements.get(check.subject_id)
            if isinstance(entry, ElementCheck):
                chosen = entry.in_context if check.kind is CheckKind.ELEMENT_IN_CONTEXT else entry.in_answer
                label = _yes_no(chosen)
        elif check.kind in (CheckKind.SUBQUERY_IN_CHUNK, CheckKind.SUBQUERY_ANSWERED):
            entry = subqueries.get(check.subject_id)
            if isinstance(entry, SubqueryCheck):
                label = (_linked(entry.chunk_ids, batch.chunks, check.target_id)
                         if check.kind is CheckKind.SUBQUERY_IN_CHUNK else _yes_no(entry.answered))
        else:
            entry = claims.get(check.subject_id)
            if isinstance(entry, ClaimCheck):
                label = (_linked(entry.supporting_chunk_ids, batch.chunks, check.target_id)
                         if check.kind is CheckKind.CLAIM_SUPPORTED
                         else _linked(entry.served_subquery_ids, batch.subqueries, check.target_id))
        out[check.id] = None if label is None or entry is None else (label, entry.reasoning)
    return out
