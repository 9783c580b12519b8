"""The combined check mode: every alignment check of one sample and condition in one judge call.

The evidence (chunks, the retrieved context, the answer) is rendered once; elements, sub-queries and
claims are listed once each; one structured reply (`CombinedJudgements`) answers all kinds. Verdicts are
still per atomic check: `read_labels` maps every check back to its item's field, and a check whose item
or field is missing from the reply gets no label (the judge makes it `unscored`, missing_item).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field

from ragcourt.prompts.library import PromptId, load_prompt, question_block, untrusted
from ragcourt.schema import Check, CheckKind, Label

COMBINABLE = frozenset({
    CheckKind.ELEMENT_IN_CONTEXT, CheckKind.ELEMENT_IN_ANSWER, CheckKind.SUBQUERY_IN_CHUNK,
    CheckKind.SUBQUERY_ANSWERED, CheckKind.CLAIM_SUPPORTED, CheckKind.CLAIM_SERVES_SUBQUERY,
    CheckKind.CLAIM_IN_REFERENCE, CheckKind.ELEMENT_IN_CHUNK,
})
"""The kinds one combined call can decide (the alignment checks; not dimension scores or pairwise)."""

YesNo = Literal["yes", "no"]
ELEMENT_KINDS = frozenset({CheckKind.ELEMENT_IN_CONTEXT, CheckKind.ELEMENT_IN_ANSWER, CheckKind.ELEMENT_IN_CHUNK})
SUBQUERY_KINDS = frozenset({CheckKind.SUBQUERY_IN_CHUNK, CheckKind.SUBQUERY_ANSWERED})
MAX_REPLY_ITEMS = 30
"""Items (elements, sub-queries, claims) one combined reply may list in batching `joint`: a reply entry is about
60 tokens of reasoning and decisions, so 30 stay well inside the 4k-token output limit common to chat models;
longer batches are cut into as few calls as fit (`split_for_reply`)."""


# Each field's check is said in the prompt's tasks, and what an entry holds ("item_id" as shown, "reasoning", null
# if not asked, an empty id list) once in its reply rules: a description is sent per field, in every call, so
# here it only shows an id's form (the ids a list takes).
class ElementCheck(BaseModel):
    item_id: str = Field(description="e.g. E1")
    reasoning: str
    in_context: YesNo | None = None
    in_answer: YesNo | None = None


class SubqueryCheck(BaseModel):
    item_id: str = Field(description="e.g. Q1")
    reasoning: str
    chunk_ids: list[str] | None = Field(default=None, description="chunk ids, e.g. ctx_0")
    answered: YesNo | None = None


class ClaimCheck(BaseModel):
    item_id: str = Field(description="e.g. C1")
    reasoning: str
    supporting_chunk_ids: list[str] | None = Field(default=None, description="chunk ids, e.g. ctx_0")
    served_subquery_ids: list[str] | None = Field(default=None, description="sub-query ids, e.g. Q1")


# The reference-side fields (method reference) live in their own reply model and prompt, so a batch without
# those kinds sends the same request as one of a run without method reference.
class ElementChunksCheck(ElementCheck):
    chunk_ids: list[str] | None = Field(default=None, description="chunk ids, e.g. ctx_0")


class ClaimReferenceCheck(ClaimCheck):
    in_reference: YesNo | None = None


# The yes / no fields of a combined reply, by the check kind they decide (the others are lists of linked ids).
COMBINED_DECISION_KEYS: dict[CheckKind, str] = {
    CheckKind.ELEMENT_IN_CONTEXT: "in_context",
    CheckKind.ELEMENT_IN_ANSWER: "in_answer",
    CheckKind.SUBQUERY_ANSWERED: "answered",
    CheckKind.CLAIM_IN_REFERENCE: "in_reference",
}

# The linked fields (lists of target ids), by the check kind they decide: P(yes) is read at a list's start when
# the batch offers one target (decision_tokens.nonempty_list_probabilities).
COMBINED_LINK_KEYS: dict[CheckKind, str] = {
    CheckKind.SUBQUERY_IN_CHUNK: "chunk_ids",
    CheckKind.CLAIM_SUPPORTED: "supporting_chunk_ids",
    CheckKind.CLAIM_SERVES_SUBQUERY: "served_subquery_ids",
    CheckKind.ELEMENT_IN_CHUNK: "chunk_ids",
}


class CombinedJudgements(BaseModel):
    """Every alignment check of one sample and condition: one entry per listed element, sub-query, claim."""

    elements: list[ElementCheck] = Field(default_factory=list)
    subqueries: list[SubqueryCheck] = Field(default_factory=list)
    claims: list[ClaimCheck] = Field(default_factory=list)


class CombinedReferenceJudgements(BaseModel):
    """CombinedJudgements with the reference-side checks too: elements x chunks, claims against the reference."""

    elements: list[ElementChunksCheck] = Field(default_factory=list)
    subqueries: list[SubqueryCheck] = Field(default_factory=list)
    claims: list[ClaimReferenceCheck] = Field(default_factory=list)


REFERENCE_KINDS = frozenset({CheckKind.CLAIM_IN_REFERENCE, CheckKind.ELEMENT_IN_CHUNK})
CombinedReply = CombinedJudgements | CombinedReferenceJudgements


# --------------------------------------------------------------------------- rendering


@dataclass(frozen=True)
class CombinedBatch:
    """The rendered prompt and the shown ids of one combined call (shown id -> our id)."""

    prompt: str
    elements: dict[str, str]
    subqueries: dict[str, str]
    claims: dict[str, str]
    chunks: dict[str, str]
    schema: type[CombinedJudgements] | type[CombinedReferenceJudgements] = CombinedJudgements


def _unique(pairs: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    return list(dict(pairs).items())


def _shown(prefix: str, pairs: Sequence[tuple[str, str]], start: int = 1) -> dict[str, tuple[str, str]]:
    return {f"{prefix}{i}": pair for i, pair in enumerate(pairs, start=start)}


def _block(shown: dict[str, tuple[str, str]], label: str) -> str:
    # One line apart, not a blank one: each block ends at its end marker, and the next id starts a line.
    return "\n".join(f"[{sid}] {untrusted(text, label)}" for sid, (_, text) in shown.items())


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


def render_combined(checks: Sequence[Check], *, answered_from_links: bool = False) -> CombinedBatch:
    """One prompt for all (combinable) checks of one sample and condition, the evidence shown once.

    `answered_from_links` (batching joint): a batch with claim-serves-sub-query checks and no sufficiency check
    also asks each sub-query's "answered" on the claims the same reply lists as serving it, R(q) of seed 002
    3.4.2 as this judge finds it, so the sufficiency round needs no call of its own (`ANSWERED_FROM_LINKS`)."""
    by_kind: dict[CheckKind, list[Check]] = {}
    for check in checks:
        if check.kind not in COMBINABLE:
            raise ValueError(f"{check.kind} checks cannot be combined")
        by_kind.setdefault(check.kind, []).append(check)

    def subjects(*kinds: CheckKind) -> list[tuple[str, str]]:
        return _unique([(c.subject_id, c.subject_text) for k in kinds for c in by_kind.get(k, ())])

    def targets(*kinds: CheckKind) -> list[tuple[str, str]]:
        return _unique([(c.target_id, c.target_text) for k in kinds for c in by_kind.get(k, ())])

    elements = _shown("E", subjects(CheckKind.ELEMENT_IN_CONTEXT, CheckKind.ELEMENT_IN_ANSWER,
                                    CheckKind.ELEMENT_IN_CHUNK))
    subqueries = _shown("Q", _unique([*subjects(CheckKind.SUBQUERY_IN_CHUNK, CheckKind.SUBQUERY_ANSWERED),
                                      *targets(CheckKind.CLAIM_SERVES_SUBQUERY)]))
    claims = _shown("C", subjects(CheckKind.CLAIM_SUPPORTED, CheckKind.CLAIM_SERVES_SUBQUERY,
                                  CheckKind.CLAIM_IN_REFERENCE))
    chunk_pairs = targets(CheckKind.SUBQUERY_IN_CHUNK, CheckKind.CLAIM_SUPPORTED, CheckKind.ELEMENT_IN_CHUNK)
    references = targets(CheckKind.CLAIM_IN_REFERENCE)
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
    for _, reference in references:  # one: a sample has one reference (as its frozen elements, one a line)
        if reference.splitlines() == [text for _, text in elements.values()]:  # sent once, as the elements
            evidence.append("Reference answer: its elements, listed below, taken together.")
        else:
            evidence.append("Reference answer (its elements):\n" + untrusted(reference, "REFERENCE"))
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
    with_reference = bool(REFERENCE_KINDS & set(by_kind))
    prompt_id = PromptId.JUDGE_COMBINED_REFERENCE if with_reference else PromptId.JUDGE_COMBINED
    prompt = load_prompt(prompt_id).render(
        # One sample's checks: those of the kinds that show the history all carry the same one (element
        # checks carry none).
        question=question_block(checks[0].question, next((c.history for c in checks if c.history), ())),
        evidence="\n\n".join(evidence) or "(none)",
        items="\n\n".join(items),
        tasks="\n".join([f"- {TASKS[kind]}" for kind in sorted(by_kind, key=list(TASKS).index)]
                        + ([f"- {ANSWERED_FROM_LINKS}"] if asks_answered_from_links(by_kind, answered_from_links) else [])),
    )

    def ids(shown: dict[str, tuple[str, str]]) -> dict[str, str]:
        return {sid: our_id for sid, (our_id, _) in shown.items()}

    return CombinedBatch(prompt, ids(elements), ids(subqueries), ids(claims), ids(chunks),
                         CombinedReferenceJudgements if with_reference else CombinedJudgements)


def _item_of(check: Check) -> tuple[str, str]:
    """The listed item a check is answered under: its subject, as an element, a sub-query or a claim."""
    group = "E" if check.kind in ELEMENT_KINDS else "Q" if check.kind in SUBQUERY_KINDS else "C"
    return group, check.subject_id


def split_for_reply(checks: Sequence[Check], limit: int = MAX_REPLY_ITEMS) -> list[list[Check]]:
    """The checks of one combined batch in as few calls as keep each reply within `limit` items: the items in
    the order they are listed (elements, sub-queries, claims), cut into ceil(n / limit) consecutive parts of
    near-equal size, each check with its item. Deterministic, so a re-run asks the same calls (and hits the
    cache). A part still lists the sub-queries its claims are linked to (as targets)."""
    order = {"E": 0, "Q": 1, "C": 2}
    items = sorted(dict.fromkeys(_item_of(c) for c in checks), key=lambda item: order[item[0]])
    if len(items) <= limit:
        return [list(checks)]
    parts = -(-len(items) // limit)
    size, extra = divmod(len(items), parts)
    part_of, start = {}, 0
    for index in range(parts):
        end = start + size + (1 if index < extra else 0)
        part_of.update(dict.fromkeys(items[start:end], index))
        start = end
    out: list[list[Check]] = [[] for _ in range(parts)]
    for check in checks:
        out[part_of[_item_of(check)]].append(check)
    return out


ANSWERED_FROM_LINKS = ('subqueries "answered": do the claims you list as serving each sub-query (in their '
                       '"served_subquery_ids") together answer it fully? "no" when no claim serves it')


def asks_answered_from_links(kinds: Collection[CheckKind], wanted: bool) -> bool:
    """Whether a combined batch asks ANSWERED_FROM_LINKS: wanted, serve checks in it and no sufficiency check."""
    return wanted and CheckKind.CLAIM_SERVES_SUBQUERY in kinds and CheckKind.SUBQUERY_ANSWERED not in kinds


TASKS: dict[CheckKind, str] = {
    CheckKind.ELEMENT_IN_CONTEXT: 'elements "in_context": is each element in the retrieved context?',
    CheckKind.ELEMENT_IN_ANSWER: 'elements "in_answer": is each element in the answer?',
    CheckKind.SUBQUERY_IN_CHUNK: 'subqueries "chunk_ids": which chunks answer each sub-query?',
    CheckKind.SUBQUERY_ANSWERED: 'subqueries "answered": do the claims related to each sub-query (shown with its id '
                                 'above) answer it fully?',
    CheckKind.CLAIM_SUPPORTED: 'claims "supporting_chunk_ids": which chunks support each claim?',
    CheckKind.CLAIM_SERVES_SUBQUERY: 'claims "served_subquery_ids": which sub-queries does each claim serve?',
    CheckKind.CLAIM_IN_REFERENCE: 'claims "in_reference": does the reference answer support each claim?',
    CheckKind.ELEMENT_IN_CHUNK: 'elements "chunk_ids": which chunks state each element?',
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


def read_labels(batch: CombinedBatch, reply: CombinedReply, checks: Sequence[Check]) -> dict[str, tuple[Label, str] | None]:
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
        if check.kind in ELEMENT_KINDS:
            entry = elements.get(check.subject_id)
            if isinstance(entry, ElementCheck):
                if check.kind is CheckKind.ELEMENT_IN_CHUNK:
                    label = (_linked(entry.chunk_ids, batch.chunks, check.target_id)
                             if isinstance(entry, ElementChunksCheck) else None)
                else:
                    label = _yes_no(entry.in_context if check.kind is CheckKind.ELEMENT_IN_CONTEXT else entry.in_answer)
        elif check.kind in SUBQUERY_KINDS:
            entry = subqueries.get(check.subject_id)
            if isinstance(entry, SubqueryCheck):
                label = (_linked(entry.chunk_ids, batch.chunks, check.target_id)
                         if check.kind is CheckKind.SUBQUERY_IN_CHUNK else _yes_no(entry.answered))
        else:
            entry = claims.get(check.subject_id)
            if isinstance(entry, ClaimCheck):
                if check.kind is CheckKind.CLAIM_SUPPORTED:
                    label = _linked(entry.supporting_chunk_ids, batch.chunks, check.target_id)
                elif check.kind is CheckKind.CLAIM_IN_REFERENCE:
                    label = _yes_no(entry.in_reference) if isinstance(entry, ClaimReferenceCheck) else None
                else:
                    label = _linked(entry.served_subquery_ids, batch.subqueries, check.target_id)
        out[check.id] = None if label is None or entry is None else (label, entry.reasoning)
    return out
