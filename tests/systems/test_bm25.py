"""BM25 over a corpus of chunks (the reference system's `retriever: bm25`), on a corpus small enough to check by hand.

Four chunks of three tokens each, so every length is the average and the term part of a single occurrence is
tf / (tf + k1 (1 - b + b dl / avgdl)) = 1 / (1 + 1.5) = 0.4. N = 4; idf = ln(1 + (N - df + 0.5) / (df + 0.5)):
  "capital" (c1, c2: df 2) ln(1 + 2.5 / 2.5) = ln 2;  "france" (c1: df 1) ln(1 + 3.5 / 1.5) = ln(10/3).
"What is the capital of France?": "what", "is", "the", "of" are in no chunk, so
  c1 0.4 (ln 2 + ln(10/3)) = 0.4 ln(20/3) = 0.75883;  c2 0.4 ln 2 = 0.27726;  c3, c4 0.
"""

from __future__ import annotations

import math

import pytest

from ragcourt.schema import Chunk
from ragcourt.systems import BM25Index

CORPUS = [
    Chunk(id="c1", text="Paris capital France.", title="France"),
    Chunk(id="c2", text="Berlin capital Germany.", title="Germany"),
    Chunk(id="c3", text="Eiffel tower Paris.", title="Eiffel Tower"),
    Chunk(id="c4", text="Tokyo Olympics Japan.", title="Japan", metadata={"lang": "en"}),
]


def test_the_ranking_and_scores_are_the_hand_computed_ones() -> None:
    index = BM25Index(CORPUS)
    top = index.top_k("What is the capital of France?", 3)
    assert [c.id for c in top] == ["c1", "c2", "c3"]  # c3 and c4 tie at 0: corpus order
    assert [c.rank for c in top] == [1, 2, 3]
    assert [c.score for c in top] == pytest.approx([0.4 * math.log(20 / 3), 0.4 * math.log(2), 0.0], rel=1e-6)
    assert (top[0].title, top[0].text) == ("France", "Paris capital France.")  # the chunk itself, scored


def test_equal_scores_keep_corpus_order_and_k_may_exceed_the_corpus() -> None:
    index = BM25Index(CORPUS)
    # "paris": c1 and c3 (df 2), the same length: 0.4 ln 2 each
    assert [(c.id, round(c.score or 0, 5)) for c in index.top_k("Paris", 2)] == [("c1", 0.27726), ("c3", 0.27726)]
    every = index.top_k("Japan and the Olympics", 10)
    assert [c.id for c in every] == ["c4", "c1", "c2", "c3"] and every[-1].metadata == {}
    assert every[0].metadata == {"lang": "en"}
    # no word of the question in the corpus: every score 0, the first k chunks
    assert [(c.id, c.score) for c in index.top_k("???", 2)] == [("c1", 0.0), ("c2", 0.0)]


def test_a_longer_chunk_scores_lower_for_the_same_term() -> None:
    """Length normalisation (b 0.75): "paris" once in a 3-token and once in a 9-token chunk, avgdl 6:
    0.4-like parts 1 / (1 + 1.5 (0.25 + 0.75 x 0.5)) = 0.51613 and 1 / (1 + 1.5 (0.25 + 0.75 x 1.5)) = 0.32653,
    idf ln(1 + 0.5 / 2.5) = ln 1.2 for both."""
    index = BM25Index([Chunk(id="short", text="Paris in France"),
                       Chunk(id="long", text="Paris is a city with many museums and parks")])
    top = index.top_k("Paris", 2)
    idf = math.log(1.2)
    assert [c.id for c in top] == ["short", "long"]
    assert [c.score for c in top] == pytest.approx([idf / 1.9375, idf / 3.0625], rel=1e-6)


def test_an_empty_corpus_and_a_bad_k_are_refused() -> None:
    with pytest.raises(ValueError, match="at least one chunk"):
        BM25Index([])
    with pytest.raises(ValueError, match="k must be >= 1"):
        BM25Index(CORPUS).top_k("Paris", 0)
