"""The record store: every record of a run in one SQLite file (WAL), plus the LLM cache.

Each record type of `schema` has its own table: the record as JSON (`payload`) plus the key columns and a
few indexed columns to select on. Every write is its own committed transaction (`BEGIN IMMEDIATE` ...
`COMMIT`), so a killed process loses nothing it had written, and writes are idempotent: writing a
record again replaces the row with the same key. WAL and a busy timeout let another process read and
write the same file meanwhile; within a process one connection is shared under a lock, and the async
twins run the locked methods in worker threads.
"""

from __future__ import annotations

import asyncio
import sqlite3
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
from ragcourt.stores.group_commit import GroupCommit, Statement
from ragcourt.stores.queries import RecordQueries
from ragcourt.stores.record_base import R, utc_text
from ragcourt.stores.record_cache import CACHE_TABLE_SQL, RecordCache

BUSY_TIMEOUT_S = 30.0
# SQLite limits the number of bound parameters per statement; id lists are queried in slices of this size.
_IN_SLICE = 500


class StoreVersionError(RuntimeError):
    """The file was written with another schema version than this code reads."""


@dataclass(frozen=True, eq=False)
class _Table:
    """How one record type is stored.

    columns: the columns taken from the record (key columns included), each with its getter;
    given: key columns the record does not carry, supplied by the caller (the run_id of a Sample);
    order_by: how rows of a listing are ordered.
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
    all_columns: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "all_columns", (*self.given, *self.columns, "payload"))

    def create_sql(self) -> str:
        columns = ", ".join(f"{name} NOT NULL" if name in self.key else name for name in self.all_columns)
        return f"CREATE TABLE IF NOT EXISTS {self.name} ({columns}, PRIMARY KEY ({', '.join(self.key)}))"

    def add_column_sql(self, existing: set[str]) -> list[str]:
        """Statements adding and filling the `added` columns an existing table lacks."""
        statements = []
        for name, from_payload in self.added.items():
            if name not in existing:
                statements += [f"ALTER TABLE {self.name} ADD COLUMN {name}",
                               f"UPDATE {self.name} SET {name} = {from_payload}"]
        return statements

    def index_sql(self) -> list[str]:
        statements = []
        for index_columns in self.indexes:
            index_name = f"{self.name}_by_{'_'.join(index_columns)}"
            statements.append(
                f"CREATE INDEX IF NOT EXISTS {index_name} ON {self.name} ({', '.join(index_columns)})"
            )
        return statements

    def upsert_sql(self) -> str:
        names = ", ".join(self.all_columns)
        marks = ", ".join("?" for _ in self.all_columns)
        updates = ", ".join(f"{name} = excluded.{name}" for name in self.all_columns if name not in self.key)
        sql = f"INSERT INTO {self.name} ({names}) VALUES ({marks}) ON CONFLICT ({', '.join(self.key)}) "
        sql += f"DO UPDATE SET {updates}"
        if self.keep_stored_when:
            sql += f" WHERE NOT ({self.keep_stored_when})"
        return sql

    def row(self, record: BaseModel, *given: Any) -> tuple[Any, ...]:
        return (*given, *(get(record) for get in self.columns.values()), record.model_dump_json())



def _per_condition(name: str) -> _Table:
    """A run's records with one row per sample and condition (retrievals, answers)."""
    return _Table(
        name,
        key=("run_id", "sample_id", "condition"),
        columns={"run_id": lambda r: r.run_id, "sample_id": lambda r: r.sample_id,
                 "condition": lambda r: r.condition.key},
    )

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
    Retrieval: _per_condition("retrievals"),
    Answer: _per_condition("answers"),
    Decomposition: _Table(
        "decompositions",
        key=("id",),
        columns={"id": lambda d: d.id, "kind": lambda d: str(d.kind), "edited": lambda d: d.edited},
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
        added={
            "model_id": "json_extract(payload, '$.model_id')",
            "prompt_tokens": "json_extract(payload, '$.usage.prompt_tokens')",
            "completion_tokens": "json_extract(payload, '$.usage.completion_tokens')",
        },
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
    ),
}

