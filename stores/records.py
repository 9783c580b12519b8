"""The record store: every record of a workspace's runs, plus the LLM cache, in one SQLite file (WAL, the
embedded default) or one PostgreSQL database (a `postgresql://` URL: shared by processes on many machines).

Each record type of `schema` has its own table: the record as JSON (`payload`) plus the key columns and a
few indexed columns to select on. Every write is its own committed transaction, so a killed process loses
nothing it had written, and writes are idempotent: writing a record again replaces the row with the same
key. Other processes read and write the same store meanwhile (SQLite: WAL and a busy timeout); within a
process one write and one read connection are shared under locks, and the async twins run the locked
methods in worker threads. What the two databases spell differently is the store's `Dialect` (dialect.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from pydantic import BaseModel

from ragcourt.schema import (
    SCHEMA_VERSION,
    TRANSIENT_REASONS,
    Answer,
    Check,
    Condition,
    Decomposition,
    Reconciled,
    Record,
    Retrieval,
    Review,
    ReviewAction,
    RunInfo,
    Sample,
    SampleDiagnostics,
    SampleStatus,
    Verdict,
    VerdictStatus,
)
from ragcourt.stores.dialect import (
    ColumnKind,
    Connection,
    Dialect,
    dialect_for,
    is_postgres_url,
    shown_location,
)
from ragcourt.stores.group_commit import GroupCommit, Statement
from ragcourt.stores.queries import RecordQueries
from ragcourt.stores.record_base import R, utc_text
from ragcourt.stores.record_cache import CACHE_COLUMNS, RecordCache, cache_body_sql
from ragcourt.stores.texts import PUT_TEXT_SQL, StoredForm, packed, read_payloads, unpacked

# A deadlocked PostgreSQL write (two workers upserting shared rows, checks or cache keys, in other orders)
# is aborted by the server and tried again this many times.
_WRITE_TRIES = 5
# SQLite limits the number of bound parameters per statement; id lists are queried in slices of this size.
_IN_SLICE = 500


class StoreVersionError(RuntimeError):
    """The file was written with another schema version than this code reads."""


class StoreUnavailableError(RuntimeError):
    """The record store cannot be opened: a PostgreSQL server that does not answer, a file that is no database,
    a folder that cannot be written, no PostgreSQL driver. Its message is one line naming the store (a URL's
    password masked) and the cause."""

    def __init__(self, location: str, cause: object) -> None:
        self.location = location
        # a driver's message may run over several lines (psycopg adds a hint on a line of its own)
        self.cause = "; ".join(line.strip() for line in str(cause).splitlines() if line.strip())
        super().__init__(f"cannot open record store {location}: {self.cause}")


@dataclass(frozen=True, eq=False)
class _Table:
    """How one record type is stored.

    columns: the columns taken from the record (key columns included), each with its getter;
    given: key columns the record does not carry, supplied by the caller (the run_id of a Sample);
    order_by: how rows of a listing are ordered;
    kinds: the columns that are not text (typed where the backend types columns).
    """

    name: str
    key: tuple[str, ...]
    columns: dict[str, Callable[[Any], Any]]
    given: tuple[str, ...] = ()
    order_by: str = "rowid"
    indexes: tuple[tuple[str, ...], ...] = ()
    # Columns added to the table after stores were written with it: each with the SQL expression over the
    # stored payload that fills it in when an existing store is opened (same schema version, no rewrite).
    added: dict[str, str] = field(default_factory=dict)
    # An upsert keeps the stored row when this SQL condition (over the stored row) holds.
    keep_stored_when: str | None = None
    kinds: dict[str, ColumnKind] = field(default_factory=dict)
    # how the payload is written: its long texts shared through the `texts` table, defaults left out (texts.py)
    form: StoredForm = StoredForm()
    all_columns: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "all_columns", (*self.given, *self.columns, "payload"))

    def create_sql(self, dialect: Dialect) -> str:
        columns = [(name, self.kinds.get(name, ColumnKind.TEXT), name in self.key) for name in self.all_columns]
        return _create_sql(dialect, self.name, columns, self.key)

    def add_column_sql(self, existing: set[str], dialect: Dialect) -> list[str]:
        """Statements adding and filling the `added` columns an existing table lacks."""
        statements = []
        for name, path in self.added.items():
            if name not in existing:
                column = dialect.column(name, self.kinds.get(name, ColumnKind.TEXT), not_null=False)
                statements += [f"ALTER TABLE {self.name} ADD COLUMN {column}",
                               f"UPDATE {self.name} SET {name} = {dialect.json_text('payload', path)}"]
        return statements

    def index_sql(self) -> list[str]:
        statements = []
        for index_columns in self.indexes:
            index_name = f"{self.name}_by_{'_'.join(index_columns)}"
            statements.append(
                f"CREATE INDEX IF NOT EXISTS {index_name} ON {self.name} ({', '.join(index_columns)})"
            )
        return statements

    def payload_sql(self, dialect: Dialect, alias: str = "") -> str:
        """The expression reading the whole payload: the fields kept in columns alone put back."""
        prefix = f"{alias}." if alias else ""
        if not self.form.in_columns:
            return f"{prefix}payload"
        return dialect.json_with(f"{prefix}payload", {name: f"{prefix}{name}" for name in self.form.in_columns})

    def upsert_sql(self) -> str:
        names = ", ".join(self.all_columns)
        marks = ", ".join("?" for _ in self.all_columns)
        updates = ", ".join(f"{name} = excluded.{name}" for name in self.all_columns if name not in self.key)
        sql = f"INSERT INTO {self.name} ({names}) VALUES ({marks}) ON CONFLICT ({', '.join(self.key)}) "
        sql += f"DO UPDATE SET {updates}"
        if self.keep_stored_when:
            sql += f" WHERE NOT ({self.keep_stored_when})"
        return sql

    def row(self, record: BaseModel, *given: Any) -> tuple[tuple[Any, ...], dict[str, str]]:
        """The row to write, and the texts (hash -> text) its payload refers to."""
        texts: dict[str, str] = {}
        if self.form == StoredForm():
            payload = record.model_dump_json()
        else:
            payload, texts = self.form.encode(record)
        return (*given, *(get(record) for get in self.columns.values()), payload), texts


def _create_sql(dialect: Dialect, name: str, columns: Sequence[tuple[str, ColumnKind, bool]],
                key: Sequence[str]) -> str:
    """CREATE TABLE IF NOT EXISTS with (name, kind, not null) columns, the insertion-order `rowid` where the
    backend has none of its own, and the primary key."""
    defined = [dialect.column(*column) for column in columns]
    rowid = dialect.rowid_column()
    return (f"CREATE TABLE IF NOT EXISTS {name} ({', '.join([*defined, *([rowid] if rowid else [])])}, "
            f"PRIMARY KEY ({', '.join(key)}))")



def _per_condition(name: str, form: StoredForm) -> _Table:
    """A run's records with one row per sample and condition (retrievals, answers)."""
    return _Table(
        name,
        key=("run_id", "sample_id", "condition"),
        columns={"run_id": lambda r: r.run_id, "sample_id": lambda r: r.sample_id,
                 "condition": lambda r: r.condition.key},
        form=form,
    )


