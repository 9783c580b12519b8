"""The SQL that differs between the record store's backends: SQLite (the embedded default) and PostgreSQL.

The record store writes its statements once, in the SQL both databases read (`INSERT ... ON CONFLICT`, `?`
placeholders, a `rowid` column giving insertion order), and asks its `Dialect` for the rest: how to connect
and begin a write transaction, column types, JSON paths into the stored payloads, and planner hints. A store
location picks the backend (`dialect_for`): a `postgresql://` URL is PostgreSQL, anything else a SQLite file.
psycopg is imported only by the PostgreSQL dialect, when a store is opened with one.
"""

from __future__ import annotations

import re
import sqlite3
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from enum import StrEnum
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

BUSY_TIMEOUT_S = 30.0
POSTGRES_SCHEMES = ("postgresql://", "postgres://")
# pg_advisory_xact_lock key under which a PostgreSQL store creates its tables (concurrent `CREATE TABLE IF NOT
# EXISTS` from two workers can fail on the catalogue's unique index); any constant no other lock uses
SCHEMA_LOCK_KEY = 0x72616763  # "ragc"


class ColumnKind(StrEnum):
    TEXT = "text"
    INTEGER = "integer"
    BOOLEAN = "boolean"
    BLOB = "blob"  # bytes (compressed bodies)


class Cursor(Protocol):
    def fetchall(self) -> list[Any]: ...

    def fetchone(self) -> Any: ...


class Connection(Protocol):
    """What the store calls on a connection (sqlite3's own API; PostgreSQL's is wrapped to match)."""

    def execute(self, sql: str, params: Sequence[Any] = ..., /) -> Cursor: ...

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]], /) -> Any: ...

    def close(self) -> None: ...


def is_postgres_url(location: str | Path) -> bool:
    return isinstance(location, str) and location.startswith(POSTGRES_SCHEMES)


def shown_location(location: str | Path) -> str:
    """The location for messages: a URL's password is masked."""
    return re.sub(r"(://[^:/@]+):[^@/]*@", r"\1:***@", str(location))


def _json_path(path: str) -> str:
    return "{" + ",".join(path.split(".")) + "}"


class Dialect(ABC):
    """One backend's connections and SQL fragments. `location` is the file path or the URL."""

    begin: str  # the statement that starts a write transaction
    ordered_join: str  # a join the planner takes in the written order (a hint where the backend has one)
    database_error: type[Exception]  # what a broken or unreachable store raises
    # A read answered in this process within microseconds (a local file), not a round trip to a server: async
    # code reads it on its own loop (RecordStoreBase.aread).
    reads_in_process: bool

    def __init__(self, location: str | Path) -> None:
        self.location = location

    @property
    def shown(self) -> str:
        return shown_location(self.location)

    @abstractmethod
    def connect(self) -> Connection:
        """A new connection, ready for the store's statements."""

    @abstractmethod
    def column(self, name: str, kind: ColumnKind, not_null: bool) -> str:
        """The column's definition in CREATE TABLE or ADD COLUMN."""

    @abstractmethod
    def rowid_column(self) -> str | None:
        """The definition of the insertion-order column `rowid`, or None when every table has one."""

    @abstractmethod
    def table_columns(self, conn: Connection, table: str) -> set[str]:
        """The names of an existing table's columns."""

    def schema_lock(self) -> str | None:
        """A statement that serialises schema creation across processes within its transaction, if needed."""
        return None

    def indexed_by(self, index: str) -> str:
        """A hint naming the index to read a table by (appended after the table and alias)."""
        return ""

    @abstractmethod
    def json_text(self, doc: str, path: str) -> str:
        """The scalar at a dotted path of a JSON document (an expression), as SQL text/number, NULL if absent."""

    @abstractmethod
    def json_number(self, value: str) -> str:
        """A JSON value (as the `value` of `array_items`/`object_entries` yields it) as an SQL number."""

    @abstractmethod
    def json_dump(self, value: str) -> str:
        """A JSON value (as the `value` of `array_items`/`object_entries` yields it) as its JSON text."""

    @abstractmethod
    def json_without(self, doc: str, key: str) -> str:
        """The JSON text of a document with one top-level key removed."""

    @abstractmethod
    def json_with(self, doc: str, fields: dict[str, str]) -> str:
        """The JSON text of a document with top-level keys set to SQL values (text, or NULL as null)."""

    @abstractmethod
    def array_items(self, doc: str, path: str, alias: str) -> str:
        """A FROM item over the array at `path`: `alias.key` its position, `alias.value` each element."""

    @abstractmethod
    def object_entries(self, doc: str, path: str, alias: str) -> str:
        """A FROM item over the object at `path`: `alias.key` each name, `alias.value` each value."""

    def retryable(self, error: Exception) -> bool:
        """Whether a failed write transaction may simply be tried again (a deadlock victim)."""
        return False

    def run_lock(self, name: str) -> AbstractContextManager[bool]:
        """A database-wide lock `name`: yields whether this process now holds it (to the end of the block)."""
        raise NotImplementedError(f"{type(self).__name__} has none: a SQLite run locks its directory (runs.runner)")



