"""The embedding cache and the token-budget batching: fewer texts and fewer padded tokens through the model,
the same vectors bit for bit."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from ragcourt.data.loaders import BundledDataset, bundled
from ragcourt.metrics.text import sentences
from ragcourt.stores.embeddings import (
    BATCH_SIZE,
    EmbeddingCache,
    HashingEmbedding,
    MiniLMEmbedding,
    token_batches,
)


def test_token_batches_cover_every_text_once_within_the_limits() -> None:
    lengths = [random.Random(7).choice([3, 9, 20, 41, 120, 256]) + n % 5 for n in range(300)]
    batches = token_batches(lengths, max_rows=32, max_tokens=4096, overhead=16)
    assert sorted(i for batch in batches for i in batch) == list(range(300))
    for batch in batches:
        assert len(batch) <= 32 and len(batch) * max(lengths[i] for i in batch) <= 4096
    # runs of the length order: every batch's texts are at least as long as the previous batch's
    spans = [(min(lengths[i] for i in b), max(lengths[i] for i in b)) for b in batches]
    assert all(prev[1] <= cur[0] for prev, cur in zip(spans, spans[1:], strict=False))


def test_token_batches_cut_where_padding_costs_more_than_running_the_model_again() -> None:
    # three texts of 10 tokens and one of 200: together 16 + 4 x 200 = 816 tokens' worth,
    # cut after the third 16 + 30 + 16 + 200 = 262, each alone 4 x 16 + 230 = 294
    assert token_batches([10, 200, 10, 10], overhead=16) == [[0, 2, 3], [1]]
    # 5 and 6 tokens: together 16 + 12 = 28, apart 16 + 5 + 16 + 6 = 43
    assert token_batches([6, 5], overhead=16) == [[1, 0]]
    # 20 texts of 256 tokens: at most 4096 / 256 = 16 in one batch, so two runs of the model
    sizes = [len(b) for b in token_batches([256] * 20, max_tokens=4096, overhead=16)]
    assert len(sizes) == 2 and max(sizes) <= 16 and sum(sizes) == 20
    assert token_batches([]) == []


class Recording:
    """HashingEmbedding that records what it was asked to embed."""

    def __init__(self) -> None:
        self.asked: list[list[str]] = []
        self.function = HashingEmbedding(dim=16)

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.asked.append(list(texts))
        return np.asarray(self.function(texts))


def test_the_cache_embeds_each_distinct_text_once_and_returns_the_same_vectors() -> None:
    inner = Recording()
    cache = EmbeddingCache(inner)
    first = cache(["a cat", "a dog", "a cat"])
    second = cache(["a dog", "a bird"])
    assert inner.asked == [["a cat", "a dog"], ["a bird"]]
    assert cache.embedded == 3 and len(cache) == 3
    direct = np.asarray(HashingEmbedding(dim=16)(["a cat", "a dog", "a cat", "a dog", "a bird"]))
    assert np.array_equal(np.concatenate([first, second]), direct)
    first[0] += 1.0  # the caller's array is its own: the cache keeps its vector
    assert np.array_equal(cache(["a cat"])[0], direct[0])


def test_the_cache_drops_the_least_recently_used_text_first() -> None:
    inner = Recording()
    cache = EmbeddingCache(inner, max_texts=2)
    cache(["one", "two"])
    cache(["one"])  # "one" used last: "two" is the one to drop
    cache(["three"])
    assert len(cache) == 2
    cache(["one", "two"])
    assert inner.asked == [["one", "two"], ["three"], ["two"]]
    with pytest.raises(ValueError, match="max_texts >= 1"):
        EmbeddingCache(inner, max_texts=0)


def test_minilm_vectors_do_not_depend_on_the_batching_bit_for_bit() -> None:
    # Real sentences of varied length (a few words to the 256-token limit): the HotpotQA paragraphs, whole
    # and cut into sentences, as the semantic judge sends a context.
    rows = [json.loads(line) for line in bundled(BundledDataset.HOTPOTQA_DEV_100).read_text().splitlines()[:3]]
    texts = [p["paragraph_text"] for row in rows for p in row["contexts"][:4]]
    texts += [s for text in texts for s in sentences(text)]
    minilm = MiniLMEmbedding()
    together = np.array(minilm(texts))
    alone = np.array([minilm([text])[0] for text in texts])  # one text per run: no padding at all
    assert len(texts) > BATCH_SIZE  # several runs of the model
    assert np.array_equal(together, alone)
    cached = EmbeddingCache(minilm)
    assert np.array_equal(np.concatenate([cached(texts[:9]), cached(texts)]), np.concatenate([alone[:9], alone]))
