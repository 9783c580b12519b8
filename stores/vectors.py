"""The corpus in chromadb: index chunks, query them back as ranked `Chunk`s with cosine scores.

Collections are created with cosine space and an embedding function registered in `stores.embeddings`,
so a collection persisted by one process reopens in another without passing the function again.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import chromadb
from chromadb.api import ClientAPI
from chromadb.api.models.Collection import Collection
from chromadb.api.types import Documents, EmbeddingFunction
from chromadb.config import Settings
from chromadb.errors import InvalidArgumentError

from ragcourt.schema import Chunk

# Importing the module registers our embedding functions with chromadb (needed to reopen collections).
from ragcourt.stores import embeddings as _registered_embeddings  # noqa: F401

_TITLE = "title"
_SOURCE = "source"


class CollectionNotFoundError(LookupError):
    pass


def _settings() -> Settings:
    return Settings(anonymized_telemetry=False)


def _chroma_metadata(chunk: Chunk) -> dict[str, Any] | None:
    """title, source and the scalar entries of chunk.metadata (chromadb stores no nested values)."""
    metadata = {
        key: value for key, value in chunk.metadata.items() if isinstance(value, str | int | float | bool)
    }
    for key, value in ((_TITLE, chunk.title), (_SOURCE, chunk.source)):
        if key in metadata and metadata[key] != value:
            raise ValueError(f"chunk {chunk.id!r}: metadata key {key!r} clashes with the chunk's {key} field")
        if value is not None:
            metadata[key] = value
    # chromadb rejects an empty metadata dict but accepts None.
    return metadata or None


def _chunk_from_hit(
    chunk_id: str, text: str, metadata: Mapping[str, Any] | None, distance: float, rank: int
) -> Chunk:
    rest = dict(metadata or {})
    title = rest.pop(_TITLE, None)
    source = rest.pop(_SOURCE, None)
    # Cosine distance is 1 - cosine similarity.
    return Chunk(
        id=chunk_id, text=text, title=title, source=source, score=1.0 - distance, rank=rank, metadata=rest
    )


class VectorStore:
    """One chromadb client: an embedded persistent folder or a Chroma server over HTTP.

    `embedding` is used to create new collections; existing ones reopen with the function they were
    created with (it may be passed again, and chromadb rejects a different one).
    """

    def __init__(self, client: ClientAPI, embedding: EmbeddingFunction[Documents] | None = None) -> None:
        self._client = client
        self._embedding = embedding
        self._collections: dict[str, Collection] = {}
        self._listings: dict[str, tuple[Chunk, ...]] = {}  # full corpus listings, dropped when indexing

    @classmethod
    def persistent(
        cls, path: str | Path, embedding: EmbeddingFunction[Documents] | None = None
    ) -> VectorStore:
        client = chromadb.PersistentClient(path=str(path), settings=_settings())
        return cls(client, embedding)

    @classmethod
    def http(cls, host: str, port: int, embedding: EmbeddingFunction[Documents] | None = None) -> VectorStore:
        client = chromadb.HttpClient(host=host, port=port, settings=_settings())
        return cls(client, embedding)

    def has_collection(self, name: str) -> bool:
        return any(collection.name == name for collection in self._client.list_collections())

    def _collection(self, name: str, *, create: bool) -> Collection:
        if name in self._collections:
            return self._collections[name]
        if self.has_collection(name):
            # chromadb builds the registered function from the collection's persisted config: a collection keeps
            # the encoder it was indexed with (MiniLM, e5 or an endpoint), whatever this store would create with.
            collection = self._client.get_collection(name)
            if collection.configuration.get("embedding_function") is None and self._embedding is not None:
                collection = self._client.get_collection(name, embedding_function=self._embedding)  # type: ignore[arg-type]
        elif not create:
            raise CollectionNotFoundError(f"no vector collection named {name!r}")
        elif self._embedding is None:
            raise ValueError(f"creating collection {name!r} needs an embedding function")
        else:
            try:
                collection = self._client.create_collection(
                    name,
                    embedding_function=self._embedding,  # type: ignore[arg-type]
                    configuration={"hnsw": {"space": "cosine"}},
                )
            except InvalidArgumentError as error:  # chromadb's name rules: say which name, in one line
                raise ValueError(f"chromadb collection name {name!r} is not allowed: {error}") from None
        self._collections[name] = collection
        return collection

    def encoder_of(self, collection: str) -> str | None:
        """The encoder a collection was indexed with (`minilm`, `e5`, `openai:MODEL@URL`), None for a function
        that is not ragcourt's."""
        function = self._collection(collection, create=False).configuration.get("embedding_function")
        name = getattr(function, "encoder_name", None)
        return name() if callable(name) else None

    def index(self, collection: str, chunks: Sequence[Chunk], batch_size: int = 256) -> int:
        """Upsert the chunks (id = chunk.id); returns how many were written."""
        empty = [chunk.id for chunk in chunks if not chunk.text.strip()]
        if empty:
            raise ValueError(f"cannot index chunks with empty text: {empty[:10]}")
        duplicated = [chunk_id for chunk_id, n in Counter(chunk.id for chunk in chunks).items() if n > 1]
        if duplicated:
            raise ValueError(f"duplicate chunk ids in one index call: {duplicated[:10]}")
        target = self._collection(collection, create=True)
        self._listings.pop(collection, None)
        for start in range(0, len(chunks), batch_size):
            batch = chunks[start : start + batch_size]
            target.upsert(
                ids=[chunk.id for chunk in batch],
                documents=[chunk.text for chunk in batch],
                metadatas=[_chroma_metadata(chunk) for chunk in batch],  # type: ignore[misc]
            )
        return len(chunks)

    def query(self, collection: str, text: str, k: int, score_threshold: float | None = None) -> list[Chunk]:
        """The k nearest chunks, best first, rank 1-based, score = cosine similarity (>= threshold if given)."""
        (hits,) = self.query_many(collection, [text], k)
        if score_threshold is None:
            return hits
        return [chunk for chunk in hits if chunk.score is not None and chunk.score >= score_threshold]

    def query_many(self, collection: str, texts: Sequence[str], k: int) -> list[list[Chunk]]:
        """One batched query: for each text its k nearest chunks, as in `query`."""
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        if not texts:
            return []
        result = self._collection(collection, create=False).query(
            query_texts=list(texts), n_results=k, include=["documents", "metadatas", "distances"]
        )
        ids, documents = result["ids"], result["documents"]
        metadatas, distances = result["metadatas"], result["distances"]
        assert documents is not None and metadatas is not None and distances is not None
        return [
            [
                _chunk_from_hit(chunk_id, document or "", metadata, distance, rank)
                for rank, (chunk_id, document, metadata, distance) in enumerate(
                    zip(ids[row], documents[row], metadatas[row], distances[row], strict=True), start=1
                )
            ]
            for row in range(len(texts))
        ]

    def count(self, collection: str) -> int:
        return self._collection(collection, create=False).count()

    def all_chunks(self, collection: str, limit: int | None = None, page_size: int = 1000) -> tuple[Chunk, ...]:
        """Every chunk of the collection (or the first `limit`), sorted by id, without score or rank.

        Sorted so that seeded draws from the corpus (random distractors, generated questions) do not depend
        on chromadb's storage order. The full listing is kept per collection until the next `index` call.
        """
        if limit is not None and limit < 0:
            raise ValueError(f"limit must be >= 0, got {limit}")
        listing = self._listings.get(collection)
        if listing is None:
            target = self._collection(collection, create=False)
            found: list[Chunk] = []
            offset = 0
            while True:
                page = target.get(include=["documents", "metadatas"], limit=page_size, offset=offset)
                ids = page["ids"]
                documents, metadatas = page["documents"] or [], page["metadatas"] or []
                for chunk_id, document, metadata in zip(ids, documents, metadatas, strict=True):
                    rest: dict[str, Any] = dict(metadata or {})  # what we stored: str title and source
                    found.append(Chunk(id=chunk_id, text=document or "", title=rest.pop(_TITLE, None),
                                       source=rest.pop(_SOURCE, None), metadata=rest))
                if len(ids) < page_size:
                    break
                offset += page_size
            listing = tuple(sorted(found, key=lambda chunk: chunk.id))
            self._listings[collection] = listing
        return listing if limit is None else listing[:limit]
