"""LangChainSystem: k and score threshold reach the retriever; one chain returning context and answer."""

from __future__ import annotations

import pytest
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda
from live_helpers import example_app, example_store

from ragcourt.runs.api import langchain_config as _langchain_config
from ragcourt.schema import CLOSED_BOOK, NORMAL, Sample, content_id
from ragcourt.systems import (
    ConditionUnavailable,
    LangChainSystem,
    RetrieverControl,
    resized_retriever,
    retriever_control,
)

WARRANTY = Sample(id="w", question="How long is the warranty of the Acme kettle?")


class Fixed(BaseRetriever):
    """A custom retriever with neither search_kwargs nor k: always its three documents."""

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun):
        return [Document(page_content=t) for t in ("one.", "two.", "three.")]


class WithK(BaseRetriever):
    k: int = 2

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun):
        return [Document(page_content=f"doc {i}.") for i in range(self.k)]


def test_vector_store_retriever_gets_k_and_threshold_through_search_kwargs() -> None:
    retriever = example_app.build_retriever(example_store())  # similarity, k = 3
    assert retriever_control(retriever) is RetrieverControl.SEARCH_KWARGS
    strict = resized_retriever(retriever, 5, 0.25)
    assert strict.search_kwargs == {"k": 5, "score_threshold": 0.25}
    assert strict.search_type == "similarity_score_threshold"
    loose = resized_retriever(strict, 6, None)  # the loose condition: no cut-off
    assert loose.search_kwargs == {"k": 6} and retriever.search_kwargs == {"k": 3}  # the app's is untouched
    assert len(loose.invoke(WARRANTY.question)) == 6
    assert _langchain_config(retriever).top_k == 3 and _langchain_config(strict).score_threshold == 0.25


async def test_k_field_retrievers_are_resized_and_fixed_ones_cannot_widen() -> None:
    system = LangChainSystem(WithK(), RunnableLambda(lambda x: "a"), normal_k=2)
    assert [c.text for c in await system.retrieve(WARRANTY, 4, None)] == ["doc 0.", "doc 1.", "doc 2.", "doc 3."]
    fixed = LangChainSystem(Fixed(), RunnableLambda(lambda x: "a"), normal_k=2)
    assert [c.text for c in await fixed.retrieve(WARRANTY, 2, None)] == ["one.", "two."]  # cut to k
    with pytest.raises(ConditionUnavailable, match="neither search_kwargs nor a k field"):
        await fixed.retrieve(WARRANTY, 4, None)


async def test_answer_chain_gets_question_and_context_text() -> None:
    seen = []
    chain = RunnableLambda(lambda x: seen.append(x) or {"answer": "Two years."})
    system = LangChainSystem(Fixed(), chain)
    chunks = await system.retrieve(WARRANTY, 2, None)
    generation = await system.generate(WARRANTY, chunks, NORMAL)
    assert generation.text == "Two years." and seen == [{"question": WARRANTY.question, "context": "one.\n\ntwo."}]
    assert [c.id for c in chunks] == [f"doc-{content_id('one.')}", f"doc-{content_id('two.')}"]  # no ids: content


async def test_one_chain_mode_reuses_its_answer_and_refuses_other_contexts() -> None:
    calls = []

    def whole_app(question: str) -> dict:
        calls.append(question)
        return {"context": [Document(id="d1", page_content="Two years.")], "answer": "It lasts two years."}

    system = LangChainSystem(None, RunnableLambda(whole_app), normal_k=3)
    # its k is the chain's own: no loose run, and C-Prec counts its documents whole (not @ the run's top_k)
    assert system.fixed_retrieval and not LangChainSystem(Fixed(), RunnableLambda(whole_app)).fixed_retrieval
    chunks = await system.retrieve(WARRANTY, 3, None)
    assert [c.id for c in chunks] == ["d1"]
    assert (await system.generate(WARRANTY, chunks, NORMAL)).text == "It lasts two years."
    assert calls == [WARRANTY.question]  # answered from the same run
    with pytest.raises(ConditionUnavailable, match="cannot be shown the closed_book context"):
        await system.generate(WARRANTY, [], CLOSED_BOOK)
    with pytest.raises(ConditionUnavailable, match="cannot be asked for k=6"):
        await system.retrieve(WARRANTY, 6, None)
    bad = LangChainSystem(None, RunnableLambda(lambda q: "just text"))
    with pytest.raises(TypeError, match="must return a dict with 'context'"):
        await bad.retrieve(WARRANTY, 3, None)
