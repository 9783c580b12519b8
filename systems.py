"""The system under test: the RAGSystem protocol and its adapters.

A system retrieves chunks for a sample and generates an answer from chunks. ragcourt calls `generate`
under several conditions (normal, closed book, oracle, perturbed contexts), so generation takes the
chunks to show rather than retrieving them itself. Methods take the whole Sample (not only the question)
so that precomputed systems can look up what they answered.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from ragcourt.llm.client import LLMClient
from ragcourt.prompts.library import PromptId, load_prompt, untrusted
from ragcourt.schema import Chunk, Condition, ConditionKind, Sample, TokenUsage, UnscoredReason, VerdictStatus
from ragcourt.stores.vectors import VectorStore
from ragcourt.text import content_tokens, sentences


class ConditionUnavailable(Exception):
    """The system cannot answer under this condition (e.g. precomputed answers exist only for normal)."""


class Generation(BaseModel):
    """What a system produced for one question under one condition."""

    model_config = {"frozen": True}

    text: str
    used_chunk_ids: tuple[str, ...] = ()
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    usage: TokenUsage = TokenUsage()
    status: VerdictStatus = VerdictStatus.OK
    unscored_reason: UnscoredReason | None = None
    error: str | None = None
    raw_output: str | None = None


@runtime_checkable
class RAGSystem(Protocol):
    name: str

    async def retrieve(self, sample: Sample, k: int, score_threshold: float | None) -> list[Chunk]: ...

    async def generate(self, sample: Sample, chunks: Sequence[Chunk], condition: Condition) -> Generation: ...


class Generator(Protocol):
    name: str

    async def generate(self, question: str, chunks: Sequence[Chunk]) -> Generation: ...


def context_ids(chunks: Sequence[Chunk]) -> list[str]:
    """Stable ids shown to a generator (seed 004): ctx_0, ctx_1, ... in the order given."""
    return [f"ctx_{i}" for i in range(len(chunks))]


def render_chunks(chunks: Sequence[Chunk]) -> str:
    blocks = []
    for shown_id, chunk in zip(context_ids(chunks), chunks, strict=True):
        title = f" title: {chunk.title}" if chunk.title else ""
        blocks.append(f"[{shown_id}]{title}\n{untrusted(chunk.text, 'CHUNK')}")
    return "\n\n".join(blocks) if blocks else "(no context)"


class GroundedAnswer(BaseModel):
    """The answer of a generator that was shown chunks with ids ctx_0, ctx_1, ..."""

    answer: str = Field(description="the answer to the question, as short as a correct answer allows")
    used_ids: list[str] = Field(default_factory=list, description="ids (ctx_N) of the chunks the answer uses")
    confidence: float = Field(ge=0.0, le=1.0, description="probability in [0, 1] that the answer is correct")


@dataclass
class LLMGenerator:
    """Generation by a chat model with the CUE-R protocol: answer, used ids and confidence as JSON."""

    client: LLMClient
    name: str = "llm"

    async def generate(self, question: str, chunks: Sequence[Chunk]) -> Generation:
        if chunks:
            prompt = load_prompt(PromptId.ANSWER_WITH_CONTEXT)
            text = prompt.render(question=untrusted(question, "QUESTION"), chunks=render_chunks(chunks))
        else:
            prompt = load_prompt(PromptId.ANSWER_CLOSED_BOOK)
            text = prompt.render(question=untrusted(question, "QUESTION"))
        result = await self.client.structured_call(
            [SystemMessage("You answer questions and report your evidence as JSON."), HumanMessage(text)],
            GroundedAnswer,
        )
        if result.value is None:
            return Generation(
                text="", status=VerdictStatus.UNSCORED, unscored_reason=result.reason,
                error=result.detail, raw_output=result.raw_text, usage=result.usage,
            )
        shown = dict(zip(context_ids(chunks), (c.id for c in chunks), strict=True))
        used = tuple(dict.fromkeys(shown[i] for i in result.value.used_ids if i in shown))
        return Generation(
            text=result.value.answer, used_chunk_ids=used, confidence=result.value.confidence,
            usage=result.usage, raw_output=result.raw_text,
        )


@dataclass
class ExtractiveGenerator:
    """No-LLM baseline: answers with the chunk sentence that shares most content words with the question.

    Known limits: it never composes facts from two chunks and never abstains; its confidence is the share
    of question words the sentence covers, not a calibrated probability. It exists so that the whole
    pipeline runs offline in seconds, not to be compared with a real generator.
    """

    name: str = "extractive"

    async def generate(self, question: str, chunks: Sequence[Chunk]) -> Generation:
        wanted = content_tokens(question)
        best: tuple[float, str, str] | None = None
        for chunk in chunks:
            for sentence in sentences(chunk.text):
                score = len(wanted & content_tokens(sentence)) / max(len(wanted), 1)
                if best is None or score > best[0]:
                    best = (score, sentence, chunk.id)
        if best is None:
            return Generation(text="I don't know.", confidence=0.0)
        return Generation(text=best[1], used_chunk_ids=(best[2],), confidence=round(best[0], 4))


@dataclass
class ReferenceRAG:
    """The built-in reference system: chromadb retrieval plus a generator (LLM or extractive)."""

    vectors: VectorStore
    collection: str
    generator: Generator
    name: str = "reference-rag"

    async def retrieve(self, sample: Sample, k: int, score_threshold: float | None) -> list[Chunk]:
        return await asyncio.to_thread(self.vectors.query, self.collection, sample.question, k, score_threshold)

    async def generate(self, sample: Sample, chunks: Sequence[Chunk], condition: Condition) -> Generation:
        return await self.generator.generate(sample.question, chunks)


@dataclass
class Precomputed:
    """Contexts and answers given in the dataset. Only the normal condition exists."""

    name: str = "precomputed"

    async def retrieve(self, sample: Sample, k: int, score_threshold: float | None) -> list[Chunk]:
        if sample.contexts is None:
            raise ConditionUnavailable(f"sample {sample.id} has no precomputed contexts")
        return list(sample.contexts)

    async def generate(self, sample: Sample, chunks: Sequence[Chunk], condition: Condition) -> Generation:
        if condition.kind is not ConditionKind.NORMAL:
            raise ConditionUnavailable(
                f"precomputed answers exist only for the normal condition, not {condition.key}"
            )
        if sample.answer is None:
            raise ConditionUnavailable(f"sample {sample.id} has no precomputed answer")
        return Generation(text=sample.answer, used_chunk_ids=tuple(c.id for c in chunks))


@dataclass
class LangChainSystem:
    """Any LangChain retriever plus a runnable that maps {question, context} to an answer.

    Loose retrieval and perturbations change k through the retriever's `search_kwargs` when it has them
    (VectorStoreRetriever does); a custom retriever without them is asked with its own settings.
    """

    retriever: Any
    runnable: Any
    name: str = "langchain"
    extra_inputs: dict[str, Any] = field(default_factory=dict)

    async def retrieve(self, sample: Sample, k: int, score_threshold: float | None) -> list[Chunk]:
        retriever = self.retriever
        search_kwargs = getattr(retriever, "search_kwargs", None)
        if isinstance(search_kwargs, dict):
            retriever = retriever.model_copy(update={"search_kwargs": {**search_kwargs, "k": k}})
        documents = await retriever.ainvoke(sample.question)
        return [_chunk_from_document(doc, rank) for rank, doc in enumerate(documents, start=1)]

    async def generate(self, sample: Sample, chunks: Sequence[Chunk], condition: Condition) -> Generation:
        context = "\n\n".join(chunk.text for chunk in chunks)
        output = await self.runnable.ainvoke({"question": sample.question, "context": context, **self.extra_inputs})
        text = getattr(output, "content", output)
        if isinstance(text, dict):
            text = text.get("answer", "")
        return Generation(text=str(text), used_chunk_ids=tuple(c.id for c in chunks))


def _chunk_from_document(document: Any, rank: int) -> Chunk:
    metadata = dict(document.metadata or {})
    chunk_id = str(document.id or metadata.get("id") or f"doc_{rank}")
    return Chunk(
        id=chunk_id, text=document.page_content, title=metadata.get("title"), source=metadata.get("source"),
        score=metadata.get("score"), rank=rank,
        metadata={k: v for k, v in metadata.items() if isinstance(v, str | int | float | bool)},
    )