class SQLiteDialect(Dialect):
    begin = "BEGIN IMMEDIATE"  # takes the write lock up front: a busy file waits (busy timeout), never fails later
    ordered_join = "CROSS JOIN"  # SQLite's planner keeps the order of a CROSS JOIN
    database_error = sqlite3.DatabaseError
    reads_in_process = True  # WAL: a read never waits for a writer

    def connect(self) -> Connection:
        # isolation_level=None: the store issues BEGIN / COMMIT itself, one transaction per write
        conn = sqlite3.connect(self.location, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
        try:
            self._use_wal(conn)
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
        except BaseException:
            conn.close()
            raise
        return conn

    @staticmethod
    def _use_wal(conn: Connection) -> None:
        """Switch the file to WAL once. SQLite answers a journal-mode change with "database is locked" at once,
        without waiting out the busy timeout, while another process opens the same new file (pytest-xdist
        workers sharing a workspace): wait for it here instead."""
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        while True:
            try:
                if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                    conn.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as error:
                if "locked" not in str(error) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def column(self, name: str, kind: ColumnKind, not_null: bool) -> str:
        return f"{name} NOT NULL" if not_null else name  # untyped, as every store so far was written

    def rowid_column(self) -> str | None:
        return None

    def table_columns(self, conn: Connection, table: str) -> set[str]:
        return {row[1] for row in conn.execute(f"PRAGMA table_info({table})").fetchall()}

    def indexed_by(self, index: str) -> str:
        return f" INDEXED BY {index}"

    def json_text(self, doc: str, path: str) -> str:
        return f"json_extract({doc}, '$.{path}')"

    def json_number(self, value: str) -> str:
        return value

    def json_dump(self, value: str) -> str:
        return value  # json_each hands back objects and arrays as their JSON text

    def json_without(self, doc: str, key: str) -> str:
        return f"json_remove({doc}, '$.{key}')"

    def json_with(self, doc: str, fields: dict[str, str]) -> str:
        pairs = ", ".join(f"'$.{key}', {value}" for key, value in fields.items())
        return f"json_set({doc}, {pairs})"

    def array_items(self, doc: str, path: str, alias: str) -> str:
        return f"json_each({doc}, '$.{path}') {alias}"

    def object_entries(self, doc: str, path: str, alias: str) -> str:
        return f"json_each({doc}, '$.{path}') {alias}"


@lru_cache(maxsize=512)
def _pyformat(sql: str) -> str:
    """`?` placeholders as psycopg's `%s` (no statement of the store has a `?` or `%` of its own)."""
    return sql.replace("%", "%%").replace("?", "%s")


class _PostgresConnection:
    """A psycopg connection (autocommit: the store sends BEGIN/COMMIT itself) behind sqlite3's call shapes."""

    def __init__(self, conn: Any) -> None:
        self.raw = conn

    def execute(self, sql: str, params: Sequence[Any] = (), /) -> Cursor:
        cursor: Cursor = self.raw.execute(_pyformat(sql), params)
        return cursor

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]], /) -> None:
        with self.raw.cursor() as cursor:
            cursor.executemany(_pyformat(sql), rows)

    def close(self) -> None:
        self.raw.close()


