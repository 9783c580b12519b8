"""The reference RAG's dense retrieval over the shared HotpotQA corpus with each encoder: every paragraph of the
100 dev questions in one chromadb collection (995 distinct paragraphs of 1,000, as `ragcourt index` indexes them),
each question's top 5 against its two supporting paragraphs.

Run: nice -n 10 python bench/encoder_retrieval.py --encoder minilm|e5 [path/to/dev_sample_100.jsonl]
Prints recall@5 (supporting paragraphs retrieved / supporting paragraphs), C-Prec@5 with the question as its one
sub-query and the supporting labels deciding which chunk covers it (Q-CARE: sum of r_i / 5, r_i = 1 for a
supporting paragraph), and the CPU seconds of indexing and of querying.
"""

from __future__ import annotations

import argparse
import platform
import tempfile
import time
from pathlib import Path

from ragcourt.data.loaders import load_hotpotqa
from ragcourt.stores.embeddings import corpus_embedding
from ragcourt.stores.vectors import VectorStore

DEFAULT_DATA = Path(__file__).resolve().parent.parent / "data" / "hotpotqa" / "dev_sample_100.jsonl"
K = 5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--encoder", default="minilm")
    args = parser.parse_args()
    hotpot = load_hotpotqa(args.data)
    with tempfile.TemporaryDirectory() as folder:
        store = VectorStore.persistent(folder, corpus_embedding(args.encoder))
        cpu = time.process_time()
        store.index("hotpotqa", list(hotpot.corpus))
        index_cpu = time.process_time() - cpu
        cpu = time.process_time()
        hits = store.query_many("hotpotqa", [s.question for s in hotpot.samples], k=K)
        query_cpu = time.process_time() - cpu
    found = [len({c.id for c in s.gold_documents} & {c.id for c in top}) for s, top in zip(hotpot.samples, hits,
                                                                                           strict=True)]
    wanted = sum(len(s.gold_documents) for s in hotpot.samples)
    print(f"encoder {args.encoder}; {platform.processor() or platform.machine()}; data {args.data.name}")
    print(f"{len(hotpot.corpus)} paragraphs indexed in {index_cpu:.1f} s CPU; {len(hotpot.samples)} questions "
          f"queried in {query_cpu:.1f} s CPU")
    print(f"recall@{K} {sum(found) / wanted:.3f} ({sum(found)}/{wanted}); C-Prec@{K} "
          f"{sum(found) / (K * len(hotpot.samples)):.3f}")


if __name__ == "__main__":
    main()
