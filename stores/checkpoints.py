"""LangGraph checkpointers over SQLite or PostgreSQL whose serializer knows ragcourt's records.

LangGraph's msgpack serializer warns about (and, in strict mode, refuses) every class it revives that is
not on its allow-list; graph states hold our pydantic records and enums, so the allow-list names all of
them. The sync saver owns its connection (close it with `saver.conn.close()`); the async one is an
async context manager that closes its connection on exit, as aiosqlite connections must be awaited.

A run whose record store is PostgreSQL keeps its checkpoints in that database too (`async_saver`), so any
worker can resume a sample another one paused: threads are named by run and sample, unique in the database.
The PostgreSQL savers' connections are autocommit with dict rows (their queries need both), and their tables
are created under an advisory lock, since two workers creating them at once can collide.
"""

from __future__ import annotations

import inspect
import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

import aiosqlite
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from pydantic import BaseModel

from ragcourt import schema
from ragcourt.stores.dialect import SCHEMA_LOCK_KEY

if TYPE_CHECKING:  # psycopg and the PostgreSQL savers load only when a PostgreSQL store is used
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

_SETUP_LOCK_SQL = f"SELECT pg_advisory_lock({SCHEMA_LOCK_KEY + 1})"
_SETUP_UNLOCK_SQL = f"SELECT pg_advisory_unlock({SCHEMA_LOCK_KEY + 1})"


def schema_types() -> list[type]:
    """Every pydantic model and enum ragcourt.schema exports (records, enums, review decisions)."""
    return [
        member
        for _, member in inspect.getmembers(schema, inspect.isclass)
        if member.__module__.startswith(f"{schema.__name__}.") and issubclass(member, BaseModel | Enum)
    ]


def serializer() -> JsonPlusSerializer:
    """LangGraph's serializer, allowed to revive exactly the records and enums of ragcourt.schema.

    Checkpoints name a class by the module that defined it. Until the layout moved them into
    `ragcourt.schema.records` and `.enums`, that module was `ragcourt.schema` itself, which still exports
    every one of them: the old names stay allowed, so an inline review paused before the move resumes.
    """
    types = schema_types()
    legacy = [(schema.__name__, t.__name__) for t in types]
    return JsonPlusSerializer(allowed_msgpack_modules=[*types, *legacy])


def sqlite_saver(path: str | Path) -> SqliteSaver:
    """A sync SQLite checkpointer on its own connection (usable from any thread)."""
    conn = sqlite3.connect(str(path), check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    return SqliteSaver(conn, serde=serializer())


@asynccontextmanager
async def async_sqlite_saver(path: str | Path) -> AsyncIterator[AsyncSqliteSaver]:
    """An async SQLite checkpointer: `async with async_sqlite_saver(path) as saver: ...`."""
    async with aiosqlite.connect(str(path)) as conn:
        await conn.execute("PRAGMA journal_mode=WAL")
        yield AsyncSqliteSaver(conn, serde=serializer())


@contextmanager
def postgres_saver(url: str) -> Iterator[PostgresSaver]:
    """A sync PostgreSQL checkpointer on its own connection, its tables made if missing: `with ... as saver:`."""
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row

    with psycopg.connect(url, autocommit=True, row_factory=dict_row) as conn:  # type: ignore[arg-type]
        saver = PostgresSaver(conn, serde=serializer())  # type: ignore[arg-type]
        conn.execute(_SETUP_LOCK_SQL)
        try:
            saver.setup()
        finally:
            conn.execute(_SETUP_UNLOCK_SQL)
        yield saver


@asynccontextmanager
async def async_postgres_saver(url: str) -> AsyncIterator[AsyncPostgresSaver]:
    """An async PostgreSQL checkpointer, its tables made if missing: `async with ... as saver:`."""
    import psycopg
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg.rows import dict_row

    conn = await psycopg.AsyncConnection.connect(url, autocommit=True, row_factory=dict_row)  # type: ignore[arg-type]
    async with conn:
        saver = AsyncPostgresSaver(conn, serde=serializer())  # type: ignore[arg-type]
        await conn.execute(_SETUP_LOCK_SQL)
        try:
            await saver.setup()
        finally:
            await conn.execute(_SETUP_UNLOCK_SQL)
        yield saver


@asynccontextmanager
async def async_saver(store_url: str | None, path: str | Path) -> AsyncIterator[AsyncSqliteSaver | AsyncPostgresSaver]:
    """The checkpointer of a run: in its PostgreSQL store's database (store_url), else in the SQLite file `path`."""
    if store_url is not None:
        async with async_postgres_saver(store_url) as saver:
            yield saver
    else:
        async with async_sqlite_saver(path) as sqlite:
            yield sqlite
