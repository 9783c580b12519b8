"""Dask as the engine of a run spread over worker processes (`ragcourt run --workers N / --scheduler ADDRESS`).

The coordinator (`DaskRun.astream`, in the command's process) queues the run in its PostgreSQL store
(cluster.worker.queue_run), then submits one Dask task per worker, a shard, placed by the scheduler:
`run_shard` builds the run's parts in the worker from plain values (the configuration, the store's URL, the Chroma
server's URL), and drains the run's work queue on its own event loop (cluster.worker.adrain), many samples at
once, so an async task holds its worker thread to the end (one task per sample would pay Dask's scheduling per
sample). Leases, not Dask, decide who evaluates what: a worker killed mid-run leaves leases that run out and are
taken over, and Dask runs its lost shard again on a live worker (or on the worker its nanny starts in its place).
A run in which no worker makes progress for `DaskOptions.stall_s` (no sample completed, no live lease) fails
saying so, never waits for ever.

The configured `llm_concurrency` is the cap of the whole cluster per endpoint: it is split across the shards
(`llm_shares`), so N workers never have more calls in flight than one process would. The coordinator streams
each completed sample as its completion commits (`WorkQueue.completed_since`), appends it to the run's
diagnostics.jsonl (so `ragcourt watch` follows the run from the coordinator's machine, every worker's samples)
and yields it as `Runner.astream` does; the records are those of a local run, so every later command reads
the run as one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragcourt.cluster.worker import adrain, queue_run
from ragcourt.llm.limits import LimiterRegistry
from ragcourt.llm.usage import UsageMeter
from ragcourt.runs.models import Models, eval_context
from ragcourt.runs.runner import ResumePlan, RunLock, RunLockedError, Runner
from ragcourt.runs.workspace import chroma_address
from ragcourt.schema import Sample, SampleDiagnostics, TokenUsage
from ragcourt.schema.config import parse_config
from ragcourt.stores.records import RecordStore
from ragcourt.stores.work_queue import WorkQueue

logger = logging.getLogger(__name__)

PRECOMPUTED, REFERENCE = "precomputed", "reference"
# How far below the highest completion number seen the coordinator asks again: a completion commits after
# its number is drawn, so one can commit below numbers already read (at most those of concurrent completions).
RESCAN = 4096


SHARD_GRACE_S = 5.0  # how long shards have to return once every sample is complete


def _wait(futures: Sequence[Any], timeout_s: float) -> None:
    from distributed import wait

    with contextlib.suppress(TimeoutError):
        wait(futures, timeout=timeout_s)


class DistributedRunError(RuntimeError):
    """A distributed run that cannot start or whose workers failed (the message says which and why)."""


def llm_shares(total: int, workers: int) -> list[int]:
    """The run's LLM calls in flight per endpoint, `total`, split over `workers` (summing to `total`)."""
    if workers < 1:
        raise DistributedRunError("a distributed run needs at least one worker")
    if total < workers:
        raise DistributedRunError(
            f"llm_concurrency {total} is below the {workers} workers: each needs one LLM call in flight, and the "
            "cluster may not exceed the configured cap; raise llm_concurrency or use fewer workers")
    return [total // workers + (1 if i < total % workers else 0) for i in range(workers)]


@dataclass(frozen=True)
class ShardSpec:
    """What a worker builds its shard from, as plain values (pickled to the worker)."""

    store_url: str
    run_id: str
    config: dict[str, Any]  # EvalConfig.model_dump(mode="json")
    system: str  # PRECOMPUTED or REFERENCE
    collection: str | None
    chroma_url: str | None
    llm_concurrency: int  # this shard's part of the cap
    lease_s: float
    name: str  # the lease owner's prefix: the shard's number, a fresh suffix per attempt


@dataclass(frozen=True)
class ShardResult:
    owner: str
    completed: int
    usage: list[tuple[str, str, dict[str, Any]]]  # (model id, role, TokenUsage) of this shard's LLM calls


def _system(kind: str, models: Models, vectors: Any, collection: str | None) -> Any:
    from ragcourt.systems import Precomputed, ReferenceRAG

    if kind == PRECOMPUTED:
        return Precomputed(bounds=models.bounds_generator())
    if kind == REFERENCE and vectors is not None and collection is not None:
        return ReferenceRAG(vectors, collection, models.generator())
    raise DistributedRunError(f"system {kind!r} cannot run on workers (reference needs a Chroma server's URL)")


async def adrain_shard(spec: ShardSpec, scratch: Path) -> ShardResult:
    """One shard on this event loop: the run's parts built here, then the queue drained (cluster.worker)."""
    from ragcourt.stores.embeddings import MiniLMEmbedding
    from ragcourt.stores.vectors import VectorStore

    config = parse_config(spec.config, f"run {spec.run_id}")
    # a fresh owner per attempt (a shard run again after its worker died never renews the dead one's leases),
    # naming the worker's process, for whoever looks at the queue
    owner = f"{spec.name}-pid{os.getpid()}-{uuid.uuid4().hex[:6]}"
    with RecordStore(spec.store_url) as store:
        # the embedding function registered by ragcourt, as chromadb needs it to reopen the collection here
        vectors = VectorStore.http(*chroma_address(spec.chroma_url), MiniLMEmbedding()) if spec.chroma_url else None
        models = Models(config, store, limiters=LimiterRegistry(default_max_concurrency=spec.llm_concurrency))
        context = eval_context(config, _system(spec.system, models, vectors, spec.collection), store, models,
                               vectors, spec.collection)
        runner = Runner(context, spec.run_id, scratch / owner)  # this worker's own diagnostics file
        done = await adrain(runner, WorkQueue(store, spec.lease_s), owner)
    usage = [(model_id, role, TokenUsage(prompt_tokens=totals.prompt_tokens, completion_tokens=totals.completion_tokens,
                                         calls=totals.calls, cached_calls=totals.cached_calls).model_dump(mode="json"))
             for (model_id, role), totals in models.usage.snapshot().items()]
    return ShardResult(owner, len(done), usage)


def run_shard(spec: ShardSpec) -> ShardResult:
    """The Dask task of one shard: its own event loop, in the worker's thread, to the end of the run's queue."""
    try:
        from distributed import get_worker

        scratch = Path(get_worker().local_directory) / "ragcourt"
    except (ImportError, ValueError):  # called outside a Dask worker (a test, a plain process)
        scratch = Path(tempfile.gettempdir()) / "ragcourt-shards"
    return asyncio.run(adrain_shard(spec, scratch / spec.run_id))


def local_cluster(workers: int) -> Any:
    """A Dask LocalCluster of `workers` processes of one thread each, listening on 127.0.0.1 only: no dashboard,
    and the scheduler's HTTP routes (health, metrics) on a free loopback port rather than the fixed 8787."""
    from distributed import LocalCluster

    return LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                        dashboard_address=None, scheduler_kwargs={"dashboard_address": "127.0.0.1:0"})


