"""The CUE-R confidence probe: a 0-1 confidence for an answer whose system reports none (seed 004's c).

Off unless the configuration names a model (`confidence_probe`): the system's own generator model when it
is reachable as a spec, or a judge's. One short call per answer that lacks a confidence; the answer is then
labelled `probed`, so a probed confidence error is never read as the system's self-report.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from ragcourt.llm.client import LLMClient
from ragcourt.prompts.library import PromptId, load_prompt, untrusted
from ragcourt.schema import Chunk
from ragcourt.systems.protocol import render_chunks


class ProbedConfidence(BaseModel):
    """The probe's output schema."""

    confidence: float = Field(ge=0.0, le=1.0, description="probability in [0, 1] that the answer is correct")


@dataclass
class ConfidenceProbe:
    """Asks `client` how likely `answer` is correct given the question and the chunks the system was shown."""

    client: LLMClient

    async def probe(self, question: str, chunks: Sequence[Chunk], answer: str) -> float | None:
        """The confidence, or None when the reply could not be read (its usage is metered by the client)."""
        text = load_prompt(PromptId.PROBE_CONFIDENCE).render(
            question=untrusted(question, "QUESTION"), chunks=render_chunks(chunks),
            answer=untrusted(answer, "ANSWER"),
        )
        result = await self.client.structured_call(
            [SystemMessage("You rate answers and reply as JSON."), HumanMessage(text)], ProbedConfidence,
        )
        return None if result.value is None else result.value.confidence