# A split's text and items (the items of a sentence split are the text's own sentences: often the text itself);
# the same form in `run_splits`, which pins a copy of the split to each sample of a run.
SPLIT_FORM = StoredForm(shared=("source_text", "items.*"), compact=True)

_TABLES: dict[type[Record], _Table] = {
    RunInfo: _Table(
        "runs",
        key=("run_id",),
        columns={"run_id": lambda r: r.run_id, "created_at": lambda r: utc_text(r.created_at)},
        order_by="created_at, run_id",
    ),
    Sample: _Table(
        "samples", key=("run_id", "sample_id"), columns={"sample_id": lambda s: s.id}, given=("run_id",)
    ),
    Retrieval: _per_condition("retrievals", StoredForm(shared=("chunks.*.text",), compact=True)),
    # not compact: SQL reads an answer's status and text from its payload (an absent default would read NULL)
    Answer: _per_condition("answers", StoredForm(shared=("text", "raw_output"))),
    Decomposition: _Table(
        "decompositions",
        key=("id",),
        columns={"id": lambda d: d.id, "kind": lambda d: str(d.kind), "edited": lambda d: d.edited},
        kinds={"edited": ColumnKind.BOOLEAN},
        form=SPLIT_FORM,
        # Frozen: the first stored split of a text stays; only a person's edit replaces it. Two processes that
        # split the same reference at once thus both end up with the first one (decomposers.frozen_split).
        keep_stored_when="NOT excluded.edited",
    ),
    Check: _Table(
        "checks",
        key=("id",),
        columns={"id": lambda c: c.id, "kind": lambda c: str(c.kind), "sample_id": lambda c: c.sample_id},
        # (id, sample_id) lets the run's checks be grouped by sample from the index alone; (sample_id)
        # finds a few samples' checks for the report's drill-down
        indexes=(("id", "sample_id"), ("sample_id",)),
        form=StoredForm(shared=("subject_text", "target_text", "question", "reference", "evidence"), compact=True,
                        in_columns=("id", "kind", "sample_id")),
    ),
    Verdict: _Table(
        "verdicts",
        key=("check_id", "judge_id"),
        columns={
            "check_id": lambda v: v.check_id,
            "judge_id": lambda v: v.judge_id,
            "status": lambda v: str(v.status),
            "model_id": lambda v: v.model_id,
            "prompt_tokens": lambda v: v.usage.prompt_tokens,
            "completion_tokens": lambda v: v.usage.completion_tokens,
        },
        # the report's tallies (verdict_tallies) read the first index alone, never the payloads; the second
        # answers judge_model_ids
        indexes=(("check_id", "judge_id", "status", "model_id", "prompt_tokens", "completion_tokens"),
                 ("judge_id", "model_id")),
        added={"model_id": "model_id", "prompt_tokens": "usage.prompt_tokens",
               "completion_tokens": "usage.completion_tokens"},
        kinds={"prompt_tokens": ColumnKind.INTEGER, "completion_tokens": ColumnKind.INTEGER},
        # compact: the one field SQL reads from a verdict's payload, unscored_reason, defaults to null
        form=StoredForm(shared=("rationale", "raw_output"), compact=True,
                        in_columns=("check_id", "judge_id", "status", "model_id")),
    ),
    Reconciled: _Table(
        "reconciled",
        key=("run_id", "check_id"),
        columns={
            "run_id": lambda r: r.run_id,
            "check_id": lambda r: r.check_id,
            "sample_id": lambda r: r.sample_id,
            "escalated": lambda r: r.escalated,
        },
        indexes=(("run_id", "sample_id"), ("run_id", "escalated")),
        kinds={"escalated": ColumnKind.BOOLEAN},
        form=StoredForm(compact=True, in_columns=("run_id", "check_id", "sample_id")),
    ),
    Review: _Table(
        "reviews",
        key=("run_id", "check_id", "created_at"),
        columns={
            "run_id": lambda r: r.run_id,
            "check_id": lambda r: r.check_id,
            "created_at": lambda r: utc_text(r.created_at),
            "action": lambda r: str(r.action),
        },
        order_by="created_at",
    ),
    SampleDiagnostics: _Table(
        "diagnostics",
        key=("run_id", "sample_id"),
        columns={
            "run_id": lambda d: d.run_id,
            "sample_id": lambda d: d.sample_id,
            "status": lambda d: str(d.status),
        },
        # not compact: SQL reads the metrics' and elements' fields; the graph (most of the record, with the
        # chunks' texts) is shared whole, compressed; a query leaving it out (get_diagnostics_without_graphs)
        # reads no text
        form=StoredForm(shared=("alignment_graph",)),
    ),
}