@dataclass(frozen=True)
class DaskOptions:
    """`workers`: start a LocalCluster of that many processes on 127.0.0.1; else `scheduler`: the address of a
    running one (tcp://HOST:PORT), every one of its workers taking a shard. `lease_s`: how long a worker's claim
    on a sample lasts without renewal (a dead worker's samples wait that long to be taken over). `stall_s`: how long
    the run may go with no sample completed and no live lease before it fails with DistributedRunError: no worker
    is evaluating anything (all dead and not replaced, or unable to start). It must cover workers starting up
    (imports, the run's parts built) and a dead worker's replacement starting: 5 to 15 s each on a busy 2-core
    machine."""

    workers: int | None = None
    scheduler: str | None = None
    lease_s: float = 30.0
    poll_s: float = 0.2
    stall_s: float = 120.0

    def __post_init__(self) -> None:
        if (self.workers is None) == (self.scheduler is None):
            raise DistributedRunError("give either a number of workers or a scheduler's address")
        if self.workers is not None and self.workers < 1:
            raise DistributedRunError(f"--workers must be >= 1, got {self.workers}")


@dataclass
class DaskRun:
    """A run on Dask workers with `Runner.astream`'s interface, for the coordinator's runner (its context gives
    the store, configuration and collection; `system` is how workers build the system under test)."""

    runner: Runner
    system: str
    options: DaskOptions
    chroma_url: str | None = None
    usage: UsageMeter | None = None  # the workers' LLM usage is added here as their shards end
    on_cluster: Callable[[Any], None] | None = None  # told the Dask client once the shards are submitted
    _seen: set[str] = field(default_factory=set)  # samples streamed (or finished before)
    _highest: int = 0  # the highest completion number read

    def __post_init__(self) -> None:
        store = self.runner.context.store
        if store.url is None:
            raise DistributedRunError(
                f"a run on workers needs a PostgreSQL store (--store postgresql://..., or `store:` in the config): the "
                f"workers share the run through it, and {store.location} is a SQLite file on this machine")
        if self.system == REFERENCE and self.chroma_url is None:
            raise DistributedRunError(
                "the reference system on workers needs a Chroma server (--chroma http://HOST:PORT, or `chroma:` in "
                "the config): a chromadb folder is not shared between processes")

    async def astream(self, samples: Iterable[Sample], *, dataset: str = "",
                      on_start: Callable[[ResumePlan], None] | None = None) -> AsyncIterator[SampleDiagnostics]:
        """Yield each sample's diagnostics as its completion commits (finished ones first, from the store).
        Raises RunLockedError (the run is in use), SamplesChangedError, DistributedRunError."""
        runner = self.runner
        store, run_id = runner.context.store, runner.run_id
        # the run's advisory lock (as a local run takes it) and its lock file, which `watch` reads as "running"
        with RunLock(runner.paths.lock), store.dialect.run_lock(f"ragcourt-run:{run_id}") as held:
            if not held:
                raise RunLockedError(f"run {run_id} is in use by another process on {store.location}; wait for it "
                                     "or stop it")
            queue = WorkQueue(store, self.options.lease_s)
            finished = await asyncio.to_thread(store.finished_sample_ids, run_id)
            todo = set(await asyncio.to_thread(queue_run, runner, queue, samples, dataset=dataset))
            stored = [s.id for s in samples if s.id not in todo]
            if on_start is not None:
                on_start(ResumePlan(stored=tuple(stored), reopened=tuple(s.id for s in samples
                                                                         if s.id in todo and s.id in finished)))
            earlier = {d.sample_id: d for d in await asyncio.to_thread(store.get_diagnostics, run_id)}
            await asyncio.to_thread(self._write_stream, [earlier[i] for i in stored if i in earlier])
            self._seen = set(stored)
            for sample_id in stored:
                if sample_id in earlier:
                    yield earlier[sample_id]
            if todo:
                async for diagnostics in self._run_shards(queue, {s.id for s in samples}):
                    yield diagnostics

    async def _run_shards(self, queue: WorkQueue, wanted: set[str]) -> AsyncIterator[SampleDiagnostics]:
        client, cluster = await asyncio.to_thread(self._connect)
        try:
            config = self.runner.context.config
            shares = llm_shares(config.llm_concurrency, len(client.scheduler_info()["workers"]))
            specs = [ShardSpec(store_url=str(self.runner.context.store.url), run_id=self.runner.run_id,
                               config=config.model_dump(mode="json"), system=self.system,
                               collection=self.runner.context.collection, chroma_url=self.chroma_url,
                               llm_concurrency=share, lease_s=self.options.lease_s, name=f"shard{n}")
                     for n, share in enumerate(shares)]
            # A shard per worker, placed by the scheduler (an idle worker takes the next one), never pinned to a
            # worker's address: a task pinned to a worker that died waits in Dask's no-worker state for that address
            # to come back, allow_other_workers notwithstanding, when no worker was alive as Dask rescheduled it
            # (every worker killed at once); a nanny's restarted worker has a new address, so the run hung (issue 36).
            futures = [client.submit(run_shard, spec, key=f"ragcourt-{spec.run_id}-{spec.name}-{uuid.uuid4().hex[:8]}",
                                     pure=False) for spec in specs]
            if self.on_cluster is not None:
                self.on_cluster(client)
            progress_at = time.monotonic()
            while True:
                ended = all(future.done() for future in futures)  # before the read: nothing is left behind
                seen = len(self._seen)
                async for diagnostics in self._completed(queue, max(0, self._highest - RESCAN), wanted):
                    yield diagnostics
                if ended or wanted <= self._seen:
                    break
                if len(self._seen) > seen or await asyncio.to_thread(queue.live_leases, self.runner.run_id) > 0:
                    progress_at = time.monotonic()
                elif time.monotonic() - progress_at > self.options.stall_s:
                    raise DistributedRunError(await asyncio.to_thread(self._stalled, client, queue))
                await asyncio.sleep(self.options.poll_s)
            # Every sample is complete: the shards return at once, all but one that Dask runs again after its
            # worker died, which would only start up to find nothing to do (it is cancelled, not waited for).
            await asyncio.to_thread(_wait, futures, SHARD_GRACE_S)
            client.cancel([future for future in futures if not future.done()])
            failures = [(spec.name, future.exception()) for spec, future in zip(specs, futures, strict=True)
                        if future.status == "error"]
            for future in futures:
                if future.status == "finished" and self.usage is not None:
                    for model_id, role, usage in future.result().usage:
                        self.usage.record(model_id, role, TokenUsage.model_validate(usage))
            if failures:
                raise DistributedRunError("; ".join(f"{name} failed: {type(error).__name__}: {error}"
                                                    for name, error in failures))
            async for diagnostics in self._completed(queue, 0, wanted):  # a last full sweep
                yield diagnostics
            counts = await asyncio.to_thread(queue.counts, self.runner.run_id)
            if counts.open:
                raise DistributedRunError(f"the workers ended with {counts.open} samples of run "
                                          f"{self.runner.run_id} still open")
        finally:
            await asyncio.to_thread(self._close, client, cluster)

    async def _completed(self, queue: WorkQueue, after: int, wanted: set[str]) -> AsyncIterator[SampleDiagnostics]:
        run_id, store = self.runner.run_id, self.runner.context.store
        for seq, sample_id in await asyncio.to_thread(queue.completed_since, run_id, after):
            self._highest = max(self._highest, seq)
            if sample_id in self._seen or sample_id not in wanted:
                continue
            found = await asyncio.to_thread(store.get_diagnostics, run_id, sample_id)
            if not found:  # a completion without its record cannot be: the same transaction wrote both
                raise DistributedRunError(f"sample {sample_id} of run {run_id} is complete without diagnostics")
            self._seen.add(sample_id)
            await asyncio.to_thread(self._append, found[0])
            yield found[0]

    def _stalled(self, client: Any, queue: WorkQueue) -> str:
        """Why the run stopped waiting: what the queue holds and how many workers the scheduler has."""
        counts = queue.counts(self.runner.run_id)
        workers = len(client.scheduler_info()["workers"])
        return (f"no worker made progress on run {self.runner.run_id} for {self.options.stall_s:g} s (no sample "
                f"completed, no lease renewed): {counts.pending} samples pending, {counts.leased} leased by workers "
                f"that stopped renewing, {counts.done} done, {workers} workers connected to the scheduler; see the "
                "workers' logs, then run the same command again to resume")

    def _connect(self) -> tuple[Any, Any]:
        from distributed import Client

        if self.options.scheduler is not None:
            client = Client(self.options.scheduler, timeout="30s")
            client.wait_for_workers(1, timeout=60)
            return client, None
        cluster = local_cluster(self.options.workers or 1)
        try:
            return Client(cluster), cluster
        except BaseException:
            cluster.close()
            raise

    @staticmethod
    def _close(client: Any, cluster: Any) -> None:
        client.close()
        if cluster is not None:
            cluster.close()

    def _write_stream(self, finished: Sequence[SampleDiagnostics]) -> None:
        """diagnostics.jsonl as it starts: the samples finished before, once each (written whole, then moved)."""
        path = self.runner.paths.diagnostics
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(path.name + ".partial")
        with partial.open("w", encoding="utf-8") as handle:
            handle.writelines(_line(d) for d in finished)
        os.replace(partial, path)

    def _append(self, diagnostics: SampleDiagnostics) -> None:
        with self.runner.paths.diagnostics.open("a", encoding="utf-8") as handle:
            handle.write(_line(diagnostics))


def _line(diagnostics: SampleDiagnostics) -> str:
    return diagnostics.stream_line()
