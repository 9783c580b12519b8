"""The built-in reference system: retrieval from a chromadb collection (dense, or BM25 over its chunks) plus a
generator, an LLM's or the extractive baseline."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from ragcourt.llm.client import LLMClient
from ragcourt.metrics.text import content_tokens, sentences
from ragcourt.prompts.library import PromptId, load_prompt, untrusted
from ragcourt.schema import Chunk, Condition, Sample, VerdictStatus
from ragcourt.schema.config import Retriever
from ragcourt.stores.vectors import VectorStore
from ragcourt.systems.bm25 import BM25Index
from ragcourt.systems.protocol import Generation, Generator, context_ids, render_chunks


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
        # One prompt for every condition, the closed book's included (its passages read "(no context)"): seed 000
        # builds the zero-score set "under the same prompt", and seed 004's control shows the question alone.
        text = load_prompt(PromptId.ANSWER_WITH_CONTEXT).render(question=untrusted(question, "QUESTION"),
                                                                chunks=render_chunks(chunks))
        result = await self.client.structured_call(
            [SystemMessage("You answer questions and report your evidence as JSON."), HumanMessage(text)],
            GroundedAnswer,
        )
        if result.value is None:
            return Generation(  # this generator reports its trace: an unparsed reply reports no chunk used
                text="", used_chunk_ids=(), status=VerdictStatus.UNSCORED, unscored_reason=result.reason,
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
            return Generation(text="I don't know.", used_chunk_ids=(), confidence=0.0)
        return Generation(text=best[1], used_chunk_ids=(best[2],), confidence=round(best[0], 4))


@dataclass
class ReferenceRAG:
    """The built-in reference system: retrieval from a chromadb collection plus a generator (LLM or extractive).

    retriever: dense (the collection's nearest neighbours) or BM25 over the collection's chunk texts, whose index is
    built in memory at the first BM25 retrieval and kept by this system; None lets a run set the configuration's
    (`EvalConfig.reference_retriever`), and retrieves densely outside a run.
    """

    vectors: VectorStore
    collection: str
    generator: Generator
    name: str = "reference-rag"
    retriever: Retriever | None = None
    _bm25: BM25Index | None = field(default=None, init=False, repr=False, compare=False)
    # Samples retrieve concurrently in worker threads: the first ones must not each build the index.
    _bm25_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False, compare=False)

    async def retrieve(self, sample: Sample, k: int, score_threshold: float | None) -> list[Chunk]:
        if self.retriever is not Retriever.BM25:
            return await asyncio.to_thread(self.vectors.query, self.collection, sample.question, k, score_threshold)
        if score_threshold is not None:
            raise ValueError("score_threshold is a cosine similarity of dense retrieval; BM25 scores have no such "
                             "scale")
        return await asyncio.to_thread(lambda: self._bm25_index().top_k(sample.question, k))

    def _bm25_index(self) -> BM25Index:
        with self._bm25_lock:
            if self._bm25 is None:
                self._bm25 = BM25Index(self.vectors.all_chunks(self.collection))
            return self._bm25

    async def generate(self, sample: Sample, chunks: Sequence[Chunk], condition: Condition) -> Generation:
        return await self.generator.generate(sample.question, chunks)
