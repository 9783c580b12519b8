"""Stores: the record store (SQLite or PostgreSQL), the chromadb corpus, embeddings and LangGraph checkpointers.

- `records`: `RecordStore`, every record of a workspace in one SQLite file or PostgreSQL database; its
  read-back aggregates are in `queries` (`VerdictTally`, `MetricTotals`, `SampleCheckCounts`), the LLM cache
  in `record_cache`, what the two backends spell differently in `dialect` (`SQLiteDialect`, `PostgresDialect`).
- `vectors`: `VectorStore`, the corpus in chromadb.
- `encoders`: text encoders behind one protocol (`MiniLMEncoder`, `E5Encoder`, `OpenAIEncoder`), chosen per check
  kind (`EncoderChoice`); `embeddings`: their chromadb functions (`MiniLMEmbedding`, `E5Embedding`,
  `OpenAIEmbedding`) and `HashingEmbedding` for tests.
- `group_commit`: async writes that share transactions (`GroupCommit`).
- `checkpoints`: LangGraph checkpointers over SQLite or PostgreSQL that know ragcourt's records.

The names below load on first use (lazy_loader, from the stub `__init__.pyi` beside this file, which is also
what type checkers read): chromadb is slow to import, and `import ragcourt.stores.records` (or this package)
must not import it.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
