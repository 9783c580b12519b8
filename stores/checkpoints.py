"""LangGraph checkpointers over SQLite whose serializer knows ragcourt's records.

LangGraph's msgpack serializer warns about (and, in strict mode, refuses) every class it revives that is
not on its allow-list; graph states hold our pydantic records and enums, so the allow-list names all of
them. The sync saver owns its connection (close it with `saver.conn.close()`); the async one is an
async context manager that closes its connection on exit, as aiosqlite connections must be awaited.
"""

from __future__ import annotations

import inspect
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from enum import Enum
from pathlib import Path

import aiosqlite
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from pydantic import BaseModel

from ragcourt import schema


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