def _text_columns(*names: str) -> list[tuple[str, ColumnKind, bool]]:
    return [(name, ColumnKind.TEXT, True) for name in names]


def _plain_tables_sql(dialect: Dialect) -> list[str]:
    """The tables that hold no records: the run-check links, pinned splits, the LLM cache."""
    return [
        _create_sql(dialect, "run_checks", _text_columns("run_id", "sample_id", "check_id"),
                    ("run_id", "sample_id", "check_id")),
        "CREATE INDEX IF NOT EXISTS run_checks_by_check ON run_checks (check_id)",
        # The split each sample of a run was evaluated with (decomposers.split_for_sample): the frozen split can
        # be edited later, and the run's own figures must not change when its reviews are replayed.
        _create_sql(dialect, "run_splits", _text_columns("run_id", "sample_id", "kind", "payload"),
                    ("run_id", "sample_id", "kind")),
        _create_sql(dialect, "llm_cache", _text_columns(*CACHE_COLUMNS), ("key",)),
        _create_sql(dialect, "texts", [("hash", ColumnKind.TEXT, True), ("body", ColumnKind.BLOB, True)], ("hash",)),
    ]


_VERSION_KEY = "schema_version"
# Versions a store is opened from and moved to SCHEMA_VERSION: 1 wrote every text inline and replies plain (the
# version moves so that a ragcourt reading only version 1 refuses a store whose payloads refer to shared texts).
_MIGRATED_VERSIONS = frozenset({1})
_LINK_CHECK_SQL = "INSERT INTO run_checks (run_id, sample_id, check_id) VALUES (?, ?, ?) ON CONFLICT DO NOTHING"
_PIN_SPLIT_SQL = "INSERT INTO run_splits (run_id, sample_id, kind, payload) VALUES (?, ?, ?, ?) ON CONFLICT "


def _slices(items: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), _IN_SLICE):
        yield items[start : start + _IN_SLICE]


def _text_statements(texts: dict[str, str]) -> list[Statement]:
    return [(PUT_TEXT_SQL, [(digest, packed(text)) for digest, text in texts.items()])] if texts else []


