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
from .embeddings import (
    E5Embedding,
    EmbeddingKind,
    HashingEmbedding,
    MiniLMEmbedding,
    OpenAIEmbedding,
    corpus_embedding,
    make_embedding,
)
from .encoders import E5Encoder, Encoder, EncoderChoice, EncoderError, MiniLMEncoder, OpenAIEncoder, TextRole
from .group_commit import GroupCommit, Statement
from .queries import MetricTotals, SampleCheckCounts, VerdictTally
from .record_cache import CacheEntry
from .records import RecordStore, StoreUnavailableError, StoreVersionError
from .vectors import CollectionNotFoundError, VectorStore

__all__ = [
    "CacheEntry",
    "CollectionNotFoundError",
    "Dialect",
    "E5Embedding",
    "E5Encoder",
    "EmbeddingKind",
    "Encoder",
    "EncoderChoice",
    "EncoderError",
    "GroupCommit",
    "HashingEmbedding",
    "MetricTotals",
    "MiniLMEmbedding",
    "MiniLMEncoder",
    "OpenAIEmbedding",
    "OpenAIEncoder",
    "PostgresDialect",
    "RecordStore",
    "SQLiteDialect",
    "SampleCheckCounts",
    "Statement",
    "StoreUnavailableError",
    "StoreVersionError",
    "TextRole",
    "VectorStore",
    "VerdictTally",
    "async_postgres_saver",
    "async_saver",
    "async_sqlite_saver",
    "corpus_embedding",
    "dialect_for",
    "is_postgres_url",
    "make_embedding",
    "postgres_saver",
    "schema_types",
    "serializer",
    "sqlite_saver",
]
