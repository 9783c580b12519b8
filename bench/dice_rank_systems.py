"""Three systems' answer files over the bundled HotpotQA sample, for `ragcourt rank` (seed 001's Swiss
tournament, baseline tiers):

* extractive_k5: the reference RAG (chromadb, offline MiniLM) with the extractive answerer, top 5 chunks;
* extractive_k1: the same with only the top chunk;
* closed_book: no retrieval, always "I don't know." (DICE tier 3: admits not knowing).

Run: python bench/dice_rank_systems.py OUT_DIR [--home WORKSPACE] [--questions N]
then: ragcourt rank OUT_DIR/*.jsonl --references ragcourt/data/hotpotqa/dev_sample_100.jsonl
The workspace's 'hotpotqa' collection is indexed first when missing (a minute or so on two cores).
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Sequence
from pathlib import Path

from ragcourt.data.loaders import BundledDataset, bundled, load_hotpotqa
from ragcourt.nodes.tournament_state import AnswerSet
from ragcourt.runs.ranking import answer_set_from_system
from ragcourt.runs.workspace import Workspace
from ragcourt.schema import Chunk, Condition, Sample
from ragcourt.systems import ExtractiveGenerator, Generation, ReferenceRAG

COLLECTION = "hotpotqa"


class ClosedBook:
    """Retrieves nothing and never answers."""

    name = "closed_book"

    async def retrieve(self, sample: Sample, k: int, score_threshold: float | None) -> list[Chunk]:
        return []

    async def generate(self, sample: Sample, chunks: Sequence[Chunk], condition: Condition) -> Generation:
        return Generation(text="I don't know.", confidence=0.0)


def write(answer_set: AnswerSet, path: Path) -> None:
    with path.open("w", encoding="utf-8") as out:
        for sample in answer_set.answers.values():
            contexts = [{"id": c.id, "title": c.title, "text": c.text, "score": c.score} for c in sample.contexts or ()]
            row = {"id": sample.id, "question": sample.question, "answer": sample.answer, "contexts": contexts}
            out.write(json.dumps(row, ensure_ascii=False) + "\n")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--home", type=Path, default=Path("ragcourt-runs"))
    parser.add_argument("--questions", type=int, default=30)
    args = parser.parse_args()
    hotpot = load_hotpotqa(bundled(BundledDataset.HOTPOTQA_DEV_100))
    vectors = Workspace(args.home).open_vectors()
    if not vectors.has_collection(COLLECTION) or vectors.count(COLLECTION) < len(hotpot.corpus):
        for start in range(0, len(hotpot.corpus), 128):
            vectors.index(COLLECTION, hotpot.corpus[start:start + 128])
    questions = [Sample(id=s.id, question=s.question) for s in hotpot.samples[: args.questions]]
    reference = ReferenceRAG(vectors, COLLECTION, ExtractiveGenerator())
    args.out.mkdir(parents=True, exist_ok=True)
    for name, system, k in (("extractive_k5", reference, 5), ("extractive_k1", reference, 1),
                            ("closed_book", ClosedBook(), 0)):
        answer_set = await answer_set_from_system(name, system, questions, k=k)
        write(answer_set, args.out / f"{name}.jsonl")
        print(f"{name}: {len(answer_set.answers)} answers -> {args.out / f'{name}.jsonl'}")


if __name__ == "__main__":
    asyncio.run(main())
