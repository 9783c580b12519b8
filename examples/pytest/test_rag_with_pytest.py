"""A RAG app tested with ragcourt's pytest plugin: `pytest examples/pytest` (add `-n 2` for pytest-xdist).

The app is a small keyword retriever over four documents that answers with the best chunk. The lexical judge
decides offline, with no LLM call; the second session resumes every run from the workspace (by default under
.pytest_cache; `--ragcourt-workspace DIR` to choose it, e.g. a directory a CI job caches).

One case passes. The other FAILS ON PURPOSE, to show what a failure says: the corpus has nothing on when Acme
was founded, so that element of the reference answer is missing (a document gap) and the figures drop.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ragcourt.schema import Chunk, Condition, Sample
from ragcourt.systems import Generation
from ragcourt.testing import assert_rag

DOCUMENTS = (
    Chunk(id="hq", title="Acme", text="Acme's headquarters are in Springfield."),
    Chunk(id="staff", title="Acme", text="Acme employs 300 people."),
    Chunk(id="zoo", title="Springfield", text="The Springfield zoo charges 10 dollars for adults."),
    Chunk(id="museum", title="Springfield", text="Entry to the Springfield museum is free."),
)
STOP = {"the", "a", "an", "is", "are", "of", "in", "to", "and", "how", "what", "when", "where", "was", "it", "at"}


def words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOP}


@dataclass
class KeywordRAG:
    """The app under test: chunks ranked by the question words they share; the answer is the best chunk."""

    documents: Sequence[Chunk] = DOCUMENTS
    name: str = "keyword-rag"

    async def retrieve(self, sample: Sample, k: int, score_threshold: float | None) -> list[Chunk]:
        asked = words(sample.question)
        scored = sorted(((len(asked & words(d.text)), i) for i, d in enumerate(self.documents)), reverse=True)
        return [self.documents[i].model_copy(update={"score": float(n), "rank": rank})
                for rank, (n, i) in enumerate((s for s in scored if s[0] > 0), start=1)][:k]

    async def generate(self, sample: Sample, chunks: Sequence[Chunk], condition: Condition) -> Generation:
        if not chunks:
            return Generation(text="I don't know.", used_chunk_ids=())
        return Generation(text=chunks[0].text, used_chunk_ids=(chunks[0].id,))


THRESHOLDS = {"element_coverage": 0.8, "completeness": 0.8}


def test_the_headquarters_question_is_answered(ragcourt_eval) -> None:
    sample = Sample(id="hq", question="Where are Acme's headquarters?",
                    reference_answer="Acme's headquarters are in Springfield.")
    ragcourt_eval.assert_rag(sample, KeywordRAG(), thresholds=THRESHOLDS, judges=["lexical"])


def test_the_founding_year_is_answered() -> None:  # fails on purpose: the corpus does not say
    sample = Sample(id="founded", question="How many people work at Acme, and when was Acme founded?",
                    reference_answer="Acme employs 300 people. Acme was founded in 1901.")
    assert_rag(sample, KeywordRAG(), thresholds=THRESHOLDS, judges=["lexical"])
