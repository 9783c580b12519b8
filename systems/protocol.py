"""The system under test as ragcourt sees it: the RAGSystem protocol, its Generation, and the generator
protocol of systems that delegate answering.

A system retrieves chunks for a sample and generates an answer from chunks. ragcourt calls `generate`
under several conditions (normal, closed book, oracle, perturbed contexts), so generation takes the
chunks to show rather than retrieving them itself. Methods take the whole Sample (not only the question)
so that precomputed systems can look up what they answered.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, Field

from ragcourt.prompts.library import untrusted
from ragcourt.schema import Chunk, Condition, Sample, TokenUsage, UnscoredReason, VerdictStatus


class ConditionUnavailable(Exception):
    """The system cannot answer under this condition (e.g. precomputed answers exist only for normal)."""


class Generation(BaseModel):
    """What a system produced for one question under one condition.

    `used_chunk_ids` is the system's own trace (seed 004: the chunk ids the answer relied on; () when it used
    none), or None when the system reports no trace: then ragcourt judges one from the answer's claims instead
    of pretending every shown chunk was used.
    """

    model_config = {"frozen": True}

    text: str
    used_chunk_ids: tuple[str, ...] | None = None
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
        title = f" title: {untrusted(chunk.title, 'TITLE')}" if chunk.title else ""  # corpus text: untrusted too
        blocks.append(f"[{shown_id}]{title}\n{untrusted(chunk.text, 'CHUNK')}")
    return "\n\n".join(blocks) if blocks else "(no context)"