def _link_statements(run_id: str, sample_id: str, check_ids: Iterable[str]) -> list[Statement]:
    rows = [(run_id, sample_id, check_id) for check_id in check_ids]
    return [(_LINK_CHECK_SQL, rows)] if rows else []


def _marks(items: Sequence[Any]) -> str:
    return ", ".join("?" for _ in items)


class RecordStore(RecordQueries, RecordCache):
    """All records of ragcourt in one SQLite file or PostgreSQL database. Sync methods are thread-safe; `a*`
    twins are async.

    `location`: a file path (SQLite) or a `postgresql://` URL (the database, and the schema its search_path
    names, hold one workspace's store). The read-back aggregates and frames are `RecordQueries` (queries.py),
    the LLM cache `RecordCache` (record_cache.py); both reach the database through the plumbing below.
    """

    def __init__(self, location: str | Path) -> None:
        # path: the SQLite file (None for PostgreSQL); url: the PostgreSQL URL (None for SQLite)
        self.url = str(location) if is_postgres_url(location) else None
        self.path = None if self.url else Path(location)
        try:
            if self.path is not None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            self._dialect = dialect_for(self.url or Path(location))
        except OSError as error:
            raise StoreUnavailableError(shown_location(location), error.strerror or error) from error
        except ImportError as error:  # psycopg, imported by the PostgreSQL dialect only
            raise StoreUnavailableError(shown_location(location), f"a PostgreSQL store needs psycopg ({error}): "
                                        "pip install 'ragcourt[postgres]'") from error
        self._lock = threading.Lock()
        try:
            self._conn = self._dialect.connect()
        except self._dialect.database_error as error:
            raise StoreUnavailableError(self.location, error) from error
        try:
            self._create_schema()
        except self._dialect.database_error as error:
            self._conn.close()
            raise StoreUnavailableError(self.location, error) from error
        except BaseException:
            self._conn.close()
            raise
        # Reads have their own connection: they see every committed write (under WAL in SQLite) and never
        # wait for the write connection's lock (a read no longer queues behind commits).
        self._read_lock = threading.Lock()
        self._reader = self._dialect.connect()
        self._group = GroupCommit(self._write)

    @classmethod
    def open(cls, location: str | Path) -> RecordStore:
        return cls(location)

    @property
    def location(self) -> str:
        """The file or the URL (its password masked), for messages."""
        return self._dialect.shown

    @property
    def dialect(self) -> Dialect:
        return self._dialect

    def close(self) -> None:
        with self._lock, self._read_lock:
            self._conn.close()
            self._reader.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # ------------------------------------------------------------------ plumbing

    def _create_schema(self) -> None:
        dialect = self._dialect
        with self._transaction() as conn:
            lock = dialect.schema_lock()
            if lock:
                conn.execute(lock)
            conn.execute(_create_sql(dialect, "meta", _text_columns("key", "value"), ("key",)))
            row = conn.execute("SELECT value FROM meta WHERE key = ?", (_VERSION_KEY,)).fetchone()
            if row is not None and int(row[0]) != SCHEMA_VERSION and int(row[0]) not in _MIGRATED_VERSIONS:
                raise StoreVersionError(
                    f"record store {self.location} was written with schema version {row[0]}, "
                    f"but this ragcourt reads schema version {SCHEMA_VERSION}"
                )
            for table in _TABLES.values():
                conn.execute(table.create_sql(dialect))
                existing = dialect.table_columns(conn, table.name)
                for statement in (*table.add_column_sql(existing, dialect), *table.index_sql()):
                    conn.execute(statement)
            for statement in _plain_tables_sql(dialect):
                conn.execute(statement)
            for statement in cache_body_sql(dialect.table_columns(conn, "llm_cache"), dialect):
                conn.execute(statement)
            if row is None:
                conn.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (_VERSION_KEY, str(SCHEMA_VERSION)))
            elif int(row[0]) in _MIGRATED_VERSIONS:
                # what an older store lacks, made above; its rows read as written (texts inline, replies plain)
                conn.execute("UPDATE meta SET value = ? WHERE key = ?", (str(SCHEMA_VERSION), _VERSION_KEY))

    @contextmanager
    def _transaction(self) -> Iterator[Connection]:
        self._conn.execute(self._dialect.begin)
        try:
            yield self._conn
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """The write connection in one transaction of its own (committed at the end of the block, rolled back
        if it raises), for statements that must commit together with others (stores/work_queue.py)."""
        with self._lock, self._transaction() as conn:
            yield conn

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """The rows of a read-only query (`?` placeholders) on the read connection."""
        return self._select(sql, params)

    def record_statements(self, records: Sequence[Record]) -> list[Statement]:
        """The upserts that `put(*records)` runs, to run in a `transaction()`."""
        return self._put_statements(records)

    def _write(self, statements: Iterable[Statement]) -> None:
        statements = list(statements)
        for attempt in range(_WRITE_TRIES):
            try:
                with self._lock, self._transaction() as conn:
                    for sql, rows in statements:
                        conn.executemany(sql, rows)
                return
            except Exception as error:
                if attempt == _WRITE_TRIES - 1 or not self._dialect.retryable(error):
                    raise

    def _select(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._read_lock:
            return self._reader.execute(sql, params).fetchall()

    def _records(self, record_type: type[R], sql: str, params: Sequence[Any] = ()) -> list[R]:
        return self._parsed(record_type, [row[0] for row in self._select(sql, params)])

    def _parsed(self, record_type: type[R], payloads: Sequence[str]) -> list[R]:
        """The records of stored payloads, their shared texts put back (stores/texts.py)."""
        return [record_type.model_validate_json(data) if isinstance(data, str) else record_type.model_validate(data)
                for data in read_payloads(payloads, self._texts)]

    def _payload_sql(self, record_type: type[BaseModel], alias: str = "") -> str:
        return _TABLES[record_type].payload_sql(self._dialect, alias)  # type: ignore[index]

    def _texts(self, hashes: Sequence[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        for part in _slices(hashes):
            rows = self._select(f"SELECT hash, body FROM texts WHERE hash IN ({_marks(part)})", part)
            found.update((digest, unpacked(body)) for digest, body in rows)
        return found

    def _listing(self, record_type: type[R], where: dict[str, Any]) -> list[R]:
        table = _TABLES[record_type]  # type: ignore[index]
        conditions = [f"{column} = ?" for column, value in where.items() if value is not None]
        params = [value for value in where.values() if value is not None]
        sql = f"SELECT {table.payload_sql(self._dialect)} FROM {table.name}"
        if conditions:
            sql += " WHERE " + " AND ".join(conditions)
        return self._records(record_type, f"{sql} ORDER BY {table.order_by}", params)

    def _keeps(self, record_type: type[BaseModel]) -> bool:
        return record_type in _TABLES

    # ------------------------------------------------------------------ writes

    def put(self, *records: Record) -> None:
        """Write records that carry their own key fields, all in one transaction."""
        statements = self._put_statements(records)
        if statements:
            self._write(statements)

    def _put_statements(self, records: Sequence[Record]) -> list[Statement]:
        by_table: dict[_Table, list[tuple[Any, ...]]] = {}
        texts: dict[str, str] = {}
        for record in records:
            table = _TABLES.get(type(record))
            if table is None:
                raise TypeError(f"the record store keeps no {type(record).__name__} records")
            if table.given:
                raise TypeError(f"{type(record).__name__} carries no run_id: write it with put_samples")
            row, its_texts = table.row(record)
            by_table.setdefault(table, []).append(row)
            texts.update(its_texts)
        return [*_text_statements(texts), *((table.upsert_sql(), rows) for table, rows in by_table.items())]

    def put_samples(self, run_id: str, samples: Iterable[Sample]) -> None:
        statements = self._samples_statements(run_id, samples)
        if statements:
            self._write(statements)

    def _samples_statements(self, run_id: str, samples: Iterable[Sample]) -> list[Statement]:
        table = _TABLES[Sample]
        rows = [table.row(sample, run_id)[0] for sample in samples]  # a sample's payload keeps its texts
        return [(table.upsert_sql(), rows)] if rows else []

    def link_checks(self, run_id: str, sample_id: str, check_ids: Iterable[str]) -> None:
        """Record that a run used these (global) checks for a sample."""
        statements = _link_statements(run_id, sample_id, check_ids)
        if statements:
            self._write(statements)

    def copy_pinned_splits(self, base_run_id: str, new_run_id: str, sample_ids: Sequence[str]) -> None:
        """The splits `sample_ids` used in the base run become theirs in the new run (copied rows)."""
        statements = [(
            "INSERT INTO run_splits (run_id, sample_id, kind, payload) SELECT ?, sample_id, kind, payload "
            f"FROM run_splits WHERE run_id = ? AND sample_id IN ({_marks(chunk)}) ON CONFLICT DO NOTHING",
            [(new_run_id, base_run_id, *chunk)],
        ) for chunk in _slices(sample_ids)]
        if statements:
            self._write(statements)

    def add_review(self, review: Review) -> None:
        self.put(review)

    def drop_reviews(self, run_id: str, check_ids: Sequence[str]) -> None:
        """Remove the run's reviews of these checks (a re-run's carried decisions on checks it no longer has)."""
        statements = [(f"DELETE FROM reviews WHERE run_id = ? AND check_id IN ({_marks(chunk)})", [(run_id, *chunk)])
                      for chunk in _slices(list(dict.fromkeys(check_ids)))]
        if statements:
            self._write(statements)

    # ------------------------------------------------------------------ reads

    def get_run(self, run_id: str) -> RunInfo | None:
        runs = self._listing(RunInfo, {"run_id": run_id})
        return runs[0] if runs else None

    def list_runs(self) -> list[RunInfo]:
        return self._listing(RunInfo, {})

    def get_samples(self, run_id: str, sample_ids: Sequence[str] | None = None) -> list[Sample]:
        """The run's samples in stored order; with sample_ids, only those (still in stored order)."""
        if sample_ids is None:
            return self._listing(Sample, {"run_id": run_id})
        rows: list[tuple[int, str]] = []
        for part in _slices(list(dict.fromkeys(sample_ids))):
            sql = f"SELECT rowid, payload FROM samples WHERE run_id = ? AND sample_id IN ({_marks(part)})"
            rows.extend(self._select(sql, [run_id, *part]))
        return [Sample.model_validate_json(payload) for _, payload in sorted(rows)]

    def sample_payloads(self, run_id: str, sample_ids: Sequence[str]) -> dict[str, str]:
        """Sample id -> the stored JSON of those of `sample_ids` the run holds, unparsed: comparing it with a
        sample's own JSON tells an unchanged sample without building a record."""
        out: dict[str, str] = {}
        for part in _slices(list(dict.fromkeys(sample_ids))):
            sql = f"SELECT sample_id, payload FROM samples WHERE run_id = ? AND sample_id IN ({_marks(part)})"
            out.update(self._select(sql, [run_id, *part]))
        return out

    def sample_questions(self, run_id: str) -> list[tuple[str, str]]:
        """(sample id, question) of every sample of the run in stored order, without reading whole samples."""
        question = self._dialect.json_text("payload", "question")
        sql = f"SELECT sample_id, {question} FROM samples WHERE run_id = ? ORDER BY rowid"
        return [(sample_id, question) for sample_id, question in self._select(sql, (run_id,))]

    def get_retrievals(self, run_id: str, sample_id: str | None = None) -> list[Retrieval]:
        return self._listing(Retrieval, {"run_id": run_id, "sample_id": sample_id})

    def get_answers(self, run_id: str, sample_id: str | None = None) -> list[Answer]:
        return self._listing(Answer, {"run_id": run_id, "sample_id": sample_id})

    def get_decomposition(self, id: str) -> Decomposition | None:
        found = self._listing(Decomposition, {"id": id})
        return found[0] if found else None

    def pinned_splits(self, run_id: str, sample_id: str) -> list[Decomposition]:
        return self._records(Decomposition, "SELECT payload FROM run_splits WHERE run_id = ? AND sample_id = ? "
                             "ORDER BY kind", (run_id, sample_id))

    def pinned_sample_ids(self, run_id: str) -> set[str]:
        return {row[0] for row in self._select("SELECT DISTINCT sample_id FROM run_splits WHERE run_id = ?", (run_id,))}

    def get_checks(self, ids: Sequence[str]) -> list[Check]:
        """The stored checks among ids, in the order of ids (unknown ids are left out)."""
        found: dict[str, Check] = {}
        for part in _slices(list(dict.fromkeys(ids))):
            sql = f"SELECT {self._payload_sql(Check)} FROM checks WHERE id IN ({_marks(part)})"
            found.update((check.id, check) for check in self._records(Check, sql, part))
        return [found[check_id] for check_id in dict.fromkeys(ids) if check_id in found]

    def checks_for(self, run_id: str, sample_id: str | None = None) -> list[Check]:
        """The checks linked to a run (and sample) with `link_checks`."""
        sql = f"SELECT {self._payload_sql(Check, 'c')} FROM run_checks l JOIN checks c ON c.id = l.check_id WHERE l.run_id = ?"
        params = [run_id]
        if sample_id is not None:
            sql += " AND l.sample_id = ?"
            params.append(sample_id)
        return self._records(Check, sql + " ORDER BY l.rowid", params)

    def linked_check_ids(self, run_id: str, check_ids: Sequence[str]) -> set[str]:
        """Those of `check_ids` linked to the run (read from the links alone: no check is parsed)."""
        found: set[str] = set()
        for part in _slices(list(dict.fromkeys(check_ids))):
            sql = f"SELECT DISTINCT check_id FROM run_checks WHERE run_id = ? AND check_id IN ({_marks(part)})"
            found.update(row[0] for row in self._select(sql, [run_id, *part]))
        return found

    def checks_of_samples(self, run_id: str, sample_ids: Sequence[str]) -> list[Check]:
        """The run's checks (as `checks_for` lists them) whose own sample_id is among sample_ids, in link order."""
        rows: list[tuple[int, str]] = []
        for part in _slices(list(dict.fromkeys(sample_ids))):
            # checks first, found by sample, then their links by check id: the planner's own choice reads
            # every link of the run (for each check)
            dialect = self._dialect
            sql = (f"SELECT l.rowid, {self._payload_sql(Check, 'c')} FROM checks c{dialect.indexed_by('checks_by_sample_id')} "
                   f"{dialect.ordered_join} run_checks l{dialect.indexed_by('run_checks_by_check')} "
                   f"ON l.check_id = c.id WHERE c.sample_id IN ({_marks(part)}) AND l.run_id = ?")
            rows.extend(self._select(sql, [*part, run_id]))
        return self._parsed(Check, [payload for _, payload in sorted(rows)])

    def get_verdicts(self, check_ids: Sequence[str], judge_id: str | None = None) -> list[Verdict]:
        verdicts: list[Verdict] = []
        for part in _slices(list(dict.fromkeys(check_ids))):
            sql = f"SELECT {self._payload_sql(Verdict)} FROM verdicts WHERE check_id IN ({_marks(part)})"
            params = list(part)
            if judge_id is not None:
                sql += " AND judge_id = ?"
                params.append(judge_id)
            verdicts.extend(self._records(Verdict, sql + " ORDER BY rowid", params))
        return verdicts

    def get_reconciled(self, run_id: str, sample_id: str | None = None) -> list[Reconciled]:
        return self._listing(Reconciled, {"run_id": run_id, "sample_id": sample_id})

    def reconciled_of_checks(self, run_id: str, check_ids: Sequence[str]) -> list[Reconciled]:
        """The run's reconciled records of these checks (unknown ids are left out), in stored order."""
        rows: list[tuple[int, str]] = []
        for part in _slices(list(dict.fromkeys(check_ids))):
            sql = (f"SELECT rowid, {self._payload_sql(Reconciled)} FROM reconciled WHERE run_id = ? "
                   f"AND check_id IN ({_marks(part)})")
            rows.extend(self._select(sql, [run_id, *part]))
        return self._parsed(Reconciled, [payload for _, payload in sorted(rows)])

    def pending_escalations(self, run_id: str) -> list[Reconciled]:
        """Escalated checks of the run that no person has decided yet (no review, or only skips)."""
        sql = (
            f"SELECT {self._payload_sql(Reconciled, 'r')} FROM reconciled r WHERE r.run_id = ? AND r.escalated AND NOT EXISTS "
            "(SELECT 1 FROM reviews v WHERE v.run_id = r.run_id AND v.check_id = r.check_id AND v.action != ?)"
            " ORDER BY r.rowid"
        )
        return self._records(Reconciled, sql, (run_id, str(ReviewAction.SKIP)))

    def get_reviews(self, run_id: str) -> list[Review]:
        """Every review of the run, oldest first: each check's whole history, skips included."""
        return self._listing(Review, {"run_id": run_id})

    def latest_reviews(self, run_id: str, check_ids: Sequence[str] | None = None) -> dict[str, Review]:
        """The newest review of each reviewed check of the run (of these checks only), by check id."""
        if check_ids is None:
            reviews = self.get_reviews(run_id)
        else:
            reviews = []
            for part in _slices(list(dict.fromkeys(check_ids))):
                sql = f"SELECT payload FROM reviews WHERE run_id = ? AND check_id IN ({_marks(part)})"
                reviews.extend(self._records(Review, sql, [run_id, *part]))
            reviews.sort(key=lambda review: review.created_at)
        latest: dict[str, Review] = {}
        for review in reviews:
            latest[review.check_id] = review
        return latest

    def get_diagnostics(self, run_id: str, sample_id: str | None = None) -> list[SampleDiagnostics]:
        return self._listing(SampleDiagnostics, {"run_id": run_id, "sample_id": sample_id})

    def get_diagnostics_without_graphs(self, run_id: str) -> list[SampleDiagnostics]:
        """get_diagnostics(run_id) with alignment_graph None: the graphs are most of a diagnostics record
        (about 450 MB as Python objects for 10,000 samples) and only a report's drill-down draws them."""
        without = self._dialect.json_without("payload", "alignment_graph")
        sql = f"SELECT {without} FROM diagnostics WHERE run_id = ? ORDER BY rowid"
        return self._records(SampleDiagnostics, sql, (run_id,))

    def diagnostics_of_samples(self, run_id: str, sample_ids: Sequence[str]) -> list[SampleDiagnostics]:
        """The diagnostics of `sample_ids` in the run (ordered as get_diagnostics within each slice of ids): a
        resumed run reads the finished samples it shows a batch at a time, not every record with its graph at once."""
        found: list[SampleDiagnostics] = []
        for part in _slices(list(dict.fromkeys(sample_ids))):
            sql = (f"SELECT payload FROM diagnostics WHERE run_id = ? AND sample_id IN ({_marks(part)}) "
                   f"ORDER BY {_TABLES[SampleDiagnostics].order_by}")
            found.extend(self._records(SampleDiagnostics, sql, [run_id, *part]))
        return found

    def finished_sample_ids(self, run_id: str) -> set[str]:
        """Samples of the run whose diagnostics say OK; failed samples are not finished and run again."""
        sql = "SELECT sample_id FROM diagnostics WHERE run_id = ? AND status = ?"
        return {row[0] for row in self._select(sql, (run_id, str(SampleStatus.OK)))}

    def transient_sample_ids(self, run_id: str, judge_ids: Sequence[str]) -> set[str]:
        """Samples of the run holding a verdict (of one of judge_ids) or an answer that is unscored for a reason a
        later try may mend (TRANSIENT_REASONS): what a resumed run asks again."""
        reasons = sorted(str(reason) for reason in TRANSIENT_REASONS)
        unscored = str(VerdictStatus.UNSCORED)
        json_text = self._dialect.json_text
        found: set[str] = set()
        for part in _slices(list(dict.fromkeys(judge_ids))):
            sql = (f"SELECT DISTINCT l.sample_id FROM verdicts v JOIN run_checks l ON l.check_id = v.check_id "
                   f"WHERE l.run_id = ? AND v.status = ? AND v.judge_id IN ({_marks(part)}) "
                   f"AND {json_text('v.payload', 'unscored_reason')} IN ({_marks(reasons)})")
            found.update(row[0] for row in self._select(sql, [run_id, unscored, *part, *reasons]))
        sql = (f"SELECT DISTINCT sample_id FROM answers WHERE run_id = ? AND {json_text('payload', 'status')} = ? "
               f"AND {json_text('payload', 'unscored_reason')} IN ({_marks(reasons)})")
        found.update(row[0] for row in self._select(sql, [run_id, unscored, *reasons]))
        return found

    def pinned_split_kinds(self, run_id: str) -> dict[str, set[str]]:
        """The kinds of split (`DecompositionKind` values) pinned per sample of the run: each one it was given."""
        kinds: dict[str, set[str]] = {}
        for sample_id, kind in self._select("SELECT sample_id, kind FROM run_splits WHERE run_id = ?", (run_id,)):
            kinds.setdefault(sample_id, set()).add(kind)
        return kinds

    def answered_sample_ids(self, run_id: str, condition: Condition) -> set[str]:
        """Samples of the run with a scored answer under `condition`."""
        status = self._dialect.json_text("payload", "status")
        sql = f"SELECT sample_id FROM answers WHERE run_id = ? AND condition = ? AND {status} = ?"
        return {row[0] for row in self._select(sql, (run_id, condition.key, str(VerdictStatus.OK)))}

    # ------------------------------------------------------------------ async twins

    # Async writes share transactions with whatever else is being written (stores/group_commit.py).

    async def aput(self, *records: Record) -> None:
        statements = self._put_statements(records)
        if statements:
            await self._group.submit(statements)

    async def alink_checks(self, run_id: str, sample_id: str, check_ids: Iterable[str]) -> None:
        statements = _link_statements(run_id, sample_id, check_ids)
        if statements:
            await self._group.submit(statements)

    async def aput_checks(self, run_id: str, sample_id: str, checks: Sequence[Check]) -> None:
        """Store checks and link them to a run's sample, in one transaction (shared with other writes)."""
        statements = self._put_statements(checks) + _link_statements(run_id, sample_id, [c.id for c in checks])
        if statements:
            await self._group.submit(statements)

    async def aput_samples(self, run_id: str, samples: Iterable[Sample]) -> None:
        statements = self._samples_statements(run_id, samples)
        if statements:
            await self._group.submit(statements)

    async def apin_split(self, run_id: str, sample_id: str, split: Decomposition, *, replace: bool = False) -> None:
        """Keep the split a sample of a run is evaluated with; the first one pinned stays, unless `replace`
        (the pinned one was of another text)."""
        sql = _PIN_SPLIT_SQL + ("(run_id, sample_id, kind) DO UPDATE SET payload = excluded.payload" if replace
                                else "DO NOTHING")
        payload, texts = SPLIT_FORM.encode(split)
        await self._group.submit([*_text_statements(texts), (sql, [(run_id, sample_id, str(split.kind), payload)])])

    async def aget_verdicts(self, check_ids: Sequence[str], judge_id: str | None = None) -> list[Verdict]:
        return await self.aread(self.get_verdicts, check_ids, judge_id)
