"""Question sets written from a corpus (seed 000, 4.2, the LTA paradigm): an LLM plays a real user and writes
one question per document, and the document becomes the question's gold document. A team with only a corpus
gets a data set with CuBE's oracle bound (the gold document alone) and R@k (was the gold document retrieved).

Seed 003's warning holds for every such set: a question written from a document always has its answer in
the documents, so these questions cannot reveal document gaps (a question the corpus does not answer).
Real user questions are better when available.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from ragcourt.llm.client import LLMClient
from ragcourt.prompts.library import PromptId, load_prompt, untrusted
from ragcourt.schema import Chunk, Sample

DOCUMENT_GAP_WARNING = (
    "Questions written from the corpus always have their answer in the documents, so they cannot reveal "
    "document gaps (seed 003); real user questions are better when available."
)


class GeneratedQuestion(BaseModel):
    """The question a real user would ask that the document answers."""

    question: str = Field(description="one realistic user question that the document answers")


@dataclass(frozen=True)
class GenerationFailure:
    document_id: str
    reason: str


@dataclass(frozen=True)
class QuestionSet:
    samples: tuple[Sample, ...]
    failures: tuple[GenerationFailure, ...]


def pick_documents(documents: Sequence[Chunk], n: int | None, seed: int) -> list[Chunk]:
    """All documents, or a seeded sample of n of them, in id order (the same n and seed give the same set)."""
    ordered = sorted(documents, key=lambda d: d.id)
    if n is None or n >= len(ordered):
        return ordered
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    chosen = {d.id for d in random.Random(seed).sample(ordered, n)}
    return [d for d in ordered if d.id in chosen]


def sample_id(document: Chunk) -> str:
    return f"gen:{document.id}"


def _not_a_question(text: str) -> str | None:
    """Why `text` is not a usable question, or None. A small model wrote a document marker
    ("DOCUMENT-7b2b55e1") or a statement cut off at the length limit: a question asks, so it carries a question
    mark (ASCII or full-width)."""
    if not text:
        return "the model wrote an empty question"
    if "?" not in text and "？" not in text:
        return f"the model wrote no question (no question mark): {text[:80]!r}"
    return None


async def _one(client: LLMClient, document: Chunk) -> Sample | GenerationFailure:
    prompt = load_prompt(PromptId.GENERATE_QUESTION)
    text = f"{document.title}\n{document.text}" if document.title else document.text
    result = await client.structured_call(
        [SystemMessage("You write realistic user questions and reply only with the requested JSON."),
         HumanMessage(prompt.render(document=untrusted(text, "DOCUMENT")))],
        GeneratedQuestion,
    )
    if result.value is None:
        return GenerationFailure(document.id, f"{result.reason}: {result.detail or ''}".strip(": "))
    question = result.value.question.strip()
    problem = _not_a_question(question)
    if problem is not None:
        return GenerationFailure(document.id, problem)
    gold = Chunk(id=document.id, text=document.text, title=document.title, source=document.source)
    return Sample(
        id=sample_id(document), question=question, gold_documents=(gold,),
        gold_titles=(document.title,) if document.title else (),
        metadata={"generated_by": client.model_id, "prompt": f"{prompt.id}@{prompt.hash}",
                  "source_document": document.id},
    )


async def generate_question_set(client: LLMClient, documents: Sequence[Chunk]) -> QuestionSet:
    """One question per document (the client's limiter bounds the calls in flight). A document whose reply
    is unusable is listed in `failures` with the reason, never given an invented question."""
    results = await asyncio.gather(*(_one(client, d) for d in documents))
    return QuestionSet(
        samples=tuple(r for r in results if isinstance(r, Sample)),
        failures=tuple(r for r in results if isinstance(r, GenerationFailure)),
    )


def sample_row(sample: Sample) -> dict[str, Any]:
    """The JSONL row `load_samples` reads back into the same Sample."""
    return {
        "id": sample.id,
        "question": sample.question,
        "gold_titles": list(sample.gold_titles),
        "gold_documents": [
            {"id": d.id, "text": d.text, **({"title": d.title} if d.title else {})} for d in sample.gold_documents
        ],
        "metadata": sample.metadata,
    }
