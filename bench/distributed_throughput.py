"""Throughput of a run on 1 and on 2 Dask workers against the simulated LLM server at zero latency (CPU-bound),
as a ratio in one run, with the PostgreSQL writes and bytes per sample (the capacity plan in docs/BENCHMARKS.md).

    python bench/distributed_throughput.py [--samples 300 --store postgresql://... --concurrency 8]

Both configurations run in this one invocation on the same machine, each on its own warmed LocalCluster (the
workers' start-up and imports, about 3 s each, are not timed: `--scheduler` mode, a cluster already running),
over distinct samples (so the shared LLM cache answers nothing of the second from the first). Each sample is
precomputed (contexts and answer given), with an LLM judge on the simulated server (bench/sim_server.py) plus
the lexical judge and the sentence decomposer, Q-CARE and element checks. Timed: from the coordinator's start
(queueing the run) to its last completion streamed. Without `--store` a private PostgreSQL is started in a temp
dir (tests/fakes/private_postgres.py, Debian's server binaries) and stopped at the end.

Database figures are read from pg_stat_database and pg_database_size around each run: committed transactions,
rows inserted and updated, and bytes grown, per sample. The simulated server, PostgreSQL and the coordinator share
the machine's cores with the workers, so on 2 cores a perfect 2x is out of reach; the figures say what was had.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from tempfile import TemporaryDirectory

from ragcourt.cluster.dask_engine import PRECOMPUTED, DaskOptions, DaskRun, local_cluster
from ragcourt.runs.models import prepare_run
from ragcourt.runs.runner import Runner
from ragcourt.schema import Sample
from ragcourt.schema.config import EvalConfig, JudgeSpec, Method
from ragcourt.stores.records import RecordStore
from ragcourt.systems import Precomputed

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from fault_rerun import samples  # noqa: E402  (bench/ is no package)
from sim_server import running, stats  # noqa: E402


@contextlib.contextmanager
def postgres(url: str | None) -> Iterator[str]:
    if url:
        yield url
        return
    sys.path.insert(0, str(HERE.parent / "tests"))
    from fakes.private_postgres import PrivatePostgres

    with PrivatePostgres() as cluster:
        yield cluster.url


def config_for(url: str, concurrency: int) -> EvalConfig:
    return EvalConfig(judges=(JudgeSpec(model=f"openai:sim-a@{url}", id="sim-a"), JudgeSpec(model="lexical")),
                      decomposer="sentences", methods=(Method.QCARE, Method.ELEMENTS), top_k=3,
                      concurrency=concurrency, llm_concurrency=4 * concurrency, timeout_s=30)


@dataclass(frozen=True)
class Measured:
    workers: int
    samples: int
    seconds: float
    chat_requests: int
    commits: int
    inserted: int
    updated: int
    grown_bytes: int

    @property
    def per_s(self) -> float:
        return self.samples / self.seconds


def database_counters(store: RecordStore) -> tuple[int, int, int, int]:
    time.sleep(1.2)  # a backend's statistics reach pg_stat_database within a second of its transactions
    ((commits, inserted, updated, size),) = store.query(
        "SELECT xact_commit, tup_inserted, tup_updated, pg_database_size(current_database()) FROM pg_stat_database "
        "WHERE datname = current_database()")
    return int(commits), int(inserted), int(updated), int(size)


async def run_on(address: str, workers: int, batch: Sequence[Sample], config: EvalConfig, store: RecordStore,
                 home: Path, sim_url: str) -> Measured:
    _, context = await prepare_run(config, store, lambda models: Precomputed(bounds=models.bounds_generator()),
                                   None, None, check=False)
    run_id = f"bench-{workers}w-{time.time_ns()}"
    runner = Runner(context, run_id, home / run_id)
    before, sent = database_counters(store), stats(sim_url)["chat_requests"]
    started = time.perf_counter()
    run = DaskRun(runner, PRECOMPUTED, DaskOptions(scheduler=address, lease_s=30.0))
    n = sum([1 async for _ in run.astream(batch)])
    seconds = time.perf_counter() - started
    after = database_counters(store)
    assert n == len(batch), f"{n} of {len(batch)} samples streamed"
    delta = [b - a for a, b in zip(before, after, strict=True)]
    return Measured(workers, len(batch), seconds, stats(sim_url)["chat_requests"] - sent, *delta)


def warm(client: object) -> None:
    """Each worker imports what a shard uses, so the timed run pays no start-up."""
    def load() -> None:
        import ragcourt.cluster.dask_engine  # noqa: F401
        import ragcourt.systems  # noqa: F401

    client.run(load)  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=300, help="samples per configuration")
    parser.add_argument("--store", help="a postgresql:// URL (default: a private server for this run)")
    parser.add_argument("--concurrency", type=int, default=8, help="samples each worker evaluates at once")
    args = parser.parse_args()
    from distributed import Client

    pool = samples(2 * args.samples)
    measured = []
    with running() as sim_url, postgres(args.store) as url, RecordStore(url) as store, \
            TemporaryDirectory() as home:
        config = config_for(sim_url, args.concurrency)
        for workers, batch in ((1, pool[:args.samples]), (2, pool[args.samples:])):
            with local_cluster(workers) as cluster, Client(cluster) as client:
                warm(client)
                measured.append(asyncio.run(run_on(cluster.scheduler_address, workers, batch, config, store,
                                                   Path(home), sim_url)))
    print(f"{args.samples} samples per configuration; an LLM judge on the simulated server (0 ms) + lexical, "
          f"sentence decomposer, Q-CARE + elements, {args.concurrency} samples at once per worker")
    print("| workers | seconds | samples/s | samples/s per worker | LLM calls/sample | commits/sample | "
          "rows inserted/sample | rows updated/sample | database bytes/sample |")
    print("|---|---|---|---|---|---|---|---|---|")
    for m in measured:
        print(f"| {m.workers} | {m.seconds:.1f} | {m.per_s:.1f} | {m.per_s / m.workers:.1f} | "
              f"{m.chat_requests / m.samples:.2f} | {m.commits / m.samples:.1f} | {m.inserted / m.samples:.1f} | "
              f"{m.updated / m.samples:.1f} | {m.grown_bytes / m.samples:,.0f} |")
    one, two = measured
    print(f"2 workers / 1 worker: {two.per_s / one.per_s:.2f}x")


if __name__ == "__main__":
    main()
