"""A run shared by worker processes through its PostgreSQL store's work queue (stores/work_queue.py).

`queue_run` is the coordinator's part, once per command: it refuses edited samples exactly as a local run
does, registers the run and its samples, and queues a task per sample; samples finished in an earlier
command are done already, and finished ones that failed or hold work unscored for a transient reason are
re-opened. `adrain` is a worker's part, on its own event loop: it claims batches of leases, evaluates each
sample with the existing per-sample graph (`Runner.evaluate_one`), renews its leases meanwhile, and
completes each sample together with its diagnostics, leasing another as each one ends (up to `batch` in
flight); it returns when the run has no open task. A worker
killed mid-batch leaves leases that run out and are claimed by the others; the work they redo comes from
the store (stored verdicts) and the shared LLM cache. The run's records are those of a local run, so
`summary`, `report`, `review` and `rerun` read it as one.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable

from ragcourt.graphs.sample import build_sample_graph
from ragcourt.runs.runner import Runner, SamplesChangedError
from ragcourt.schema import Sample, SampleDiagnostics, SampleStatus
from ragcourt.stores.work_queue import LeaseLostError, WorkQueue

logger = logging.getLogger(__name__)


def queue_run(runner: Runner, queue: WorkQueue, samples: Iterable[Sample], *, dataset: str = "",
              system: str = "") -> list[str]:
    """Register the run and queue its samples; the ids still to evaluate (in order). Raises
    SamplesChangedError, before anything is written, when samples the run holds are given with other contents."""
    store, run_id = runner.context.store, runner.run_id
    held = runner.compare_with_store(samples)
    if held.changed:
        raise SamplesChangedError(run_id, held.changed, dataset)
    runner.register(dataset=dataset, system=system)
    runner.save_unsaved(samples, held)
    finished = store.finished_sample_ids(run_id)
    transient = store.transient_sample_ids(run_id, [judge.judge_id for judge in runner.context.judges])
    todo = [s.id for s in samples if s.id not in finished or s.id in transient]
    queue.register(run_id, [s.id for s in samples], reopen=todo)
    return todo


async def _renew(queue: WorkQueue, run_id: str, worker: str) -> None:
    while True:
        await asyncio.sleep(queue.lease_s / 3)
        try:
            await asyncio.to_thread(queue.heartbeat, run_id, worker)
        except Exception:  # a missed renewal costs at most a lease taken over, never a record
            logger.exception("worker %s could not renew its leases", worker)


async def adrain(runner: Runner, queue: WorkQueue, worker: str, *, batch: int | None = None) -> list[SampleDiagnostics]:
    """Evaluate leased samples of the runner's run until no task is open; the diagnostics this worker
    completed. `batch`: samples leased and evaluated at once (default: the config's concurrency)."""
    store, run_id = runner.context.store, runner.run_id
    size = batch or runner.context.config.concurrency
    graph = build_sample_graph(None)
    completed: list[SampleDiagnostics] = []
    runner.paths.run_dir.mkdir(parents=True, exist_ok=True)  # this worker's diagnostics stream

    async def one(sample: Sample) -> None:
        diagnostics = await runner.evaluate_one(graph, sample)
        if diagnostics is None:  # an inline-review interrupt: distributed runs review deferred
            diagnostics = SampleDiagnostics(run_id=run_id, sample_id=sample.id, question=sample.question,
                                            status=SampleStatus.FAILED, error="inline review is not distributed")
        try:
            await asyncio.to_thread(queue.complete, run_id, sample.id, worker, [diagnostics])
        except LeaseLostError:  # another worker took the sample over; its completion counts
            logger.warning("worker %s lost the lease of sample %s", worker, sample.id)
        else:
            completed.append(diagnostics)

    renewing = asyncio.create_task(_renew(queue, run_id, worker))
    running: set[asyncio.Task[None]] = set()
    try:
        while True:
            # a pipeline, not batches: as a sample ends, the freed slot is leased again, so one slow sample
            # never holds the others' slots idle
            free = size - len(running)
            ids = await asyncio.to_thread(queue.claim, run_id, worker, free) if free else []
            if ids:
                samples = await asyncio.to_thread(store.get_samples, run_id, ids)
                running.update(asyncio.create_task(one(sample)) for sample in samples)
            if not running:
                if (await asyncio.to_thread(queue.counts, run_id)).open == 0:
                    return completed
                await asyncio.sleep(min(1.0, queue.lease_s / 4))  # others hold the rest: theirs may run out
                continue
            finished, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            for task in finished:
                task.result()  # a store failure in a completion stops the worker; its leases run out
    finally:
        for task in (*running, renewing):
            task.cancel()
        await asyncio.gather(*running, renewing, return_exceptions=True)
