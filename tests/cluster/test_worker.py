"""Distributed runs through the PostgreSQL work queue: leases, take-over, exactly-once completion, kill -9.

The worker processes are tests/fixtures/graph/drain_worker.py (two logging lexical judges, each call logged
before it works, then a short sleep), the reference is the same run in one process on SQLite (run_many.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fixtures import FIXTURES

DATA = FIXTURES / "graph"
sys.path.insert(0, str(DATA))

import run_many
from graph_fixtures import InstrumentedJudge, make_context, many_samples

from ragcourt.cluster.worker import adrain, queue_run
from ragcourt.judging import BaselineJudge, BaselineRule
from ragcourt.runs.runner import RunLockedError, Runner
from ragcourt.schema import Sample, SampleDiagnostics
from ragcourt.stores.records import RecordStore
from ragcourt.stores.work_queue import LeaseLostError, TaskCounts, WorkQueue

RUN_ID = "run-queue"
N_SAMPLES = 12
DELAY_S = 0.2  # per judge call: a batch of 3 samples takes about 1 s, a window to kill the worker in
LEASE_S = 1.5


def comparable(d: SampleDiagnostics) -> dict:
    """Everything a run decides about a sample, without timestamps and usage."""
    return {
        "status": d.status, "metrics": [(m.name, m.value, m.na_reason, m.n, m.n_unscored, m.n_escalated)
                                        for m in d.metrics],
        "elements": [(e.text, e.in_context, e.in_loose_context, e.in_answer, e.status) for e in d.elements],
        "unsupported": d.unsupported_claims, "uncovered": d.uncovered_subqueries,
        "escalations": sorted(d.escalations), "n_checks": d.n_checks, "n_unscored": d.n_unscored,
    }


def log_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_claims_are_exclusive_leases_expire_and_a_late_completion_is_refused(postgres_store_url: str) -> None:
    with RecordStore(postgres_store_url) as store:
        queue = WorkQueue(store, lease_s=0.3)
        queue.register("r", ["a", "b", "c", "d", "e"])
        queue.register("r", ["a", "b", "c", "d", "e"])  # the same command again adds nothing
        assert queue.counts("r") == TaskCounts(pending=5, leased=0, done=0)
        first, second = queue.claim("r", "w1", 2), queue.claim("r", "w2", 2)
        assert first == ["a", "b"] and second == ["c", "d"]  # in order, never the same task twice
        diagnostics = SampleDiagnostics(run_id="r", sample_id="a", question="q")
        queue.complete("r", "a", "w1", [diagnostics])
        assert store.get_diagnostics("r") == [diagnostics]
        assert queue.heartbeat("r", "w1") == 1  # b is still w1's
        assert queue.live_leases("r") == 3  # b, c, d: workers are evaluating
        time.sleep(0.5)  # w1 and w2 stop renewing: their leases run out
        assert queue.live_leases("r") == 0 and queue.counts("r").leased == 3  # leased, but nobody evaluating
        taken = queue.claim("r", "w3", 10)
        assert taken == ["b", "c", "d", "e"]
        late = SampleDiagnostics(run_id="r", sample_id="b", question="q")
        with pytest.raises(LeaseLostError):
            queue.complete("r", "b", "w1", [late])
        assert store.get_diagnostics("r", "b") == []  # the refused completion wrote nothing
        for sample_id in taken:
            queue.complete("r", sample_id, "w3")
        assert queue.counts("r") == TaskCounts(pending=0, leased=0, done=5)
        assert queue.completions("r") == dict.fromkeys("abcde", 1)
        queue.register("r", ["a", "b", "c", "d", "e"], reopen=["c"])  # a resumed run re-opens what failed
        assert queue.claim("r", "w4", 10) == ["c"]
        queue.release("r", "w4")
        assert queue.counts("r") == TaskCounts(pending=1, leased=0, done=4)


def test_a_sqlite_store_has_no_work_queue(tmp_path: Path) -> None:
    with RecordStore(tmp_path / "store.sqlite") as store, pytest.raises(ValueError, match="PostgreSQL"):
        WorkQueue(store)


async def test_a_postgres_run_is_locked_in_the_database(postgres_store_url: str, tmp_path: Path) -> None:
    samples, system = many_samples(1)
    judges = [BaselineJudge(BaselineRule.LEXICAL)]
    with RecordStore(postgres_store_url) as store, RecordStore(postgres_store_url) as other:
        first = Runner(make_context(store, run_many.config(), judges, system), RUN_ID, tmp_path / "a")
        second = Runner(make_context(other, run_many.config(), judges, system), RUN_ID, tmp_path / "b")
        stream = first.astream(samples)
        await anext(stream)  # the first holds the run (other run directories: the lock is not a file)
        with pytest.raises(RunLockedError, match=RUN_ID):
            await anext(second.astream(samples))
        await stream.aclose()
        assert [d.sample_id async for d in second.astream(samples)] == ["k0"]  # released: taken over


def _worker(url: str, home: Path, worker: str, log: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(DATA / "drain_worker.py"), url, str(home / worker), RUN_ID, str(N_SAMPLES), str(DELAY_S),
         str(log), worker, str(LEASE_S), "3"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _completed_and_holding(store: RecordStore, worker: str) -> bool:
    rows = dict(store.query("SELECT state, COUNT(*) FROM work_tasks WHERE run_id = ? AND (completed_by = ? OR "
                            "lease_owner = ?) GROUP BY state", (RUN_ID, worker, worker)))
    return bool(rows.get("done")) and bool(rows.get("leased"))


def _coordinator(store: RecordStore, home: Path, samples: list[Sample], log: Path) -> tuple[Runner, WorkQueue]:
    _, system = many_samples(N_SAMPLES)
    judges = [InstrumentedJudge(j, BaselineJudge(BaselineRule.LEXICAL), DELAY_S, log) for j in run_many.JUDGE_IDS]
    return Runner(make_context(store, run_many.config(), judges, system), RUN_ID, home / "coordinator"), \
        WorkQueue(store, LEASE_S)


@pytest.mark.slow
async def test_killing_a_worker_mid_run_loses_nothing_and_completes_each_sample_once(
        postgres_store_url: str, tmp_path: Path) -> None:
    samples, _ = many_samples(N_SAMPLES)
    reference_log = tmp_path / "reference.jsonl"
    # the uninterrupted run in one process on SQLite (no delay: it decides nothing)
    await run_many.main(str(tmp_path / "ref.sqlite"), str(tmp_path / "ref"), RUN_ID, N_SAMPLES, 0.0, reference_log)
    with RecordStore(tmp_path / "ref.sqlite") as reference_store:
        reference = {d.sample_id: comparable(d) for d in reference_store.get_diagnostics(RUN_ID)}
    reference_calls = len(log_lines(reference_log))

    with RecordStore(postgres_store_url) as store:
        runner, queue = _coordinator(store, tmp_path, samples, tmp_path / "coordinator.jsonl")
        assert queue_run(runner, queue, samples) == [s.id for s in samples]
        logs = {w: tmp_path / f"{w}.jsonl" for w in ("victim", "survivor")}
        victim = _worker(postgres_store_url, tmp_path, "victim", logs["victim"])
        survivor = _worker(postgres_store_url, tmp_path, "survivor", logs["survivor"])
        try:
            deadline = time.monotonic() + 60
            # once it has completed a sample and holds leases of others (its next batch)
            while not _completed_and_holding(store, "victim"):
                assert victim.poll() is None, victim.communicate()[1]
                assert time.monotonic() < deadline, "the victim did not reach its kill point"
                time.sleep(0.02)
            os.kill(victim.pid, signal.SIGKILL)
            victim.wait()
            out, err = survivor.communicate(timeout=120)
            assert survivor.returncode == 0, err
        finally:
            for process in (victim, survivor):
                if process.poll() is None:
                    process.kill()
                    process.wait()

        assert queue.counts(RUN_ID) == TaskCounts(pending=0, leased=0, done=N_SAMPLES)
        assert queue.completions(RUN_ID) == {s.id: 1 for s in samples}  # each sample completed exactly once
        completed_by = dict(store.query("SELECT sample_id, completed_by FROM work_tasks WHERE run_id = ?", (RUN_ID,)))
        assert "victim" in completed_by.values() and "survivor" in completed_by.values()
        assert sorted(out.split()) == sorted(s for s, w in completed_by.items() if w == "survivor")
        assert {d.sample_id: comparable(d) for d in store.get_diagnostics(RUN_ID)} == reference

        # repeated calls: only those of samples the victim held when it died (their verdicts not all stored)
        victim_calls, survivor_calls = log_lines(logs["victim"]), log_lines(logs["survivor"])
        checks = {c.id: c.sample_id for c in store.checks_for(RUN_ID)}
        taken_over = {s for s, w in completed_by.items() if w == "survivor"}
        cut_off = sum(any(checks.get(c) in taken_over for c in call["checks"]) for call in victim_calls)
        repeated = len(victim_calls) + len(survivor_calls) - reference_calls
        assert 0 <= repeated <= cut_off

        # the same command again: nothing queued, and a worker makes no call
        assert queue_run(runner, queue, samples) == []
        again = _worker(postgres_store_url, tmp_path, "again", tmp_path / "again.jsonl")
        out, err = again.communicate(timeout=60)
        assert again.returncode == 0 and out == "", err
        assert log_lines(tmp_path / "again.jsonl") == []


async def test_a_worker_in_process_drains_the_run(postgres_store_url: str, tmp_path: Path) -> None:
    samples, system = many_samples(3)
    judges = [BaselineJudge(BaselineRule.LEXICAL)]
    with RecordStore(postgres_store_url) as store:
        runner = Runner(make_context(store, run_many.config(), judges, system), RUN_ID, tmp_path / "run")
        queue = WorkQueue(store, LEASE_S)
        queue_run(runner, queue, samples)
        done = await adrain(runner, queue, "w1", batch=2)
        assert sorted(d.sample_id for d in done) == ["k0", "k1", "k2"]
        assert await adrain(runner, queue, "w2") == []
        assert store.finished_sample_ids(RUN_ID) == {"k0", "k1", "k2"}
