"""Test doubles shared by tests/scenarios/live: the example app on a FakeOpenAIServer, and an agreeable judge;
for other questions (CUE-R on HotpotQA) an extractive app model and a retriever over other paragraphs."""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from typing import Any

from fakes.openai_server import ChatRequest
from fixtures import REPO
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore

EXAMPLE_DIR = REPO / "examples" / "langchain_app"
if str(EXAMPLE_DIR) not in sys.path:
    sys.path.insert(0, str(EXAMPLE_DIR))

import app as example_app

from ragcourt.metrics.text import content_tokens, sentences
from ragcourt.schema import Chunk
from ragcourt.stores.embeddings import HashingEmbedding

SHOWN_ID = re.compile(r"^\[(\w+)\]", re.MULTILINE)


def request_text(request: ChatRequest) -> str:
    parts = []
    for message in request.messages:
        content = message.get("content")
        parts.append(content if isinstance(content, str) else "".join(p.get("text", "") for p in content or []))
    return "\n".join(parts)


def first_context_sentence(request: ChatRequest) -> str:
    """The app model's answer: the first sentence of the context it was shown (or 'I don't know.')."""
    text = request_text(request)
    context = text.split("Context:\n", 1)[1].split("\n\nQuestion:", 1)[0] if "Context:\n" in text else ""
    first = context.strip().split(". ")[0].strip()
    return (first.rstrip(".") + ".") if first else "I don't know."


def best_sentence(request: ChatRequest) -> str:
    """The app model's answer on HotpotQA-like questions: the context sentence sharing most content words with
    the question (the first of equals), or "I don't know." when the context is empty."""
    text = request_text(request)
    context, _, question = text.partition("Context:\n")[2].partition("\n\nQuestion: ")
    wanted = content_tokens(question)
    candidates = [s for paragraph in context.split("\n\n") for s in sentences(paragraph)]
    if not candidates:
        return "I don't know."
    return max(candidates, key=lambda s: len(wanted & content_tokens(s)))  # max keeps the first of equals


def judge_builders(binary_label: str = "yes") -> dict[str, Any]:
    """A judge that links every item to every target, and answers `binary_label` to every yes/no item."""

    def shown_ids(request: ChatRequest) -> list[str]:
        return list(dict.fromkeys(SHOWN_ID.findall(request_text(request))))

    def binary(request: ChatRequest) -> dict[str, Any]:
        return {"judgements": [{"item_id": i, "reasoning": "scripted", "verdict": binary_label}
                               for i in shown_ids(request)]}

    def links(request: ChatRequest) -> dict[str, Any]:
        ids = shown_ids(request)
        chunks = [i for i in ids if i.startswith("ctx_")]
        if chunks:
            items, targets = [i for i in ids if not i.startswith("ctx_")], chunks
        else:
            items, targets = [i for i in ids if i.startswith("C")], [i for i in ids if i.startswith("Q")]
        return {"judgements": [{"item_id": i, "reasoning": "scripted", "ids": targets} for i in items]}

    return {"BinaryJudgements": binary, "LinkJudgements": links}


def paragraph_retriever(documents: Sequence[Chunk], k: int = 5) -> Any:
    """A retriever shaped as the example app's (a VectorStoreRetriever with search_kwargs k) over other
    paragraphs, e.g. the bundled HotpotQA corpus, with feature-hashing embeddings (fast, offline); each Document
    keeps its chunk's id and title. The store is LangChain's exact in-memory one: queried by a run's concurrent
    samples, Chroma's index returned slightly different neighbours from run to run, and printed figures must
    repeat (so must numpy: run with OPENBLAS_NUM_THREADS=1, as bench/cuer_langchain_hotpotqa.py does)."""
    store = InMemoryVectorStore(example_app.RagcourtEmbeddings(HashingEmbedding()))
    store.add_documents([Document(id=c.id, page_content=c.text, metadata={"title": c.title or ""})
                         for c in documents], ids=[c.id for c in documents])
    return example_app.build_retriever(store, k=k)


def example_store() -> Any:
    """The example's Chroma store with feature-hashing embeddings (fast, offline), in memory."""
    return example_app.build_vectorstore(example_app.RagcourtEmbeddings(HashingEmbedding()))
