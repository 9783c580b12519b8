"""Splitting texts into the units the jury judges: sub-queries, elements and claims.

`LLMDecomposer` follows seeds 002 (query types, self-contained claims) and 003 (one fact or condition
per element). `SentenceDecomposer` is the no-LLM baseline: it splits on sentence boundaries and never
rewrites, so its claims may not be self-contained (pronouns stay unresolved).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

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


class JointSplit(BaseModel):
    """The splits of one sample asked in one call (batching joint, prompt split_joint): a split not asked, or
    left out by the model, is null."""

    # No descriptions: what each field holds, its order and "null if not asked" are the prompt's tasks and rules,
    # said there once (a description is sent per field, in every call).
    query_type: QueryType | None = None
    sub_queries: list[str] | None = None
    elements: list[str] | None = None
    claims: list[str] | None = None


@dataclass(frozen=True)
class SplitRequest:
    """One split a sample needs: its kind and text (the question, the reference or the answer)."""

    kind: DecompositionKind
    text: str


JOINT_SPLIT_MAX_CHARS = 12_000
"""The most input text (question, reference and answer together) one joint split call takes: a split's reply is
about as long as its text, so this keeps a reply near 3k tokens; longer samples get as few calls as fit."""

_JOINT_FIELDS = {DecompositionKind.SUBQUERIES: "sub_queries", DecompositionKind.ELEMENTS: "elements",
                 DecompositionKind.CLAIMS: "claims"}
_JOINT_ORDER = (DecompositionKind.SUBQUERIES, DecompositionKind.ELEMENTS, DecompositionKind.CLAIMS)
_JOINT_TASKS = {
    DecompositionKind.SUBQUERIES: '"query_type" and "sub_queries": the question into sub-queries',
    DecompositionKind.ELEMENTS: '"elements": the reference answer into elements',
    DecompositionKind.CLAIMS: '"claims": the answer into atomic claims',
}


@runtime_checkable
class JointDecomposer(Protocol):
    """A decomposer that can also make several splits of one sample in one call (batching joint)."""

    @property
    def model_id(self) -> str: ...

    def prompt_hash(self, kind: DecompositionKind) -> str: ...

    def joint_prompt_hash(self) -> str: ...

    async def split_joint(self, requests: Sequence[SplitRequest], question: str,
                          history: tuple[Turn, ...] = ()) -> dict[DecompositionKind, Split | None]:
        """One call for all `requests`: a Split per kind, None for a split the reply left out."""
        ...


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

    def joint_prompt_hash(self) -> str:
        return load_prompt(PromptId.SPLIT_JOINT).hash

    async def split_joint(self, requests: Sequence[SplitRequest], question: str,
                          history: tuple[Turn, ...] = ()) -> dict[DecompositionKind, Split | None]:
        kinds = {r.kind: r.text for r in requests}
        inputs = []
        if DecompositionKind.ELEMENTS in kinds:
            inputs.append("Reference answer:\n" + untrusted(kinds[DecompositionKind.ELEMENTS], "REFERENCE"))
        if DecompositionKind.CLAIMS in kinds:
            inputs.append("Answer:\n" + untrusted(kinds[DecompositionKind.CLAIMS], "ANSWER"))
        rendered = load_prompt(PromptId.SPLIT_JOINT).render(
            question=question_block(question, history), inputs="\n\n".join(inputs) or "(only the question)",
            tasks="\n".join(f"- {_JOINT_TASKS[kind]}" for kind in _JOINT_ORDER if kind in kinds))
        result = await self.client.structured_call(
            [SystemMessage("You decompose texts into units for evaluation. Reply as JSON."), HumanMessage(rendered)],
            JointSplit,
        )
        value = result.value
        if value is None:
            failed = Split(items=(), status=VerdictStatus.UNSCORED, unscored_reason=result.reason)
            return dict.fromkeys(kinds, failed)
        out: dict[DecompositionKind, Split | None] = {}
        for kind in kinds:
            listed: list[str] | None = getattr(value, _JOINT_FIELDS[kind])
            if listed is None:
                out[kind] = None
            elif kind is DecompositionKind.SUBQUERIES:
                items = tuple(s.strip() for s in listed if s.strip()) or (question,)
                out[kind] = Split(items=items, query_type=value.query_type or QueryType.SINGLE_FOCUS)
            else:
                out[kind] = Split(items=tuple(s.strip() for s in listed if s.strip()))
        return out


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
    stored = await store.aread(store.get_decomposition, record_id)
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
    return await store.aread(store.get_decomposition, record_id) or record


def joint_groups(requests: Sequence[SplitRequest], max_chars: int = JOINT_SPLIT_MAX_CHARS) -> list[list[SplitRequest]]:
    """The requests in as few calls as keep each call's texts within `max_chars`: in the prompt's order
    (sub-queries, elements, claims), a new call when the next text would not fit. Deterministic."""
    ordered = sorted(requests, key=lambda r: _JOINT_ORDER.index(r.kind))
    groups: list[list[SplitRequest]] = []
    size = 0
    for request in ordered:
        if not groups or size + len(request.text) > max_chars:
            groups.append([])
            size = 0
        groups[-1].append(request)
        size += len(request.text)
    return groups


def _joint_record_id(model_id: str, kind: DecompositionKind, text: str, prompt_hash: str, question: str,
                     history: tuple[Turn, ...]) -> str:
    # As frozen_split keys a split: claims by the question too; the history where the prompt shows it.
    return Decomposition.make_id(kind, text, prompt_hash, model_id,
                                 question=question if kind is DecompositionKind.CLAIMS else None,
                                 history=history if kind is not DecompositionKind.ELEMENTS else ())


async def joint_splits(
    store: RecordStore, decomposer: Decomposer, requests: Sequence[SplitRequest], question: str, *,
    run_id: str, sample_id: str, pinned: Sequence[Decomposition] = (), in_flight: SplitsInFlight | None = None,
    history: tuple[Turn, ...] = (),
) -> dict[DecompositionKind, Decomposition]:
    """The splits one sample of one run is evaluated with, those not frozen yet made in one call (batching joint).

    Each kind as `split_for_sample` has it: a split pinned to the run is kept; else the frozen one (the per-kind
    prompt's first, so element lists frozen before, possibly edited by a person, stay; then the joint prompt's);
    else made. The ones to make go in one call of the joint prompt (`joint_groups`: more when the texts are
    long); a split the reply leaves out is asked again once, in one call for those, and is unscored (not stored)
    if still missing. Concurrent samples needing the same split share one call (`in_flight`, keyed by record id).
    A decomposer without a joint call (the sentence rules) makes each split on its own, as before.
    """
    out: dict[DecompositionKind, Decomposition] = {}
    outdated: set[DecompositionKind] = set()
    wanted: list[SplitRequest] = []
    for request in requests:
        kept = next((p for p in pinned if p.kind is request.kind), None)
        if kept is not None and kept.source_text == request.text:
            out[request.kind] = kept
            continue
        if kept is not None:
            outdated.add(request.kind)  # the sample's text changed since (a resumed run over an edited dataset)
        wanted.append(request)
    if not isinstance(decomposer, JointDecomposer):
        made = await asyncio.gather(*(frozen_split(store, decomposer, r.kind, r.text, question, in_flight,
                                                   history=history if r.kind is not DecompositionKind.ELEMENTS else ())
                                      for r in wanted))
        fresh = dict(zip((r.kind for r in wanted), made, strict=True))
    else:
        fresh = await _joint_fresh(store, decomposer, wanted, question, history, in_flight)
    for kind, split in fresh.items():
        if split.status is VerdictStatus.OK:
            await store.apin_split(run_id, sample_id, split, replace=kind in outdated)
    return {**out, **fresh}


async def _joint_fresh(
    store: RecordStore, decomposer: JointDecomposer, wanted: Sequence[SplitRequest], question: str,
    history: tuple[Turn, ...], in_flight: SplitsInFlight | None,
) -> dict[DecompositionKind, Decomposition]:
    joint_hash = decomposer.joint_prompt_hash()
    ids = {r.kind: _joint_record_id(decomposer.model_id, r.kind, r.text, joint_hash, question, history)
           for r in wanted}
    flights = in_flight if in_flight is not None else {}
    # Registered before any await, so a concurrent sample finds the split in flight instead of asking again.
    mine = [r for r in wanted if ids[r.kind] not in flights]
    if mine:
        shared = asyncio.ensure_future(_stored_or_joint(store, decomposer, mine, question, history, ids))
        for request in mine:
            record_id = ids[request.kind]
            task = asyncio.ensure_future(_pick(shared, request.kind))
            flights[record_id] = task
            task.add_done_callback(_forget(flights, record_id))
    tasks = [flights[ids[r.kind]] for r in wanted]
    done = await asyncio.gather(*(asyncio.shield(t) for t in tasks))
    return dict(zip((r.kind for r in wanted), done, strict=True))


def _forget(flights: SplitsInFlight, record_id: str) -> Callable[[asyncio.Task[Decomposition]], None]:
    def forget(_: asyncio.Task[Decomposition]) -> None:
        flights.pop(record_id, None)
    return forget


async def _pick(shared: asyncio.Future[dict[DecompositionKind, Decomposition]],
                kind: DecompositionKind) -> Decomposition:
    return (await shared)[kind]


async def _stored_or_joint(
    store: RecordStore, decomposer: JointDecomposer, requests: Sequence[SplitRequest], question: str,
    history: tuple[Turn, ...], ids: dict[DecompositionKind, str],
) -> dict[DecompositionKind, Decomposition]:
    out: dict[DecompositionKind, Decomposition] = {}
    ask: list[SplitRequest] = []
    for request in requests:
        single = _joint_record_id(decomposer.model_id, request.kind, request.text, decomposer.prompt_hash(request.kind),
                                  question, history)
        stored = (await store.aread(store.get_decomposition, single)
                  or await store.aread(store.get_decomposition, ids[request.kind]))
        if stored is not None:
            out[request.kind] = stored
        else:
            ask.append(request)
    made: dict[DecompositionKind, Split | None] = {}
    for group in joint_groups(ask):
        made |= await decomposer.split_joint(group, question, history)
    left_out = [r for r in ask if made.get(r.kind) is None]
    if left_out:  # one follow-up call for the splits the reply left out, bounded: asked once more, not again
        made |= await decomposer.split_joint(left_out, question, history)
    joint_hash = decomposer.joint_prompt_hash()
    for request in ask:
        split = made.get(request.kind) or Split(items=(), status=VerdictStatus.UNSCORED,
                                                unscored_reason=UnscoredReason.MISSING_ITEM)
        record = Decomposition(
            id=ids[request.kind], kind=request.kind, source_text=request.text, items=split.items,
            query_type=split.query_type, prompt_hash=joint_hash, model_id=decomposer.model_id, status=split.status,
            unscored_reason=split.unscored_reason,
        )
        if record.status is VerdictStatus.OK:
            await store.aput(record)
            # Another process may have stored its split of the same text first; the stored one is the frozen one.
            kept = await store.aread(store.get_decomposition, ids[request.kind])
            record = kept or record
        out[request.kind] = record
    return out
