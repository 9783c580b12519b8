"""Index the paragraphs of the 100 HotpotQA dev questions with MiniLM and measure speed and recall@10.

Run: python bench/index_hotpotqa.py [path/to/dev_sample_100.jsonl]
The corpus is every paragraph of every question (deduplicated by title and text), so each question is
answered against the distractors of all questions, not only its own.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ragcourt.schema import Chunk, content_id
from ragcourt.stores.embeddings import MiniLMEmbedding
from ragcourt.stores.vectors import VectorStore

DEFAULT_DATA = Path(__file__).resolve().parent.parent / "data" / "hotpotqa" / "dev_sample_100.jsonl"
COLLECTION = "hotpotqa-dev-100"
K = 10


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    gold_chunk_ids: frozenset[str]


def paragraph_id(title: str, text: str) -> str:
    return content_id("hotpotqa-paragraph", title, text)


def load(path: Path) -> tuple[list[Chunk], list[Question]]:
    chunks: dict[str, Chunk] = {}
    questions: list[Question] = []
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            gold: set[str] = set()
            for context in row["contexts"]:
                chunk_id = paragraph_id(context["title"], context["paragraph_text"])
                chunks.setdefault(
                    chunk_id,
                    Chunk(
                        id=chunk_id, text=context["paragraph_text"], title=context["title"], source="hotpotqa"
                    ),
                )
                if context["is_supporting"]:
                    gold.add(chunk_id)
            questions.append(Question(row["question_id"], row["question_text"], frozenset(gold)))
    return list(chunks.values()), questions


def main(path: Path) -> None:
    chunks, questions = load(path)
    with tempfile.TemporaryDirectory() as folder:
        store = VectorStore.persistent(folder, MiniLMEmbedding())
        started = time.perf_counter()
        store.index(COLLECTION, chunks)
        index_s = time.perf_counter() - started

        started = time.perf_counter()
        results = store.query_many(COLLECTION, [q.text for q in questions], k=K)
        query_s = time.perf_counter() - started

    found = [len(q.gold_chunk_ids & {c.id for c in hits}) for q, hits in zip(questions, results, strict=True)]
    n_gold = sum(len(q.gold_chunk_ids) for q in questions)
    both = sum(n == len(q.gold_chunk_ids) for q, n in zip(questions, found, strict=True))

    print(f"data: {path}")
    print(f"paragraphs indexed: {len(chunks)} (from {len(questions)} questions)")
    print(f"indexing: {index_s:.1f} s, {len(chunks) / index_s:.1f} paragraphs/s")
    print(f"querying {len(questions)} questions (one batch): {query_s:.2f} s")
    print(f"recall@{K} of gold supporting paragraphs: {sum(found)}/{n_gold} = {sum(found) / n_gold:.3f}")
    print(
        f"questions with both gold paragraphs in the top {K}: {both}/{len(questions)} = {both / len(questions):.3f}"
    )
    print(
        f"machine: {platform.platform()}, {platform.processor() or platform.machine()}, {os.cpu_count()} cpus"
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_DATA)
