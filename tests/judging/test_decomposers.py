"""Decomposers: the sentence baseline, the LLM decomposer, and frozen (stored, reused) splits."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fakes.scripted_model import ScriptedChatModel, ScriptedRequest

from ragcourt.judging.decomposers import (
    LLMDecomposer,
    SentenceDecomposer,
    Split,
    SplitsInFlight,
    frozen_split,
)
from ragcourt.llm.client import LLMClient
from ragcourt.prompts.library import PromptId, load_prompt, parse_untrusted
from ragcourt.schema import Decomposition, DecompositionKind, QueryType, UnscoredReason, VerdictStatus
from ragcourt.stores.records import RecordStore

MakeModel = Callable[..., ScriptedChatModel]
QUESTION = "Who directed Jaws and when was he born?"


# --------------------------------------------------------------------------- sentence baseline


@pytest.mark.parametrize(
    ("question", "items", "query_type"),
    [
        ("Who wrote Hamlet?", ("Who wrote Hamlet?",), QueryType.SINGLE_FOCUS),
        ("  Who directed Jaws and when was he born?  ", ("Who directed Jaws and when was he born?",),
         QueryType.SINGLE_FOCUS),
        ("Who wrote Hamlet? When was it first performed?",
         ("Who wrote Hamlet?", "When was it first performed?"), QueryType.MULTI_ASPECT),
        ("Name the author; give the year", ("Name the author", "give the year"), QueryType.MULTI_ASPECT),
    ],
)
async def test_sentence_subqueries(question: str, items: tuple[str, ...], query_type: QueryType) -> None:
    split = await SentenceDecomposer().split(DecompositionKind.SUBQUERIES, question, question)
    assert split == Split(items=items, query_type=query_type)


@pytest.mark.parametrize("kind", [DecompositionKind.ELEMENTS, DecompositionKind.CLAIMS])
async def test_sentence_elements_and_claims_are_sentences(kind: DecompositionKind) -> None:
    text = "Steven Spielberg directed Jaws. He was born in 1946! Was it a hit? Yes."
    split = await SentenceDecomposer().split(kind, text, QUESTION)
    assert split.items == ("Steven Spielberg directed Jaws.", "He was born in 1946!", "Was it a hit?", "Yes.")
    assert split.query_type is None and split.status is VerdictStatus.OK


async def test_a_short_span_is_one_element() -> None:
    split = await SentenceDecomposer().split(DecompositionKind.ELEMENTS, "  Steven Spielberg ", QUESTION)
    assert split.items == ("Steven Spielberg",)


async def test_an_empty_text_has_no_elements() -> None:
    assert (await SentenceDecomposer().split(DecompositionKind.CLAIMS, "   ", QUESTION)).items == ()


def test_sentence_prompt_hash_differs_per_kind() -> None:
    decomposer = SentenceDecomposer()
    hashes = {decomposer.prompt_hash(kind) for kind in DecompositionKind}
    assert len(hashes) == 3
    assert decomposer.prompt_hash(DecompositionKind.CLAIMS) == SentenceDecomposer().prompt_hash(DecompositionKind.CLAIMS)
    assert decomposer.model_id == "sentences"


# --------------------------------------------------------------------------- LLM decomposer


def decomposer(model: ScriptedChatModel) -> LLMDecomposer:
    return LLMDecomposer(LLMClient(model, model_id="scripted:decomposer"))


def sent_block(request: ScriptedRequest, label: str) -> str:
    prompt = str(request.messages[-1].content)
    found_label, text = parse_untrusted(prompt[prompt.index(f"<<<{label}-"):])
    assert found_label == label
    return text


async def test_llm_subqueries(scripted_model: MakeModel) -> None:
    model = scripted_model(builders={"QueryDecomposition": lambda _: {
        "query_type": "multi_step",
        "sub_queries": ["Who directed Jaws?", "  When was the director of Jaws born? ", "  "],
    }})
    split = await decomposer(model).split(DecompositionKind.SUBQUERIES, QUESTION, QUESTION)
    assert split == Split(
        items=("Who directed Jaws?", "When was the director of Jaws born?"), query_type=QueryType.MULTI_STEP
    )
    assert sent_block(model.requests[0], "QUESTION") == QUESTION


async def test_llm_subqueries_fall_back_to_the_question(scripted_model: MakeModel) -> None:
    model = scripted_model(script=[{"query_type": "single_focus", "sub_queries": []}])
    split = await decomposer(model).split(DecompositionKind.SUBQUERIES, QUESTION, QUESTION)
    assert split.items == (QUESTION,) and split.query_type is QueryType.SINGLE_FOCUS


async def test_llm_claims(scripted_model: MakeModel) -> None:
    answer = "Spielberg directed it. He was born in 1946."
    model = scripted_model(builders={"ClaimList": lambda _: {
        "claims": ["Steven Spielberg directed Jaws.", "Steven Spielberg was born in 1946.", ""],
    }})
    split = await decomposer(model).split(DecompositionKind.CLAIMS, answer, QUESTION)
    assert split.items == ("Steven Spielberg directed Jaws.", "Steven Spielberg was born in 1946.")
    assert split.query_type is None
    assert model.requests[0].tool_name == "ClaimList"
    assert sent_block(model.requests[0], "ANSWER") == answer


async def test_llm_elements(scripted_model: MakeModel) -> None:
    reference = "Jaws was directed by Steven Spielberg, born 18 December 1946."
    model = scripted_model(builders={"ElementList": lambda _: {
        "elements": ["Jaws was directed by Steven Spielberg.", "Steven Spielberg was born on 18 December 1946."],
    }})
    split = await decomposer(model).split(DecompositionKind.ELEMENTS, reference, QUESTION)
    assert split.items == ("Jaws was directed by Steven Spielberg.", "Steven Spielberg was born on 18 December 1946.")
    assert sent_block(model.requests[0], "REFERENCE") == reference
    # frozen per reference text, so the element prompt shows no question (issue 19.11)
    assert "<<<QUESTION-" not in str(model.requests[0].messages[-1].content)


async def test_llm_garbage_is_unscored(scripted_model: MakeModel) -> None:
    model = scripted_model(script=["Sure! Here are the claims:", '{"claims": "one claim"}'])
    split = await decomposer(model).split(DecompositionKind.CLAIMS, "An answer.", QUESTION)
    assert split.status is VerdictStatus.UNSCORED
    assert split.unscored_reason is UnscoredReason.PARSE_FAILURE
    assert split.items == ()
    assert model.calls == 2  # the call and one repair


def test_llm_prompt_hash_and_model_id(scripted_model: MakeModel) -> None:
    llm = decomposer(scripted_model())
    assert llm.model_id == "scripted:decomposer"
    assert llm.prompt_hash(DecompositionKind.ELEMENTS) == load_prompt(PromptId.SPLIT_ELEMENTS).hash
    assert llm.prompt_hash(DecompositionKind.CLAIMS) == load_prompt(PromptId.DECOMPOSE_ANSWER).hash
    assert llm.prompt_hash(DecompositionKind.SUBQUERIES) == load_prompt(PromptId.DECOMPOSE_QUESTION).hash


# --------------------------------------------------------------------------- frozen splits

REFERENCE = "Jaws was directed by Steven Spielberg. He was born in 1946."


@dataclass
class Held:
    """A decomposer that awaits `before(kind, text, question)`, then splits as `inner` does (same model and
    prompt hash, so the same frozen split id): a test's way to order concurrent splits."""

    inner: LLMDecomposer
    before: Callable[[DecompositionKind, str, str], Awaitable[object]]

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    def prompt_hash(self, kind: DecompositionKind) -> str:
        return self.inner.prompt_hash(kind)

    async def split(self, kind: DecompositionKind, text: str, question: str) -> Split:
        await self.before(kind, text, question)
        return await self.inner.split(kind, text, question)
