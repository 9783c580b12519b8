"""A run's samples as leased tasks in a PostgreSQL record store, so processes on many machines share a run.

The coordinator registers the run's tasks, one per sample (`ON CONFLICT DO NOTHING`: the same command
again adds nothing; finished-but-failed samples of a resumed run are re-opened). A worker claims a batch
(`FOR UPDATE SKIP LOCKED`: two workers never claim the same task), renews its leases while it works
(`heartbeat`), and completes each sample in one transaction with the sample's final record, so a sample is
completed exactly once: a lease that expired (its worker died or stalled) is claimed by another worker, and
the late holder's completion is then refused and rolled back. Work cut off by a death is done again; every
LLM call it had finished comes from the shared LLM cache, so at most the calls in flight are repeated.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from ragcourt.schema import Record
from ragcourt.stores.records import RecordStore


class TaskState(StrEnum):
    PENDING = "pending"
    LEASED = "leased"
    DONE = "done"


class LeaseLostError(RuntimeError):
    """A worker completed a sample whose lease another worker had taken over: its completion is not counted."""


_TABLE_SQL = (
    "CREATE TABLE IF NOT EXISTS work_tasks (run_id text NOT NULL, sample_id text NOT NULL, position bigint NOT NULL, "
    "state text NOT NULL DEFAULT 'pending', lease_owner text, lease_until timestamptz, attempts integer NOT NULL "
    "DEFAULT 0, completions integer NOT NULL DEFAULT 0, completed_by text, PRIMARY KEY (run_id, sample_id))",
    "CREATE INDEX IF NOT EXISTS work_tasks_by_state ON work_tasks (run_id, state, position)",
    # the order of completions, so a coordinator streams them as they commit (`completed_since`)
    "CREATE SEQUENCE IF NOT EXISTS work_tasks_done_seq",
    "ALTER TABLE work_tasks ADD COLUMN IF NOT EXISTS done_seq bigint",
    "CREATE INDEX IF NOT EXISTS work_tasks_by_done_seq ON work_tasks (run_id, done_seq)",
)
_REGISTER_SQL = (
    "INSERT INTO work_tasks (run_id, sample_id, position) VALUES (?, ?, ?) ON CONFLICT (run_id, sample_id) "
    "DO NOTHING"
)
_REOPEN_SQL = "UPDATE work_tasks SET state = 'pending', lease_owner = NULL WHERE run_id = ? AND sample_id = ? AND state = 'done'"
_CLAIM_SQL = (
    "UPDATE work_tasks t SET state = 'leased', lease_owner = ?, lease_until = now() + make_interval(secs => ?), "
    "attempts = t.attempts + 1 FROM (SELECT sample_id FROM work_tasks WHERE run_id = ? AND (state = 'pending' OR "
    "(state = 'leased' AND lease_until < now())) ORDER BY position LIMIT ? FOR UPDATE SKIP LOCKED) c "
    "WHERE t.run_id = ? AND t.sample_id = c.sample_id RETURNING t.sample_id, t.position"
)
_HEARTBEAT_SQL = (
    "UPDATE work_tasks SET lease_until = now() + make_interval(secs => ?) WHERE run_id = ? AND lease_owner = ? "
    "AND state = 'leased'"
)
_COMPLETE_SQL = (
    "UPDATE work_tasks SET state = 'done', completions = completions + 1, completed_by = lease_owner, "
    "lease_until = NULL, done_seq = nextval('work_tasks_done_seq') WHERE run_id = ? AND sample_id = ? AND lease_owner = ? AND state = 'leased'"
)
_RELEASE_SQL = "UPDATE work_tasks SET state = 'pending', lease_owner = NULL WHERE run_id = ? AND lease_owner = ? AND state = 'leased'"


@dataclass(frozen=True)
class TaskCounts:
    pending: int
    leased: int
    done: int

    @property
    def open(self) -> int:
        return self.pending + self.leased


class WorkQueue:
    """The leased tasks of runs in a PostgreSQL `RecordStore` (its tables are made on first use)."""

    def __init__(self, store: RecordStore, lease_s: float = 30.0) -> None:
        if store.url is None:
            raise ValueError(f"a work queue needs a PostgreSQL store; {store.location} is a SQLite file")
        self.store, self.lease_s = store, lease_s
        with store.transaction() as conn:
            lock = store.dialect.schema_lock()
            if lock:
                conn.execute(lock)
            for statement in _TABLE_SQL:
                conn.execute(statement)

    def register(self, run_id: str, sample_ids: Sequence[str], reopen: Sequence[str] = ()) -> None:
        """One task per sample, in the given order (existing ones are kept); `reopen`: done tasks to do again."""
        with self.store.transaction() as conn:
            conn.executemany(_REGISTER_SQL, [(run_id, sample_id, n) for n, sample_id in enumerate(sample_ids)])
            if reopen:
                conn.executemany(_REOPEN_SQL, [(run_id, sample_id) for sample_id in reopen])

    def claim(self, run_id: str, worker: str, n: int) -> list[str]:
        """Lease up to n open tasks (pending, or leased with the lease run out), first ones first."""
        with self.store.transaction() as conn:
            rows = conn.execute(_CLAIM_SQL, (worker, self.lease_s, run_id, n, run_id)).fetchall()
        return [sample_id for sample_id, _ in sorted(rows, key=lambda row: row[1])]

    def heartbeat(self, run_id: str, worker: str) -> int:
        """Renew the worker's leases; how many it still holds."""
        with self.store.transaction() as conn:
            return int(getattr(conn.execute(_HEARTBEAT_SQL, (self.lease_s, run_id, worker)), "rowcount", 0))

    def complete(self, run_id: str, sample_id: str, worker: str, records: Sequence[Record] = ()) -> None:
        """Mark the task done and write the sample's records, together; raises LeaseLostError (and writes
        nothing) when the worker no longer holds the lease."""
        with self.store.transaction() as conn:
            done = conn.execute(_COMPLETE_SQL, (run_id, sample_id, worker))
            if getattr(done, "rowcount", 0) != 1:
                raise LeaseLostError(f"worker {worker} no longer holds the lease of sample {sample_id} of {run_id}")
            for sql, rows in self.store.record_statements(records):
                conn.executemany(sql, rows)

    def release(self, run_id: str, worker: str) -> None:
        """Give the worker's leases back (a worker stopping early), so others need not wait for them to expire."""
        with self.store.transaction() as conn:
            conn.execute(_RELEASE_SQL, (run_id, worker))

    def counts(self, run_id: str) -> TaskCounts:
        found = dict(self.store.query("SELECT state, COUNT(*) FROM work_tasks WHERE run_id = ? GROUP BY state", (run_id,)))
        return TaskCounts(*(int(found.get(str(state), 0)) for state in TaskState))

    def live_leases(self, run_id: str) -> int:
        """How many tasks are leased with the lease not yet run out: samples a worker is evaluating (its heartbeat
        renews them). A dead or stalled worker's leases run out and stop counting here."""
        rows = self.store.query("SELECT COUNT(*) FROM work_tasks WHERE run_id = ? AND state = 'leased' AND "
                                "lease_until >= now()", (run_id,))
        return int(rows[0][0])

    def completed_since(self, run_id: str, after: int) -> list[tuple[int, str]]:
        """(completion number, sample id) of the tasks completed with a number above `after`, in order. Numbers
        are drawn as a completion is written, so one committing late can appear below the highest already
        seen: a reader asks again from some way below it and skips what it has (cluster.dask_engine)."""
        return [(int(seq), str(sample_id)) for seq, sample_id in self.store.query(
            "SELECT done_seq, sample_id FROM work_tasks WHERE run_id = ? AND state = 'done' AND done_seq > ? "
            "ORDER BY done_seq", (run_id, after))]

    def completions(self, run_id: str) -> dict[str, int]:
        """How many times each task was completed (1 for each done task, by the queue's own guarantee)."""
        return {sample_id: int(n) for sample_id, n in self.store.query(
            "SELECT sample_id, completions FROM work_tasks WHERE run_id = ? ORDER BY position", (run_id,))}
