"""kill -9 at seeded random points of a scripted run (tests/fixtures/graph/run_many.py in a subprocess: two
logging lexical judges, each call written to a log before it works, then a short sleep), then resume.

For every seed: the resumed run's diagnostics equal an uninterrupted run's (metrics, element statuses,
unsupported claims, uncovered sub-queries and counts per sample; timestamps aside), and the judge calls
over both processes are at most the uninterrupted run's plus the calls that were in flight at the kill
(logged, but with verdicts not all in the store). The five killed runs go at once, in separate
directories, so the test costs about one process start.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
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

from ragcourt.schema import SampleDiagnostics, SampleStatus
from ragcourt.stores.records import RecordStore

N_SAMPLES = 4
DELAY_S = 0.03
SEEDS = (1, 2, 3, 4, 5)
RUN_ID = "run-crash"


def log_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def comparable(d: SampleDiagnostics) -> dict:
    """Everything a run decides about a sample, without timestamps and usage."""
    return {
        "status": d.status, "metrics": [(m.name, m.value, m.na_reason, m.n, m.n_unscored, m.n_escalated)
                                        for m in d.metrics],
        "elements": [(e.text, e.in_context, e.in_loose_context, e.in_answer, e.status) for e in d.elements],
        "unsupported": d.unsupported_claims, "uncovered": d.uncovered_subqueries,
        "escalations": sorted(d.escalations), "n_checks": d.n_checks, "n_unscored": d.n_unscored,
    }


def in_flight(store: RecordStore, calls: list[dict]) -> int:
    """Logged calls whose verdicts did not all reach the store: the work the kill cut off."""
    return sum(
        not set(call["checks"]) <= {v.check_id for v in store.get_verdicts(call["checks"], judge_id=call["judge"])}
        for call in calls
    )


async def kill_at(home: Path, after_calls: int, extra_s: float) -> None:
    """Start the run, SIGKILL it once `after_calls` judge calls are logged (plus `extra_s`)."""
    log = home / "calls.jsonl"
    process = await asyncio.to_thread(
        subprocess.Popen,
        [sys.executable, str(DATA / "run_many.py"), str(home / "store.sqlite"), str(home / "run"), RUN_ID,
         str(N_SAMPLES), str(DELAY_S), str(log)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while len(log_lines(log)) < after_calls:
            assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
            assert time.monotonic() < deadline, "the run did not reach its kill point"
            await asyncio.sleep(0.005)
        await asyncio.sleep(extra_s)
        os.kill(process.pid, signal.SIGKILL)
    finally:
        if process.poll() is None:
            process.kill()
        await asyncio.to_thread(process.wait, 30)
    assert process.returncode == -signal.SIGKILL


@pytest.mark.slow
async def test_kill_9_at_random_points_then_resume_gives_the_uninterrupted_diagnostics(tmp_path: Path) -> None:
    clean = tmp_path / "clean"
    clean.mkdir()
    await run_many.main(str(clean / "store.sqlite"), str(clean / "run"), RUN_ID, N_SAMPLES, 0.0,
                        clean / "calls.jsonl")
    uninterrupted = len(log_lines(clean / "calls.jsonl"))
    with RecordStore(clean / "store.sqlite") as store:
        expected = {d.sample_id: comparable(d) for d in store.get_diagnostics(RUN_ID)}
    assert sorted(expected) == [f"k{i}" for i in range(N_SAMPLES)]
    assert all(e["status"] is SampleStatus.OK for e in expected.values())
    assert uninterrupted > N_SAMPLES

    # Kill before the last sample's judge calls are all logged: each remaining call sleeps DELAY_S, so the
    # extra wait (<= 0.05 s) cannot let the run finish first (a kill after the end would prove nothing).
    last_possible = uninterrupted - uninterrupted // N_SAMPLES
    points = {seed: (random.Random(seed).randint(1, last_possible), random.Random(seed).uniform(0, 0.05))
              for seed in SEEDS}
    homes = {seed: tmp_path / f"killed-{seed}" for seed in SEEDS}
    for home in homes.values():
        home.mkdir()
    await asyncio.gather(*(kill_at(homes[seed], *points[seed]) for seed in SEEDS))

    for seed in SEEDS:
        home = homes[seed]
        killed_calls = log_lines(home / "calls.jsonl")
        with RecordStore(home / "store.sqlite") as store:
            cut_off = in_flight(store, killed_calls)
            finished_before = store.finished_sample_ids(RUN_ID)
        assert len(killed_calls) >= points[seed][0]
        assert len(finished_before) < N_SAMPLES, f"seed {seed}: the kill came after the run finished"

        await run_many.main(str(home / "store.sqlite"), str(home / "run"), RUN_ID, N_SAMPLES, 0.0,
                            home / "calls.jsonl")
        total = len(log_lines(home / "calls.jsonl"))
        with RecordStore(home / "store.sqlite") as store:
            resumed = {d.sample_id: comparable(d) for d in store.get_diagnostics(RUN_ID)}
        assert resumed == expected, f"seed {seed} (killed after {points[seed][0]} calls)"
        assert uninterrupted <= total <= uninterrupted + cut_off, (seed, total, uninterrupted, cut_off)
        lines = (home / "run" / "diagnostics.jsonl").read_text().splitlines()
        assert sorted(json.loads(line)["sample_id"] for line in lines) == sorted(expected)  # each once
        assert not (home / "run" / "run.lock").exists()