_POSTGRES_TYPES = {ColumnKind.TEXT: "text", ColumnKind.INTEGER: "bigint", ColumnKind.BOOLEAN: "boolean",
                   ColumnKind.BLOB: "bytea"}


class PostgresDialect(Dialect):
    begin = "BEGIN"
    ordered_join = "JOIN"  # PostgreSQL plans joins itself (and has no CROSS JOIN ... ON)
    reads_in_process = False

    def __init__(self, location: str | Path) -> None:
        import psycopg  # here: only a PostgreSQL store needs it

        super().__init__(location)
        self._psycopg = psycopg
        self.database_error = psycopg.DatabaseError

    def connect(self) -> Connection:
        return _PostgresConnection(self._psycopg.connect(str(self.location), autocommit=True))

    def column(self, name: str, kind: ColumnKind, not_null: bool) -> str:
        return f"{name} {_POSTGRES_TYPES[kind]}{' NOT NULL' if not_null else ''}"

    def rowid_column(self) -> str | None:
        return "rowid bigint GENERATED ALWAYS AS IDENTITY"

    def table_columns(self, conn: Connection, table: str) -> set[str]:
        sql = "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?"
        return {row[0] for row in conn.execute(sql, (table,)).fetchall()}

    def schema_lock(self) -> str | None:
        return f"SELECT pg_advisory_xact_lock({SCHEMA_LOCK_KEY})"

    def json_text(self, doc: str, path: str) -> str:
        return f"(({doc})::json #>> '{_json_path(path)}')"

    def json_number(self, value: str) -> str:
        return f"(({value}) #>> '{{}}')::float8"

    def json_dump(self, value: str) -> str:
        return f"({value})::text"

    def json_without(self, doc: str, key: str) -> str:
        return f"((({doc})::jsonb - '{key}')::text)"

    def json_with(self, doc: str, fields: dict[str, str]) -> str:
        pairs = ", ".join(f"'{key}', {value}" for key, value in fields.items())
        return f"((({doc})::jsonb || jsonb_build_object({pairs}))::text)"

    def array_items(self, doc: str, path: str, alias: str) -> str:
        return f"json_array_elements(({doc})::json #> '{_json_path(path)}') WITH ORDINALITY AS {alias}(value, key)"

    def object_entries(self, doc: str, path: str, alias: str) -> str:
        return f"json_each(({doc})::json #> '{_json_path(path)}') AS {alias}(key, value)"

    def retryable(self, error: Exception) -> bool:
        errors = self._psycopg.errors
        return isinstance(error, errors.DeadlockDetected | errors.SerializationFailure)

    @contextmanager
    def run_lock(self, name: str) -> Iterator[bool]:
        """Yields whether this process now holds the database-wide lock `name`, a session advisory lock on
        its own connection: the server releases it when the holder's connection
        ends, a killed process's too, so the next run takes it over."""
        conn = self._psycopg.connect(str(self.location), autocommit=True)
        try:
            row = conn.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", (name,)).fetchone()
            yield bool(row and row[0])
        finally:
            conn.close()


def dialect_for(location: str | Path) -> Dialect:
    """The backend of a store location: PostgreSQL for a postgresql:// URL, else a SQLite file."""
    return PostgresDialect(location) if is_postgres_url(location) else SQLiteDialect(location)