_RUN_CHECKS_SQL = (
    (
        "CREATE TABLE IF NOT EXISTS run_checks (run_id NOT NULL, sample_id NOT NULL, check_id NOT NULL, "
        "PRIMARY KEY (run_id, sample_id, check_id))"
    ),
    "CREATE INDEX IF NOT EXISTS run_checks_by_check ON run_checks (check_id)",
)
# The split each sample of a run was evaluated with (decomposers.split_for_sample): the frozen split can be
# edited later, and the run's own figures must not change when its reviews are replayed.
_RUN_SPLITS_SQL = (
    "CREATE TABLE IF NOT EXISTS run_splits (run_id NOT NULL, sample_id NOT NULL, kind NOT NULL, payload NOT NULL, "
    "PRIMARY KEY (run_id, sample_id, kind))"
)
_META_SQL = "CREATE TABLE IF NOT EXISTS meta (key PRIMARY KEY, value NOT NULL)"
_VERSION_KEY = "schema_version"


def _slices(items: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), _IN_SLICE):
        yield items[start : start + _IN_SLICE]


def _marks(items: Sequence[Any]) -> str:
    return ", ".join("?" for _ in items)


class RecordStore(RecordQueries, RecordCache):
    """All records of ragcourt in one SQLite file. Sync methods are thread-safe; `a*` twins are async.

    The read-back aggregates and frames are `RecordQueries` (queries.py), the LLM cache `RecordCache`
    (record_cache.py); both reach the file through the plumbing below.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        # isolation_level=None: we issue BEGIN IMMEDIATE / COMMIT ourselves, one transaction per write.
        self._conn = sqlite3.connect(
            self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
        try:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
            self._create_schema()
        except sqlite3.DatabaseError as error:
            self._conn.close()
            raise sqlite3.DatabaseError(f"cannot open record store {self.path}: {error}") from error
        except BaseException:
            self._conn.close()
            raise
        # Reads have their own connection: under WAL they see every committed write and never wait for
        # the write connection's lock (a read no longer queues behind commits).
        self._read_lock = threading.Lock()
        self._reader = sqlite3.connect(
            self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
        self._reader.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
        self._group = GroupCommit(self._write)

    @classmethod
    def open(cls, path: str | Path) -> RecordStore:
        return cls(path)

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
        with self._transaction() as conn:
            conn.execute(_META_SQL)
            row = conn.execute("SELECT value FROM meta WHERE key = ?", (_VERSION_KEY,)).fetchone()
            if row is not None and int(row[0]) != SCHEMA_VERSION:
                raise StoreVersionError(
                    f"record store {self.path} was written with schema version {row[0]}, "
                    f"but this ragcourt reads schema version {SCHEMA_VERSION}"
                )
            for table in _TABLES.values():
                conn.execute(table.create_sql())
                existing = {row[1] for row in conn.execute(f"PRAGMA table_info({table.name})")}
                for statement in (*table.add_column_sql(existing), *table.index_sql()):
                    conn.execute(statement)
            for statement in (*_RUN_CHECKS_SQL, _RUN_SPLITS_SQL, CACHE_TABLE_SQL):
                conn.execute(statement)
            if row is None:
                conn.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (_VERSION_KEY, SCHEMA_VERSION))

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        # IMMEDIATE takes the write lock up front, so a busy file makes us wait (busy timeout)
        # instead of failing later when a read transaction would have to be upgraded.
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield self._conn
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def _write(self, statements: Iterable[Statement]) -> None:
        with self._lock, self._transaction() as conn:
            for sql, rows in statements:
                conn.executemany(sql, rows)

    def _select(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._read_lock:
            return self._reader.execute(sql, params).fetchall()

    def _records(self, record_type: type[R], sql: str, params: Sequence[Any] = ()) -> list[R]:
        return [record_type.model_validate_json(row[0]) for row in self._select(sql, params)]

    def _listing(self, record_type: type[R], where: dict[str, Any]) -> list[R]:
        table = _TABLES[record_type]  # type: ignore[index]
        conditions = [f"{column} = ?" for column, value in where.items() if value is not None]
        params = [value for value in where.values() if value is not None]
        sql = f"SELECT payload FROM {table.name}"
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
        for record in records:
            table = _TABLES.get(type(record))
            if table is None:
                raise TypeError(f"the record store keeps no {type(record).__name__} records")
            if table.given:
                raise TypeError(f"{type(record).__name__} carries no run_id: write it with put_samples")
            by_table.setdefault(table, []).append(table.row(record))
        return [(table.upsert_sql(), rows) for table, rows in by_table.items()]

    def put_samples(self, run_id: str, samples: Iterable[Sample]) -> None:
        statements = self._samples_statements(run_id, samples)
        if statements:
            self._write(statements)

    def _samples_statements(self, run_id: str, samples: Iterable[Sample]) -> list[Statement]:
        table = _TABLES[Sample]
        rows = [table.row(sample, run_id) for sample in samples]
        return [(table.upsert_sql(), rows)] if rows else []

    def link_checks(self, run_id: str, sample_id: str, check_ids: Iterable[str]) -> None:
        """Record that a run used these (global) checks for a sample."""
        rows = [(run_id, sample_id, check_id) for check_id in check_ids]
        if rows:
            self._write(
                [("INSERT OR IGNORE INTO run_checks (run_id, sample_id, check_id) VALUES (?, ?, ?)", rows)]
            )

    def copy_pinned_splits(self, base_run_id: str, new_run_id: str, sample_ids: Sequence[str]) -> None:
        """The splits `sample_ids` used in the base run become theirs in the new run (copied rows)."""
        statements = [(
            "INSERT OR IGNORE INTO run_splits (run_id, sample_id, kind, payload) SELECT ?, sample_id, kind, payload "
            f"FROM run_splits WHERE run_id = ? AND sample_id IN ({_marks(chunk)})",
            [(new_run_id, base_run_id, *chunk)],
        ) for chunk in _slices(sample_ids)]
        if statements:
            self._write(statements)

    def add_review(self, review: Review) -> None:
        self.put(review)

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

    def sample_questions(self, run_id: str) -> list[tuple[str, str]]:
        """(sample id, question) of every sample of the run in stored order, without reading whole samples."""
        sql = "SELECT sample_id, json_extract(payload, '$.question') FROM samples WHERE run_id = ? ORDER BY rowid"
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
            sql = f"SELECT payload FROM checks WHERE id IN ({_marks(part)})"
            found.update((check.id, check) for check in self._records(Check, sql, part))
        return [found[check_id] for check_id in dict.fromkeys(ids) if check_id in found]

    def checks_for(self, run_id: str, sample_id: str | None = None) -> list[Check]:
        """The checks linked to a run (and sample) with `link_checks`."""
        sql = "SELECT c.payload FROM run_checks l JOIN checks c ON c.id = l.check_id WHERE l.run_id = ?"
        params = [run_id]
        if sample_id is not None:
            sql += " AND l.sample_id = ?"
            params.append(sample_id)
        return self._records(Check, sql + " ORDER BY l.rowid", params)

    def checks_of_samples(self, run_id: str, sample_ids: Sequence[str]) -> list[Check]:
        """The run's checks (as `checks_for` lists them) whose own sample_id is among sample_ids, in link order."""
        rows: list[tuple[int, str]] = []
        for part in _slices(list(dict.fromkeys(sample_ids))):
            # checks first, found by sample, then their links by check id: the planner's own choice reads
            # every link of the run (for each check)
            sql = (f"SELECT l.rowid, c.payload FROM checks c INDEXED BY checks_by_sample_id "
                   f"CROSS JOIN run_checks l INDEXED BY run_checks_by_check "
                   f"ON l.check_id = c.id WHERE c.sample_id IN ({_marks(part)}) AND l.run_id = ?")
            rows.extend(self._select(sql, [*part, run_id]))
        return [Check.model_validate_json(payload) for _, payload in sorted(rows)]

    def get_verdicts(self, check_ids: Sequence[str], judge_id: str | None = None) -> list[Verdict]:
        verdicts: list[Verdict] = []
        for part in _slices(list(dict.fromkeys(check_ids))):
            sql = f"SELECT payload FROM verdicts WHERE check_id IN ({_marks(part)})"
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
            sql = f"SELECT rowid, payload FROM reconciled WHERE run_id = ? AND check_id IN ({_marks(part)})"
            rows.extend(self._select(sql, [run_id, *part]))
        return [Reconciled.model_validate_json(payload) for _, payload in sorted(rows)]

    def pending_escalations(self, run_id: str) -> list[Reconciled]:
        """Escalated checks of the run that no person has decided yet (no review, or only skips)."""
        sql = (
            "SELECT r.payload FROM reconciled r WHERE r.run_id = ? AND r.escalated AND NOT EXISTS "
            "(SELECT 1 FROM reviews v WHERE v.run_id = r.run_id AND v.check_id = r.check_id AND v.action != ?)"
            " ORDER BY r.rowid"
        )
        return self._records(Reconciled, sql, (run_id, str(ReviewAction.SKIP)))

    def latest_reviews(self, run_id: str, check_ids: Sequence[str] | None = None) -> dict[str, Review]:
        """The newest review of each reviewed check of the run (of these checks only), by check id."""
        if check_ids is None:
            reviews = self._listing(Review, {"run_id": run_id})  # ordered oldest first
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
        sql = "SELECT json_remove(payload, '$.alignment_graph') FROM diagnostics WHERE run_id = ? ORDER BY rowid"
        return self._records(SampleDiagnostics, sql, (run_id,))

    def finished_sample_ids(self, run_id: str) -> set[str]:
        """Samples of the run whose diagnostics say OK; failed samples are not finished and run again."""
        sql = "SELECT sample_id FROM diagnostics WHERE run_id = ? AND status = ?"
        return {row[0] for row in self._select(sql, (run_id, str(SampleStatus.OK)))}

    def transient_sample_ids(self, run_id: str, judge_ids: Sequence[str]) -> set[str]:
        """Samples of the run holding a verdict (of one of judge_ids) or an answer that is unscored for a reason a
        later try may mend (TRANSIENT_REASONS): what a resumed run asks again."""
        reasons = sorted(str(reason) for reason in TRANSIENT_REASONS)
        unscored = str(VerdictStatus.UNSCORED)
        found: set[str] = set()
        for part in _slices(list(dict.fromkeys(judge_ids))):
            sql = (f"SELECT DISTINCT l.sample_id FROM verdicts v JOIN run_checks l ON l.check_id = v.check_id "
                   f"WHERE l.run_id = ? AND v.status = ? AND v.judge_id IN ({_marks(part)}) "
                   f"AND json_extract(v.payload, '$.unscored_reason') IN ({_marks(reasons)})")
            found.update(row[0] for row in self._select(sql, [run_id, unscored, *part, *reasons]))
        sql = (f"SELECT DISTINCT sample_id FROM answers WHERE run_id = ? AND json_extract(payload, '$.status') = ? "
               f"AND json_extract(payload, '$.unscored_reason') IN ({_marks(reasons)})")
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
        sql = "SELECT sample_id FROM answers WHERE run_id = ? AND condition = ? AND json_extract(payload, '$.status') = ?"
        return {row[0] for row in self._select(sql, (run_id, condition.key, str(VerdictStatus.OK)))}

    # ------------------------------------------------------------------ async twins

    # Async writes share transactions with whatever else is being written (stores/group_commit.py).

    async def aput(self, *records: Record) -> None:
        statements = self._put_statements(records)
        if statements:
            await self._group.submit(statements)

    async def aput_samples(self, run_id: str, samples: Iterable[Sample]) -> None:
        statements = self._samples_statements(run_id, samples)
        if statements:
            await self._group.submit(statements)

    async def apin_split(self, run_id: str, sample_id: str, split: Decomposition, *, replace: bool = False) -> None:
        """Keep the split a sample of a run is evaluated with; the first one pinned stays, unless `replace`
        (the pinned one was of another text)."""
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        sql = f"{verb} INTO run_splits (run_id, sample_id, kind, payload) VALUES (?, ?, ?, ?)"
        await self._group.submit([(sql, [(run_id, sample_id, str(split.kind), split.model_dump_json())])])

    async def aget_verdicts(self, check_ids: Sequence[str], judge_id: str | None = None) -> list[Verdict]:
        return await asyncio.to_thread(self.get_verdicts, check_ids, judge_id)