ELEMENTS = {"elements": ["Jaws was directed by Steven Spielberg.", "Steven Spielberg was born in 1946."]}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RecordStore]:
    with RecordStore(tmp_path / "s.sqlite") as opened:
        yield opened


async def test_frozen_split_is_stored_and_reused(store: RecordStore, scripted_model: MakeModel) -> None:
    model = scripted_model(builders={"ElementList": lambda _: ELEMENTS})
    llm = decomposer(model)
    first = await frozen_split(store, llm, DecompositionKind.ELEMENTS, REFERENCE, QUESTION)

    expected_id = Decomposition.make_id(
        DecompositionKind.ELEMENTS, REFERENCE, load_prompt(PromptId.SPLIT_ELEMENTS).hash, "scripted:decomposer"
    )
    assert first.id == expected_id
    assert first.items == tuple(ELEMENTS["elements"])
    assert (first.source_text, first.model_id, first.edited) == (REFERENCE, "scripted:decomposer", False)
    assert store.get_decomposition(expected_id) == first

    second = await frozen_split(store, llm, DecompositionKind.ELEMENTS, REFERENCE, "another question")
    assert second == first
    assert model.calls == 1  # the second split came from the store


async def test_another_text_or_kind_is_split_anew(store: RecordStore, scripted_model: MakeModel) -> None:
    model = scripted_model(builders={
        "ElementList": lambda _: ELEMENTS, "ClaimList": lambda _: {"claims": ["A claim."]},
    })
    llm = decomposer(model)
    elements = await frozen_split(store, llm, DecompositionKind.ELEMENTS, REFERENCE, QUESTION)
    other = await frozen_split(store, llm, DecompositionKind.ELEMENTS, REFERENCE + " ", QUESTION)
    claims = await frozen_split(store, llm, DecompositionKind.CLAIMS, REFERENCE, QUESTION)
    assert model.calls == 3
    assert len({elements.id, other.id, claims.id}) == 3
    assert claims.items == ("A claim.",)


