"""Runs on Dask workers (cluster/dask_engine.py, `ragcourt run --workers N`) against the simulated LLM server.

The big test runs `ragcourt run` in its own process on 2 Dask workers over a PostgreSQL store, 200 precomputed
samples, an LLM judge on bench/sim_server.py (real HTTP on 127.0.0.1, counting requests by conversation) and the
lexical judge, and kills one worker with SIGKILL once it has completed samples and holds leases of others. The
reference is the same command in one process on SQLite, uninterrupted. Issue 36's tests kill every worker process
at once (their nannies start others, which must take the expired leases over), and take every worker away for good
(the run must fail after its stall bound, not wait for ever).
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures import bench_module
from typer.testing import CliRunner

from ragcourt.cli import app
from ragcourt.cluster.dask_engine import (
    PRECOMPUTED,
    DaskOptions,
    DaskRun,
    DistributedRunError,
    llm_shares,
    local_cluster,
)
from ragcourt.runs.runner import Runner
from ragcourt.runs.workspace import Workspace
from ragcourt.schema import SampleDiagnostics
from ragcourt.stores.records import RecordStore
from ragcourt.stores.work_queue import TaskCounts, WorkQueue

sim = bench_module("sim_server")
from fault_rerun import comparable, samples

N_SAMPLES = 200
LLM_CONCURRENCY = 8  # 4 per worker
RUN_ID = "run-dask"


def test_the_llm_cap_is_split_across_workers_and_never_exceeded() -> None:
    assert llm_shares(16, 1) == [16]
    assert llm_shares(8, 3) == [3, 3, 2]
    assert sum(llm_shares(7, 7)) == 7
    with pytest.raises(DistributedRunError, match="llm_concurrency 2 is below the 3 workers"):
        llm_shares(2, 3)


def test_a_local_cluster_listens_on_loopback_only() -> None:
    from distributed import Client

    with local_cluster(2) as cluster, Client(cluster) as client:
        pids = {os.getpid(), *client.run(os.getpid).values()}
        listening = subprocess.run(["ss", "-tlnpH"], capture_output=True, text=True, check=True).stdout.splitlines()
    ours = [line.split()[3] for line in listening if any(f"pid={pid}," in line for pid in pids)]
    assert len(ours) >= 3  # the scheduler and both workers
    assert all(address.startswith("127.0.0.1:") for address in ours), ours


def test_workers_need_a_postgres_store_and_a_chroma_server_for_the_reference_system(tmp_path: Path) -> None:
    data = tmp_path / "samples.jsonl"
    data.write_text("".join(s.model_dump_json() + "\n" for s in samples(2)))
    args = ["run", str(data), "--judge", "lexical", "--home", str(tmp_path / "home"), "--workers", "2"]
    result = CliRunner().invoke(app, [*args, "--system", "precomputed"], env={"COLUMNS": "200", "RAGCOURT_STORE": ""})
    assert result.exit_code != 0
    assert "--workers and --scheduler need a PostgreSQL store" in result.output
    both = CliRunner().invoke(app, [*args, "--system", "precomputed", "--scheduler", "tcp://127.0.0.1:1"])
    assert both.exit_code != 0 and "either a number of workers or a scheduler" in both.output
    with RecordStore(tmp_path / "store.sqlite") as store, pytest.raises(DistributedRunError, match="SQLite file"):
        _sqlite_run(store, tmp_path)


def _sqlite_run(store: RecordStore, tmp_path: Path) -> DaskRun:
    from ragcourt.judging.decomposers import SentenceDecomposer
    from ragcourt.nodes.state import EvalContext
    from ragcourt.schema.config import EvalConfig
    from ragcourt.systems import Precomputed

    context = EvalContext(config=EvalConfig(), system=Precomputed(), judges=[], decomposer=SentenceDecomposer(),
                          store=store)
    return DaskRun(Runner(context, RUN_ID, tmp_path / "run"), "precomputed", DaskOptions(workers=2))


# --------------------------------------------------------------------------- the simulated server, kill -9


@pytest.fixture(scope="module")
def sim_url() -> Iterator[str]:
    with sim.running(latency_ms=5) as url:
        yield url


def sim_reset(url: str) -> None:
    urllib.request.urlopen(urllib.request.Request(url.removesuffix("/v1") + "/sim/reset", method="POST")).close()


def _config(path: Path, url: str) -> Path:
    path.write_text(f"judges:\n  - model: openai:sim-a@{url}\n    id: sim-a\n  - model: lexical\n"
                    f"decomposer: sentences\nmethods: [qcare, elements]\ntop_k: 3\nconcurrency: 8\n"
                    f"llm_concurrency: {LLM_CONCURRENCY}\ntimeout_s: 20\n")
    return path


def _question_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith(("✓", "✗"))]


def _owners(store: RecordStore) -> dict[str, tuple[int, int]]:
    """Lease owner -> (samples it completed, samples it holds now)."""
    found: dict[str, list[int]] = {}
    for owner, done, held in store.query(
            "SELECT COALESCE(completed_by, lease_owner), SUM(CASE WHEN state = 'done' THEN 1 ELSE 0 END), "
            "SUM(CASE WHEN state = 'leased' THEN 1 ELSE 0 END) FROM work_tasks WHERE run_id = ? AND "
            "COALESCE(completed_by, lease_owner) IS NOT NULL GROUP BY 1", (RUN_ID,)):
        found[str(owner)] = [int(done), int(held)]
    return {owner: (done, held) for owner, (done, held) in found.items()}


@pytest.mark.slow
def test_a_worker_killed_mid_run_loses_nothing_repeats_no_answered_call_and_changes_no_figure(
        sim_url: str, postgres_store_url: str, tmp_path: Path) -> None:
    data = tmp_path / "samples.jsonl"
    data.write_text("".join(s.model_dump_json() + "\n" for s in samples(N_SAMPLES)))
    config = _config(tmp_path / "config.yaml", sim_url)
    command = ["run", str(data), "--system", "precomputed", "--config", str(config), "--run-id", RUN_ID,
               "--no-check-endpoints"]

    # the uninterrupted reference: one process, SQLite
    reference = CliRunner().invoke(app, [*command, "--home", str(tmp_path / "local")], env={"COLUMNS": "200"})
    assert reference.exit_code == 0, reference.output
    answered = sim.stats(sim_url)["answered_conversations"]
    assert answered >= N_SAMPLES  # at least one judge call per sample
    with Workspace(tmp_path / "local").open_store() as store:
        expected = {d.sample_id: comparable(d) for d in store.get_diagnostics(RUN_ID)}
    sim_reset(sim_url)

    distributed = [str(Path(sys.executable).with_name("ragcourt")), *command, "--home", str(tmp_path / "shared"),
                   "--store", postgres_store_url, "--workers", "2", "--lease-s", "2"]
    coordinator = subprocess.Popen(distributed, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                   env={**os.environ, "COLUMNS": "200"})
    killed: tuple[str, int] | None = None
    with RecordStore(postgres_store_url) as store:
        try:
            deadline = time.monotonic() + 120
            while killed is None:
                assert coordinator.poll() is None, coordinator.communicate()[0]
                assert time.monotonic() < deadline, "no worker reached its kill point"
                try:
                    owners = _owners(store)
                except Exception:  # the queue's table is made by the coordinator: not there yet
                    owners = {}
                victim = next((o for o, (done, held) in owners.items() if done >= 5 and held >= 1), None)
                if victim is not None:
                    cached = store.cache_count()  # first: a call cached after this read was sent before the next
                    os.kill(int(re.search(r"-pid(\d+)-", victim).group(1)), signal.SIGKILL)
                    uncached_at_kill = sim.stats(sim_url)["chat_requests"] - cached
                    killed = (victim, uncached_at_kill)
                time.sleep(0.02)
            out, _ = coordinator.communicate(timeout=180)
        finally:
            if coordinator.poll() is None:
                coordinator.kill()
                coordinator.wait()
        assert coordinator.returncode == 0, out
        queue = WorkQueue(store)
        assert queue.counts(RUN_ID) == TaskCounts(pending=0, leased=0, done=N_SAMPLES)
        assert queue.completions(RUN_ID) == {f"s{i}": 1 for i in range(N_SAMPLES)}  # each sample once
        victim, uncached_at_kill = killed
        completed_by = dict(store.query("SELECT sample_id, completed_by FROM work_tasks WHERE run_id = ?", (RUN_ID,)))
        assert victim in completed_by.values() and len(set(completed_by.values())) >= 2
        assert {d.sample_id: comparable(d) for d in store.get_diagnostics(RUN_ID)} == expected  # the same figures

    stats = sim.stats(sim_url)
    # every conversation of the reference was answered, and the only ones answered twice are calls sent but not
    # yet cached when the worker died (a bound read at the kill: every call cached before it came from the cache)
    assert stats["answered_conversations"] == answered
    assert stats["repeated_answers"] <= uncached_at_kill
    print(f"killed {victim}: {stats['repeated_answers']} answered conversations asked again, at most "
          f"{uncached_at_kill} sent and not cached at the kill")
    lines = _question_lines(out)
    assert sorted(re.match(r"✓ (s\d+) ", line).group(1) for line in lines) == sorted(expected)  # streamed once each
    stream = (tmp_path / "shared" / "runs" / RUN_ID / "diagnostics.jsonl").read_text().splitlines()
    assert sorted(SampleDiagnostics.model_validate_json(line).sample_id for line in stream) == sorted(expected)

    # the same command again: everything from the store, no LLM call, no worker started
    again = CliRunner().invoke(app, [*command, "--home", str(tmp_path / "shared"), "--store", postgres_store_url,
                                     "--workers", "2"], env={"COLUMNS": "200"})
    assert again.exit_code == 0, again.output
    assert f"{N_SAMPLES} of {N_SAMPLES} samples finished before come from the store" in again.output
    assert sim.stats(sim_url)["chat_requests"] == stats["chat_requests"]
    # and later commands read the run as a local one
    summary = CliRunner().invoke(app, ["summary", RUN_ID, "--home", str(tmp_path / "shared")], env={"COLUMNS": "200"})
    local = CliRunner().invoke(app, ["summary", RUN_ID, "--home", str(tmp_path / "local")], env={"COLUMNS": "200"})
    assert summary.exit_code == 0 and local.exit_code == 0, summary.output
    table = [line for line in summary.output.splitlines() if line.startswith("│")]
    assert table and table == [line for line in local.output.splitlines() if line.startswith("│")]


# --------------------------------------------------------------------------- every worker killed at once (issue 36)

N_KILLED_RUN = 40
KILL_LEASE_S = 3.0  # the issue's --lease-s: long enough that a heartbeat late under load loses no lease


def _in_process_runner(store: RecordStore, url: str, run_dir: Path) -> Runner:
    """The coordinator's runner as `ragcourt run` builds it: the simulated LLM judge and the lexical one."""
    from ragcourt.runs.models import Models, eval_context
    from ragcourt.schema.config import parse_config
    from ragcourt.systems import Precomputed

    config = parse_config(
        {"judges": [{"model": f"openai:sim-a@{url}", "id": "sim-a"}, {"model": "lexical"}], "decomposer": "sentences",
         "methods": ["qcare", "elements"], "top_k": 3, "concurrency": 8, "llm_concurrency": LLM_CONCURRENCY,
         "timeout_s": 20}, "test")
    models = Models(config, store)
    context = eval_context(config, Precomputed(bounds=models.bounds_generator()), store, models, None, None)
    return Runner(context, RUN_ID, run_dir)


