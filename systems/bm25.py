"""BM25 retrieval over the chunks of the reference system's chromadb collection (seed 004, CUE-R: "top-5
BM25-retrieved passage chunks").

The index is Okapi BM25 as bm25s computes it by default (the Lucene variant: k1 1.5, b 0.75, idf
``ln(1 + (N - df + 0.5) / (df + 0.5))``, which is never negative), built in memory from the chunk texts the
collection holds. Texts and questions are split by `metrics.text.tokens` (lower-cased word tokens, CJK characters
one by one), with no stemming and no stopword list: seed 004 names neither, and a word in every chunk earns
almost nothing by its idf anyway.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ragcourt.metrics.text import tokens
from ragcourt.schema import Chunk


class BM25Index:
    """The BM25 index of a corpus of chunks; `top_k` ranks them for a question."""

    def __init__(self, chunks: Sequence[Chunk]) -> None:
        if not chunks:
            raise ValueError("a BM25 index needs at least one chunk")
        # Imported here: bm25s loads scipy.sparse where it is installed, 0.17 s that every command importing the
        # reference system would pay without ever retrieving by BM25.
        import bm25s

        self._chunks = tuple(chunks)
        # The numpy backends: bm25s needs neither scipy nor numba for them.
        self._bm25 = bm25s.BM25(backend="numpy", csc_backend="numpy")
        self._bm25.index([tokens(chunk.text) for chunk in self._chunks], show_progress=False)

    def scores(self, question: str) -> np.ndarray:
        """The BM25 score of every chunk for `question`, in corpus order (0 where no query word occurs)."""
        return np.asarray(self._bm25.get_scores_from_ids(self._bm25.get_tokens_ids(tokens(question))))

    def top_k(self, question: str, k: int) -> list[Chunk]:
        """The k best chunks, best first: score = BM25 score, rank 1-based. Equal scores keep corpus order, so a
        question sharing no word with the corpus gets its first k chunks, as a dense top-k always returns k."""
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        scores = self.scores(question)
        best = np.argsort(-scores, kind="stable")[:k]
        return [self._chunks[i].model_copy(update={"score": float(scores[i]), "rank": rank})
                for rank, i in enumerate(best, start=1)]