async def test_an_edited_stored_split_wins(store: RecordStore, scripted_model: MakeModel) -> None:
    model = scripted_model(builders={"ElementList": lambda _: ELEMENTS})
    llm = decomposer(model)
    machine = await frozen_split(store, llm, DecompositionKind.ELEMENTS, REFERENCE, QUESTION)
    edited = machine.model_copy(update={"items": ("Spielberg directed Jaws.", "Born 1946.", "American."),
                                        "edited": True})
    store.put(edited)

    again = await frozen_split(store, llm, DecompositionKind.ELEMENTS, REFERENCE, QUESTION)
    assert again == edited
    assert again.items == ("Spielberg directed Jaws.", "Born 1946.", "American.") and again.edited
    assert model.calls == 1


async def test_failed_splits_are_not_stored(store: RecordStore, scripted_model: MakeModel) -> None:
    replies: list[Any] = ["not json", "still not json"]
    model = scripted_model(script=replies, builders={"ElementList": lambda _: ELEMENTS})
    llm = decomposer(model)
    failed = await frozen_split(store, llm, DecompositionKind.ELEMENTS, REFERENCE, QUESTION)
    assert failed.status is VerdictStatus.UNSCORED
    assert failed.unscored_reason is UnscoredReason.PARSE_FAILURE and failed.items == ()
    assert store.get_decomposition(failed.id) is None

    retried = await frozen_split(store, llm, DecompositionKind.ELEMENTS, REFERENCE, QUESTION)
    assert model.calls == 3  # two for the failed split (call + repair), one for the retry
    assert retried.id == failed.id and retried.status is VerdictStatus.OK
    assert store.get_decomposition(retried.id) == retried


async def test_frozen_split_with_the_sentence_baseline(store: RecordStore) -> None:
    split = await frozen_split(store, SentenceDecomposer(), DecompositionKind.CLAIMS, REFERENCE, QUESTION)
    assert split.items == ("Jaws was directed by Steven Spielberg.", "He was born in 1946.")
    assert split.model_id == "sentences"
    assert store.get_decomposition(split.id) == split


