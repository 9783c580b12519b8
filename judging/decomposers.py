"""Splitting texts into the units the jury judges: sub-queries, elements and claims.

`LLMDecomposer` follows seeds 002 (query types, self-contained claims) and 003 (one fact or condition
per element). `SentenceDecomposer` is the no-LLM baseline: it splits on sentence boundaries and never
rewrites, so its claims may not be self-contained (pronouns stay unresolved).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from ragcourt.llm.client import LLMClient
from ragcourt.metrics.text import sentences
from ragcourt.prompts.library import PromptId, load_prompt, question_block, untrusted
from ragcourt.schema import (
    Decomposition,
    DecompositionKind,
    QueryType,
    Turn,
    UnscoredReason,
    VerdictStatus,
    content_id,
)
from ragcourt.stores.records import RecordStore


class Split(BaseModel):
    """The result of one decomposition, before it is stored as a Decomposition record."""

    model_config = {"frozen": True}

    items: tuple[str, ...]
    query_type: QueryType | None = None
    status: VerdictStatus = VerdictStatus.OK
    unscored_reason: UnscoredReason | None = None


class Decomposer(Protocol):
    @property
    def model_id(self) -> str: ...

    def prompt_hash(self, kind: DecompositionKind) -> str: ...

    async def split(self, kind: DecompositionKind, text: str, question: str, history: tuple[Turn, ...] = ()) -> Split:
        """`history`: the conversation before `question` (seed 002, section 6), for sub-queries and claims."""
        ...


class QueryDecomposition(BaseModel):
    """How the question decomposes (seed 002, 3.1)."""

    query_type: QueryType = Field(
        description="single_focus: one information need; multi_aspect: several perspectives; "
        "multi_step: ordered steps where later ones depend on earlier answers"
    )
    sub_queries: list[str] = Field(
        description="the question itself for single_focus; otherwise one self-contained sub-query each"
    )


class ClaimList(BaseModel):
    """Atomic claims of an answer (seed 002, 3.2)."""

    claims: list[str] = Field(description="self-contained atomic claims, pronouns resolved, one fact each")


class ElementList(BaseModel):
    """Elements of a reference answer (seed 003)."""

    elements: list[str] = Field(description="one fact or condition each, self-contained, in answer order")


_PROMPTS = {
    DecompositionKind.SUBQUERIES: PromptId.DECOMPOSE_QUESTION,
    DecompositionKind.CLAIMS: PromptId.DECOMPOSE_ANSWER,
    DecompositionKind.ELEMENTS: PromptId.SPLIT_ELEMENTS,
}


@dataclass
class LLMDecomposer:
    client: LLMClient

    @property
    def model_id(self) -> str:
        return self.client.model_id

    def prompt_hash(self, kind: DecompositionKind) -> str:
        return load_prompt(_PROMPTS[kind]).hash

    async def split(self, kind: DecompositionKind, text: str, question: str, history: tuple[Turn, ...] = ()) -> Split:
        prompt = load_prompt(_PROMPTS[kind])
        # Sub-queries are resolved against the history ("when was it founded?" -> "when was Acme founded?"), and
        # claims too, so that each stays self-contained.
        quoted_question = question_block(question, history)
        schema: type[QueryDecomposition | ClaimList | ElementList]
        if kind is DecompositionKind.SUBQUERIES:
            rendered, schema = prompt.render(question=quoted_question), QueryDecomposition
        elif kind is DecompositionKind.CLAIMS:
            rendered, schema = prompt.render(question=quoted_question, answer=untrusted(text, "ANSWER")), ClaimList
        else:
            # Elements are frozen per reference text (seed 003) and reused for every question that has it, so
            # their prompt shows no question: a split cannot depend on what its key leaves out.
            rendered = prompt.render(reference=untrusted(text, "REFERENCE"))
            schema = ElementList
        result = await self.client.structured_call(
            [SystemMessage("You decompose texts into units for evaluation. Reply as JSON."), HumanMessage(rendered)],
            schema,
        )
        value = result.value
        if value is None:
            return Split(items=(), status=VerdictStatus.UNSCORED, unscored_reason=result.reason)
        if isinstance(value, QueryDecomposition):
            items = tuple(s.strip() for s in value.sub_queries if s.strip()) or (question,)
            return Split(items=items, query_type=value.query_type)
        listed = value.claims if isinstance(value, ClaimList) else value.elements
        return Split(items=tuple(s.strip() for s in listed if s.strip()))


# Split after a '?' (kept, so every part still reads as a question) or at a ';'.
_QUESTION_SPLIT = re.compile(r"(?<=\?)\s+|;\s+")


@dataclass
class SentenceDecomposer:
    """No-LLM baseline. Sub-queries: the question, or its parts when it asks several questions
    separated by '?' or ';' (multi_aspect). Elements and claims: sentences; a reference without
    sentence punctuation (a short answer such as a HotpotQA span) is one element."""

    model_id: str = "sentences"

    def prompt_hash(self, kind: DecompositionKind) -> str:
        return content_id("sentence-rules", kind, 2)  # bump when the rules change

    async def split(self, kind: DecompositionKind, text: str, question: str, history: tuple[Turn, ...] = ()) -> Split:
        # Rules cannot resolve "it" against earlier turns: the history is ignored (its split is keyed by it all
        # the same, like any decomposer's).
        if kind is DecompositionKind.SUBQUERIES:
            parts = [p.strip() for p in _QUESTION_SPLIT.split(text.strip()) if p.strip()]
            if len(parts) > 1:
                return Split(items=tuple(parts), query_type=QueryType.MULTI_ASPECT)
            return Split(items=(text.strip(),), query_type=QueryType.SINGLE_FOCUS)
        return Split(items=tuple(sentences(text)) or ((text.strip(),) if text.strip() else ()))


SplitsInFlight = dict[str, "asyncio.Task[Decomposition]"]


async def frozen_split(
    store: RecordStore, decomposer: Decomposer, kind: DecompositionKind, text: str, question: str,
    in_flight: SplitsInFlight | None = None, *, history: tuple[Turn, ...] = (),
) -> Decomposition:
    """The stored split of `text` if there is one (possibly edited by a person), else a new one.

    Content addressed by what its prompt shows (kind, text, the question for claims, the conversation history
    when there is one, prompt hash, model):
    every later run reuses it, so element lists stay frozen across runs. Failed splits are returned but not stored, so a later run can retry them.
    With `in_flight` (one per run), concurrent samples that need the same split (HotpotQA's reference "yes")
    share one call instead of racing to store different ones.
    """
    prompt_hash = decomposer.prompt_hash(kind)
    # Claims are keyed by the question too: their prompt shows it (an answer "Yes." makes other claims under
    # other questions). Elements and sub-queries are the split of one text alone.
    record_id = Decomposition.make_id(kind, text, prompt_hash, decomposer.model_id,
                                      question=question if kind is DecompositionKind.CLAIMS else None,
                                      history=history)
    if in_flight is None:
        return await _stored_or_new(store, decomposer, kind, text, question, record_id, prompt_hash, history)
    task = in_flight.get(record_id)
    if task is None:
        task = asyncio.ensure_future(
            _stored_or_new(store, decomposer, kind, text, question, record_id, prompt_hash, history))
        in_flight[record_id] = task
        task.add_done_callback(lambda _: in_flight.pop(record_id, None))
    return await asyncio.shield(task)  # one sample cancelled does not cancel the split the others wait for


async def split_for_sample(
    store: RecordStore, decomposer: Decomposer, kind: DecompositionKind, text: str, question: str, *,
    run_id: str, sample_id: str, pinned: Sequence[Decomposition] = (), in_flight: SplitsInFlight | None = None,
    history: tuple[Turn, ...] = (),
) -> Decomposition:
    """The split one sample of one run is evaluated with.

    `pinned` holds the splits the sample already used in this run (the runner reads them from the store): a
    resumed run, or a replay after reviews, keeps them even when a person has since edited the frozen list, so
    a finished run's figures stay put (`ragcourt rerun --changed` is how an edit reaches a run). Otherwise the
    frozen split, pinned to the run as it is used.
    """
    outdated = False
    for split in pinned:
        if split.kind is kind:
            if split.source_text == text:
                return split
            outdated = True  # the sample's text changed since (a resumed run over an edited dataset)
    split = await frozen_split(store, decomposer, kind, text, question, in_flight, history=history)
    if split.status is VerdictStatus.OK:
        await store.apin_split(run_id, sample_id, split, replace=outdated)
    return split


async def _stored_or_new(
    store: RecordStore, decomposer: Decomposer, kind: DecompositionKind, text: str, question: str, record_id: str,
    prompt_hash: str, history: tuple[Turn, ...],
) -> Decomposition:
    stored = await asyncio.to_thread(store.get_decomposition, record_id)
    if stored is not None:
        return stored
    # Without history, called as before it existed: a decomposer written against the three-argument split
    # keeps working on single-turn samples.
    split = await (decomposer.split(kind, text, question, history) if history
                   else decomposer.split(kind, text, question))
    record = Decomposition(
        id=record_id, kind=kind, source_text=text, items=split.items, query_type=split.query_type,
        prompt_hash=prompt_hash, model_id=decomposer.model_id, status=split.status,
        unscored_reason=split.unscored_reason,
    )
    if record.status is not VerdictStatus.OK:
        return record
    await store.aput(record)
    # Another process may have stored its split of the same text first; the stored one is the frozen one.
    return await asyncio.to_thread(store.get_decomposition, record_id) or record
