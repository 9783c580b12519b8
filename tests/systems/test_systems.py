"""Systems under test: the extractive and LLM generators, precomputed answers, LangChain and the reference RAG."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fakes.scripted_model import ScriptedChatModel
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import AIMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda
from pydantic import Field

from ragcourt.llm.client import LLMClient
from ragcourt.prompts.library import parse_untrusted
from ragcourt.schema import (
    CLOSED_BOOK,
    NORMAL,
    ORACLE,
    Chunk,
    Condition,
    ConditionKind,
    Sample,
    UnscoredReason,
    VerdictStatus,
    content_id,
)
from ragcourt.schema.config import Retriever
from ragcourt.stores.embeddings import HashingEmbedding
from ragcourt.stores.vectors import VectorStore
from ragcourt.systems import (
    ConditionUnavailable,
    ConfidenceProbe,
    ExtractiveGenerator,
    Generation,
    LangChainSystem,
    LLMGenerator,
    Precomputed,
    RAGSystem,
    ReferenceRAG,
    context_ids,
    render_chunks,
)

MakeModel = Callable[..., ScriptedChatModel]
QUESTION = "When was the Eiffel Tower built?"  # content words {eiffel, tower, built}
CHUNKS = (
    Chunk(id="k-paris", text="Paris is in France. The tower is tall.", title="Paris"),
    Chunk(id="k-eiffel", text="Gustave Eiffel designed it. The Eiffel Tower opened in 1889."),
)


# --------------------------------------------------------------------------- extractive generator


async def test_extractive_picks_the_sentence_with_most_question_words() -> None:
    generation = await ExtractiveGenerator().generate(QUESTION, CHUNKS)
    # "The tower is tall." covers {tower}: 1/3; "The Eiffel Tower opened in 1889." covers {eiffel, tower}: 2/3
    assert generation == Generation(
        text="The Eiffel Tower opened in 1889.", used_chunk_ids=("k-eiffel",), confidence=0.6667
    )


async def test_extractive_keeps_the_first_of_equally_good_sentences() -> None:
    chunks = [Chunk(id="a", text="The Eiffel Tower is iron."), Chunk(id="b", text="The Eiffel Tower is tall.")]
    generation = await ExtractiveGenerator().generate(QUESTION, chunks)
    assert (generation.text, generation.used_chunk_ids) == ("The Eiffel Tower is iron.", ("a",))


async def test_extractive_without_chunks_does_not_know() -> None:
    generation = await ExtractiveGenerator().generate(QUESTION, [])
    assert (generation.text, generation.confidence, generation.used_chunk_ids) == ("I don't know.", 0.0, ())
    blank = await ExtractiveGenerator().generate(QUESTION, [Chunk(id="x", text="   ")])
    assert blank.text == "I don't know."


# --------------------------------------------------------------------------- LLM generator


def generator(model: ScriptedChatModel) -> LLMGenerator:
    return LLMGenerator(LLMClient(model, model_id="scripted:answerer", role="answerer"))


def test_context_ids_and_rendered_chunks() -> None:
    assert context_ids(CHUNKS) == ["ctx_0", "ctx_1"]
    rendered = render_chunks(CHUNKS)
    assert rendered.startswith("[ctx_0] title: <<<TITLE-")
    assert parse_untrusted(rendered[len("[ctx_0] title: "):]) == ("TITLE", "Paris")
    second = rendered.index("[ctx_1]\n")
    assert parse_untrusted(rendered[second + len("[ctx_1]\n"):]) == ("CHUNK", CHUNKS[1].text)
    assert render_chunks([]) == "(no context)"


async def test_llm_generator_maps_used_ids_back_to_chunk_ids(scripted_model: MakeModel) -> None:
    model = scripted_model(builders={"GroundedAnswer": lambda _: {
        "answer": "1889", "used_ids": ["ctx_1", "ctx_7", "ctx_1", " ctx_0", "ctx_0"], "confidence": 0.8,
    }})
    generation = await generator(model).generate(QUESTION, CHUNKS)
    assert generation.status is VerdictStatus.OK
    assert generation.text == "1889" and generation.confidence == 0.8
    # unknown ctx_7 and the padded id are ignored, repeats kept once, in the order the model gave
    assert generation.used_chunk_ids == ("k-eiffel", "k-paris")
    assert generation.usage.calls == 1
    prompt = str(model.requests[0].messages[-1].content)
    assert parse_untrusted(prompt[prompt.index("<<<QUESTION-"):]) == ("QUESTION", QUESTION)
    assert "[ctx_1]" in prompt


async def test_llm_generator_closed_book(scripted_model: MakeModel) -> None:
    model = scripted_model(script=[{"answer": "1889", "used_ids": ["ctx_0"], "confidence": 0.4}])
    generation = await generator(model).generate(QUESTION, [])
    assert generation.used_chunk_ids == () and generation.text == "1889"
    # the prompt of every condition (seed 000's zero-score set "under the same prompt"), with no passage in it
    shown = str(model.requests[0].messages[-1].content)
    assert "Retrieved passages" in shown and "(no context)" in shown and "<<<CHUNK-" not in shown


async def test_llm_generator_garbage_is_unscored(scripted_model: MakeModel) -> None:
    model = scripted_model(script=["It was 1889.", '{"answer": "1889", "confidence": 4}'])
    generation = await generator(model).generate(QUESTION, CHUNKS)
    assert generation.status is VerdictStatus.UNSCORED
    assert generation.unscored_reason is UnscoredReason.PARSE_FAILURE
    assert generation.text == "" and generation.confidence is None and generation.used_chunk_ids == ()
    assert generation.raw_output == '{"answer": "1889", "confidence": 4}'
    assert generation.error is not None and "confidence" in generation.error
    assert generation.usage.calls == 2


# --------------------------------------------------------------------------- precomputed


PRECOMPUTED_SAMPLE = Sample(id="s1", question=QUESTION, contexts=CHUNKS, answer="In 1889.")


async def test_precomputed_returns_the_given_contexts_and_answer() -> None:
    system = Precomputed()
    assert isinstance(system, RAGSystem)
    chunks = await system.retrieve(PRECOMPUTED_SAMPLE, k=1, score_threshold=None)
    assert chunks == list(CHUNKS)  # what the system retrieved, whatever k
    generation = await system.generate(PRECOMPUTED_SAMPLE, chunks, NORMAL)
    # no trace: a dataset's answer names no chunk it used (was every given chunk, issue 19 item 3)
    assert generation == Generation(text="In 1889.") and generation.used_chunk_ids is None


@pytest.mark.parametrize(
    "condition", [CLOSED_BOOK, ORACLE, Condition(kind=ConditionKind.REMOVE, chunk_id="k-paris")],
    ids=str,
)
async def test_precomputed_has_only_the_normal_condition(condition: Condition) -> None:
    with pytest.raises(ConditionUnavailable, match=f"only for the normal condition, not {condition.key}"):
        await Precomputed().generate(PRECOMPUTED_SAMPLE, CHUNKS, condition)


async def test_precomputed_without_data_is_unavailable() -> None:
    bare = Sample(id="s2", question=QUESTION)
    with pytest.raises(ConditionUnavailable, match="sample s2 has no precomputed contexts"):
        await Precomputed().retrieve(bare, k=5, score_threshold=None)
    with pytest.raises(ConditionUnavailable, match="sample s2 has no precomputed answer"):
        await Precomputed().generate(bare, [], NORMAL)


# --------------------------------------------------------------------------- LangChain


class ListRetriever(BaseRetriever):
    """Returns the first search_kwargs['k'] documents and records the search_kwargs of every call."""

    documents: list[Document]
    search_kwargs: dict[str, Any] = Field(default_factory=dict)
    asked: list[dict[str, Any]] = Field(default_factory=list)  # shared by copies: model_copy is shallow

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        self.asked.append(dict(self.search_kwargs))
        return self.documents[: self.search_kwargs.get("k", 4)]


DOCUMENTS = [
    Document(page_content="The Eiffel Tower opened in 1889.", id="d-eiffel",
             metadata={"title": "Eiffel Tower", "source": "wiki", "score": 0.9, "tags": ["iron"]}),
    Document(page_content="Paris is the capital of France.", metadata={"id": "d-paris", "title": "Paris"}),
    Document(page_content="Lyon is in France."),
]


def langchain_system(runnable: Any, **extra: Any) -> tuple[LangChainSystem, ListRetriever]:
    retriever = ListRetriever(documents=DOCUMENTS, search_kwargs={"k": 1, "fetch_k": 20})
    return LangChainSystem(retriever=retriever, runnable=runnable, extra_inputs=extra), retriever


async def test_langchain_retrieve_passes_k_through_search_kwargs() -> None:
    system, retriever = langchain_system(RunnableLambda(lambda inputs: "unused"))
    chunks = await system.retrieve(Sample(id="s1", question=QUESTION), k=3, score_threshold=None)

    assert retriever.asked == [{"k": 3, "fetch_k": 20}]
    assert retriever.search_kwargs == {"k": 1, "fetch_k": 20}  # the configured retriever is not changed
    # a document without an id is named by its content, so it is the same chunk in every request
    unnamed = f"doc-{content_id('Lyon is in France.')}"
    assert [(c.id, c.rank, c.title) for c in chunks] == [
        ("d-eiffel", 1, "Eiffel Tower"), ("d-paris", 2, "Paris"), (unnamed, 3, None),
    ]
    assert chunks[0].text == "The Eiffel Tower opened in 1889."
    assert (chunks[0].source, chunks[0].score) == ("wiki", 0.9)
    assert "tags" not in chunks[0].metadata  # only scalar metadata is kept

    again = await system.retrieve(Sample(id="s1", question=QUESTION), k=2, score_threshold=0.4)
    assert retriever.asked[-1] == {"k": 2, "fetch_k": 20, "score_threshold": 0.4}
    assert [c.id for c in again] == ["d-eiffel", "d-paris"]


async def test_langchain_generate_returns_the_runnable_answer() -> None:
    seen: list[dict[str, Any]] = []

    def answer(inputs: dict[str, Any]) -> AIMessage:
        seen.append(inputs)
        return AIMessage(content=f"{inputs['style']} answer from {inputs['context'].count('1889')} mention")

    system, _ = langchain_system(RunnableLambda(answer), style="short")
    sample = Sample(id="s1", question=QUESTION)
    chunks = await system.retrieve(sample, k=2, score_threshold=None)
    generation = await system.generate(sample, chunks, NORMAL)

    assert generation.text == "short answer from 1 mention"
    assert generation.used_chunk_ids is None  # a chain reports no trace (was every shown chunk, issue 19 item 3)
    assert seen == [{
        "question": QUESTION,
        "context": "The Eiffel Tower opened in 1889.\n\nParis is the capital of France.",
        "style": "short",
    }]


@pytest.mark.parametrize(
    ("output", "text"), [({"answer": "1889", "context": "..."}, "1889"), ("plain 1889", "plain 1889")]
)
async def test_langchain_generate_accepts_dict_and_string_outputs(output: Any, text: str) -> None:
    system, _ = langchain_system(RunnableLambda(lambda inputs: output))
    generation = await system.generate(Sample(id="s1", question=QUESTION), [], CLOSED_BOOK)
    assert generation.text == text and generation.used_chunk_ids is None  # no trace (was (), issue 19 item 3)


# --------------------------------------------------------------------------- reference RAG


async def test_reference_rag_retrieves_from_chromadb_and_generates(tmp_path: Path) -> None:
    vectors = VectorStore.persistent(tmp_path / "chroma", HashingEmbedding())
    vectors.index("corpus", [
        Chunk(id="c-eiffel", text="The Eiffel Tower was built in 1889 for the World Fair.", title="Eiffel Tower"),
        Chunk(id="c-louvre", text="The Louvre is a museum in Paris.", title="Louvre"),
        Chunk(id="c-rhine", text="The Rhine river flows to the North Sea.", title="Rhine"),
    ])
    system = ReferenceRAG(vectors=vectors, collection="corpus", generator=ExtractiveGenerator())
    sample = Sample(id="s1", question="When was the Eiffel Tower built?")

    chunks = await system.retrieve(sample, k=2, score_threshold=None)
    assert [c.rank for c in chunks] == [1, 2]
    assert (chunks[0].id, chunks[0].title) == ("c-eiffel", "Eiffel Tower")
    assert chunks[0].score is not None and chunks[0].score > chunks[1].score  # type: ignore[operator]

    generation = await system.generate(sample, chunks, NORMAL)
    assert generation.text == "The Eiffel Tower was built in 1889 for the World Fair."
    assert generation.used_chunk_ids == ("c-eiffel",) and generation.confidence == 1.0

    assert len(await system.retrieve(sample, k=3, score_threshold=None)) == 3
    above = await system.retrieve(sample, k=3, score_threshold=chunks[0].score)
    assert [c.id for c in above] == ["c-eiffel"]


async def test_reference_rag_retrieves_by_bm25_over_the_collections_chunks(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """retriever: bm25 ranks the collection's chunks by BM25 (tests/systems/test_bm25.py): "eiffel", "tower", "was"
    and "built" occur in c-eiffel only; of the other two only "the" matches, twice in c-rhine, once in c-louvre. The
    index is read from chromadb once and kept."""
    vectors = VectorStore.persistent(tmp_path / "chroma", HashingEmbedding())
    vectors.index("corpus", [
        Chunk(id="c-eiffel", text="The Eiffel Tower was built in 1889 for the World Fair.", title="Eiffel Tower"),
        Chunk(id="c-louvre", text="The Louvre is a museum in Paris.", title="Louvre"),
        Chunk(id="c-rhine", text="The Rhine river flows to the North Sea.", title="Rhine"),
    ])
    listings = []
    listing = vectors.all_chunks
    monkeypatch.setattr(vectors, "all_chunks", lambda name: listings.append(name) or listing(name))
    system = ReferenceRAG(vectors=vectors, collection="corpus", generator=ExtractiveGenerator(),
                          retriever=Retriever.BM25)
    sample = Sample(id="s1", question="When was the Eiffel Tower built?")

    chunks = await system.retrieve(sample, k=2, score_threshold=None)
    assert [(c.id, c.rank, c.title) for c in chunks] == [("c-eiffel", 1, "Eiffel Tower"), ("c-rhine", 2, "Rhine")]
    assert chunks[0].score > chunks[1].score > 0  # type: ignore[operator]
    every = await system.retrieve(sample, k=5, score_threshold=None)
    assert [c.id for c in every] == ["c-eiffel", "c-rhine", "c-louvre"]
    assert listings == ["corpus"]  # one listing for both retrievals
    with pytest.raises(ValueError, match="score_threshold is a cosine similarity"):
        await system.retrieve(sample, k=2, score_threshold=0.5)
    # unset, the reference system retrieves densely (a run sets the configuration's retriever)
    dense = ReferenceRAG(vectors=vectors, collection="corpus", generator=ExtractiveGenerator())
    assert (await dense.retrieve(sample, k=1, score_threshold=None))[0].score < 1  # type: ignore[operator]


# --------------------------------------------------------------------------- CUE-R confidence probe


async def test_the_confidence_probe_reads_a_probability_or_gives_none(scripted_model: MakeModel) -> None:
    model = scripted_model(script=[{"confidence": 0.25}, "sure!", '{"confidence": 3}'])
    probe = ConfidenceProbe(LLMClient(model, model_id="scripted:probe", role="confidence_probe"))
    assert await probe.probe(QUESTION, CHUNKS, "1889") == 0.25
    prompt = str(model.requests[0].messages[-1].content)
    assert "[ctx_1]" in prompt and parse_untrusted(prompt[prompt.index("<<<ANSWER-"):]) == ("ANSWER", "1889")
    assert await probe.probe(QUESTION, CHUNKS, "1889") is None  # unparsable, then out of range after the repair