async def test_concurrent_samples_with_one_reference_share_one_split(store: RecordStore,
                                                                     scripted_model: MakeModel) -> None:
    """HotpotQA's reference "yes" under many questions at once: without a shared in-flight split each sample
    asks (with its own question in the prompt) and the last to store wins, so the others' elements change in
    the next run; with the run's in-flight map one call serves them all."""
    model = scripted_model(builders={"ElementList": lambda _: ELEMENTS})
    llm = decomposer(model)
    questions = [f"{QUESTION} ({i})" for i in range(5)]
    arrived = asyncio.Barrier(5)
    all_at_once = Held(llm, lambda *_: arrived.wait())  # every split waits for all five: the race, whatever the load
    racing = await asyncio.gather(*(frozen_split(store, all_at_once, DecompositionKind.ELEMENTS, REFERENCE, q)
                                    for q in questions))
    assert model.calls == 5  # the race this guards against

    in_flight: SplitsInFlight = {}
    other = REFERENCE + " Again."
    shared = await asyncio.gather(*(frozen_split(store, llm, DecompositionKind.ELEMENTS, other, q, in_flight)
                                    for q in questions))
    assert model.calls == 6
    assert len({s.id for s in shared}) == 1 and all(s == shared[0] for s in shared)
    assert store.get_decomposition(shared[0].id) == shared[0]
    assert in_flight == {}  # nothing left behind once the split is done
    assert len({r.id for r in racing}) == 1



async def test_two_processes_splitting_one_reference_keep_the_first_split(tmp_path: Path,
                                                                          scripted_model: MakeModel) -> None:
    """Two workspaces on one store file (two `ragcourt run`s) split the same reference at once: in-flight
    sharing is per process, so both ask; the one that stores second goes on with the split stored first."""
    first_model = scripted_model(builders={"ElementList": lambda _: ELEMENTS})
    late_model = scripted_model(builders={"ElementList": lambda _: {"elements": ["Spielberg directed Jaws."]}})
    with RecordStore(tmp_path / "s.sqlite") as one, RecordStore(tmp_path / "s.sqlite") as two:
        # the late process's decomposer: while its model is asked, the other process stores its split
        overtaken = Held(decomposer(late_model), lambda kind, text, question: frozen_split(
            one, decomposer(first_model), kind, text, question))
        late = await frozen_split(two, overtaken, DecompositionKind.ELEMENTS, REFERENCE, QUESTION, {})
        assert (first_model.calls, late_model.calls) == (1, 1)
        first = one.get_decomposition(late.id)
        assert first is not None and first.items == tuple(ELEMENTS["elements"])
        assert late == first == two.get_decomposition(late.id)



async def test_claims_of_one_answer_under_two_questions_are_two_splits(store: RecordStore, scripted_model: MakeModel) -> None:
    """The claims prompt shows the question ("Yes." is another claim under each), so the frozen split is keyed
    by it; elements are the split of the reference alone and are shared."""
    model = scripted_model(builders={
        "ClaimList": lambda request: {"claims": [f"claim for {sent_block(request, 'QUESTION')}"]},
        "ElementList": lambda _: ELEMENTS,
    })
    llm = decomposer(model)
    first = await frozen_split(store, llm, DecompositionKind.CLAIMS, "Yes.", "Is Paris in France?")
    second = await frozen_split(store, llm, DecompositionKind.CLAIMS, "Yes.", "Is Lyon in France?")
    again = await frozen_split(store, llm, DecompositionKind.CLAIMS, "Yes.", "Is Paris in France?")
    assert first.items == ("claim for Is Paris in France?",) and second.items == ("claim for Is Lyon in France?",)
    assert first.id != second.id and again == first and model.calls == 2
    elements = [await frozen_split(store, llm, DecompositionKind.ELEMENTS, REFERENCE, q) for q in ("Q1?", "Q2?")]
    assert elements[0] == elements[1] and model.calls == 3