def _lease_holders(store: RecordStore) -> set[str]:
    """The owners of live leases (not run out) now."""
    return {str(owner) for owner, in store.query("SELECT DISTINCT lease_owner FROM work_tasks WHERE run_id = ? AND "
                                                 "state = 'leased' AND lease_until >= now()", (RUN_ID,))}


@pytest.mark.slow
async def test_killing_every_worker_at_once_the_restarted_workers_take_the_expired_leases_over(
        sim_url: str, postgres_store_url: str, tmp_path: Path) -> None:
    wanted = samples(N_KILLED_RUN)
    with RecordStore(tmp_path / "reference.sqlite") as store:  # the fault-free run, in one process
        reference = [d async for d in _in_process_runner(store, sim_url, tmp_path / "reference").astream(wanted)]
    expected = {d.sample_id: comparable(d) for d in reference}
    assert len(expected) == N_KILLED_RUN

    clients: list[Any] = []
    streamed: list[str] = []
    killed_pids: set[int] = set()
    with RecordStore(postgres_store_url) as store:
        run = DaskRun(_in_process_runner(store, sim_url, tmp_path / "run"), PRECOMPUTED,
                      DaskOptions(workers=2, lease_s=KILL_LEASE_S), on_cluster=clients.append)
        async for diagnostics in run.astream(wanted):
            streamed.append(diagnostics.sample_id)
            if killed_pids:
                continue
            if len(await asyncio.to_thread(_lease_holders, store)) == 2:
                # both workers mid-batch: kill each worker process (its nanny starts another in its place)
                pids = await asyncio.to_thread(clients[0].run, os.getpid)
                assert len(pids) == 2
                for pid in pids.values():
                    os.kill(pid, signal.SIGKILL)
                killed_pids = set(pids.values())
        queue = WorkQueue(store)
        tasks = store.query("SELECT sample_id, attempts, completed_by FROM work_tasks WHERE run_id = ?", (RUN_ID,))
        assert killed_pids, "the run ended before both workers held leases"
        assert queue.counts(RUN_ID) == TaskCounts(pending=0, leased=0, done=N_KILLED_RUN)
        assert queue.completions(RUN_ID) == {s.id: 1 for s in wanted}  # each sample completed once
        assert sorted(streamed) == sorted(expected)  # and streamed once
        assert {d.sample_id: comparable(d) for d in store.get_diagnostics(RUN_ID)} == expected

    # A task claimed twice was leased by a worker that died, its lease ran out and another took it over: each was
    # completed by a worker started in place of the dead ones (read from the queue afterwards, as a sample
    # completed between a read of the leases and the kill would make a list taken before the kill wrong).
    taken_over = {sample_id: int(re.search(r"-pid(\d+)-", owner).group(1))
                  for sample_id, attempts, owner in tasks if attempts > 1}
    assert taken_over and killed_pids.isdisjoint(taken_over.values()), (taken_over, killed_pids)
    stream = run.runner.paths.diagnostics.read_text().splitlines()
    assert sorted(SampleDiagnostics.model_validate_json(line).sample_id for line in stream) == sorted(expected)


async def test_a_run_no_worker_can_progress_fails_after_the_stall_bound_instead_of_waiting_for_ever(
        sim_url: str, postgres_store_url: str, tmp_path: Path) -> None:
    stall_s = 2.0

    def retire_every_worker(client: Any) -> None:  # the workers and their nannies go: nobody runs the shards
        client.retire_workers(close_workers=True)

    with RecordStore(postgres_store_url) as store:
        run = DaskRun(_in_process_runner(store, sim_url, tmp_path / "run"), PRECOMPUTED,
                      DaskOptions(workers=2, lease_s=KILL_LEASE_S, stall_s=stall_s), on_cluster=retire_every_worker)
        started = time.monotonic()
        with pytest.raises(DistributedRunError, match=r"no worker made progress on run run-dask for 2 s \(no sample "
                           r"completed, no lease renewed\): \d+ samples pending, \d+ leased by workers that stopped "
                           r"renewing, 0 done, 0 workers connected"):
            await anext(run.astream(samples(3)))
        assert time.monotonic() - started < stall_s + 30  # the cluster's start and close, then the bound
