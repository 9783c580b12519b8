"""The public names of ragcourt.stores (see __init__.py)."""

from .checkpoints import (
    async_postgres_saver,
    async_saver,
    async_sqlite_saver,
    postgres_saver,
    schema_types,
    serializer,
    sqlite_saver,
)
from .dialect import Dialect, PostgresDialect, SQLiteDialect, dialect_for, is_postgres_url
from .embeddings import EmbeddingKind, HashingEmbedding, MiniLMEmbedding, make_embedding
from .group_commit import GroupCommit, Statement
from .queries import MetricTotals, SampleCheckCounts, VerdictTally
from .record_cache import CacheEntry
from .records import RecordStore, StoreUnavailableError, StoreVersionError
from .vectors import CollectionNotFoundError, VectorStore

__all__ = [
    "CacheEntry",
    "CollectionNotFoundError",
    "Dialect",
    "EmbeddingKind",
    "GroupCommit",
    "HashingEmbedding",
    "MetricTotals",
    "MiniLMEmbedding",
    "PostgresDialect",
    "RecordStore",
    "SQLiteDialect",
    "SampleCheckCounts",
    "Statement",
    "StoreUnavailableError",
    "StoreVersionError",
    "VectorStore",
    "VerdictTally",
    "async_postgres_saver",
    "async_saver",
    "async_sqlite_saver",
    "dialect_for",
    "is_postgres_url",
    "make_embedding",
    "postgres_saver",
    "schema_types",
    "serializer",
    "sqlite_saver",
]
