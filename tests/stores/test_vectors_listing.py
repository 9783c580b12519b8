"""VectorStore.all_chunks: the whole corpus, sorted by id, paged, cached until the next index call."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragcourt.schema import Chunk
from ragcourt.stores.embeddings import HashingEmbedding
from ragcourt.stores.vectors import CollectionNotFoundError, VectorStore

CHUNKS = [
    Chunk(id="c3", text="gamma", title="Gamma", source="wiki", metadata={"year": 2001}),
    Chunk(id="c1", text="alpha", title="Alpha"),
    Chunk(id="c2", text="beta"),
]


def test_all_chunks_lists_every_chunk_sorted_by_id_over_several_pages(tmp_path: Path) -> None:
    store = VectorStore.persistent(tmp_path, HashingEmbedding())
    store.index("corpus", CHUNKS)
    listed = store.all_chunks("corpus", page_size=2)  # pages of 2: c?, c?, then 1
    assert [c.id for c in listed] == ["c1", "c2", "c3"]
    assert listed[2] == Chunk(id="c3", text="gamma", title="Gamma", source="wiki", metadata={"year": 2001})
    assert (listed[1].title, listed[1].score, listed[1].rank) == (None, None, None)
    assert [c.id for c in store.all_chunks("corpus", limit=2)] == ["c1", "c2"]
    assert store.all_chunks("corpus", limit=0) == ()


def test_listing_is_cached_and_indexing_refreshes_it(tmp_path: Path) -> None:
    store = VectorStore.persistent(tmp_path, HashingEmbedding())
    store.index("corpus", CHUNKS[:1])
    assert [c.id for c in store.all_chunks("corpus")] == ["c3"]
    store.index("corpus", CHUNKS[1:])
    assert [c.id for c in store.all_chunks("corpus")] == ["c1", "c2", "c3"]
    # A second process (here: a second store on the same folder) sees the same listing.
    other = VectorStore.persistent(tmp_path)
    assert [c.id for c in other.all_chunks("corpus")] == ["c1", "c2", "c3"]


def test_listing_a_missing_collection_or_a_negative_limit_fails(tmp_path: Path) -> None:
    store = VectorStore.persistent(tmp_path, HashingEmbedding())
    with pytest.raises(CollectionNotFoundError):
        store.all_chunks("nope")
    store.index("corpus", CHUNKS)
    with pytest.raises(ValueError, match="limit must be >= 0"):
        store.all_chunks("corpus", limit=-1)
