"""The public names of ragcourt.stores (see __init__.py)."""

from .checkpoints import async_sqlite_saver, schema_types, serializer, sqlite_saver
from .embeddings import EmbeddingKind, HashingEmbedding, MiniLMEmbedding, make_embedding
from .group_commit import GroupCommit, Statement
from .queries import MetricTotals, SampleCheckCounts, VerdictTally
from .record_cache import CacheEntry
from .records import RecordStore, StoreVersionError
from .vectors import CollectionNotFoundError, VectorStore

__all__ = [
    "CacheEntry",
    "CollectionNotFoundError",
    "EmbeddingKind",
    "GroupCommit",
    "HashingEmbedding",
    "MetricTotals",
    "MiniLMEmbedding",
    "RecordStore",
    "SampleCheckCounts",
    "Statement",
    "StoreVersionError",
    "VectorStore",
    "VerdictTally",
    "async_sqlite_saver",
    "make_embedding",
    "schema_types",
    "serializer",
    "sqlite_saver",
]
