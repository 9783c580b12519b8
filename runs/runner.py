"""The run level: many samples through the per-sample graph with bounded concurrency.

Every finished sample is in the store the moment it finishes, and a run with the same id resumes: samples
with diagnostics are not evaluated again, and within unfinished samples stored verdicts and the LLM cache
answer every call that already succeeded. A finished sample that holds work unscored for a transient reason
(a verdict or an answer: timeout, error; or a split the decomposer did not give) is re-opened: evaluated
again from its stored work, so only that work is asked again. Diagnostics also append to
`diagnostics.jsonl` in the run directory as they arrive, so `tail -f` (or `ragcourt watch`) follows a run.

With a Telemetry (observability.telemetry) the run, each sample, graph node and LLM call is an OpenTelemetry span.

A run's figures are those of the samples it evaluated: given samples of the same ids but other contents
(an edited dataset), the runner refuses (`SamplesChangedError`, naming them) before it writes anything.
"""

from __future__ import annotations

import asyncio
import fcntl
import itertools
import json
import logging
import os
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command

from ragcourt.graphs.sample import build_sample_graph
from ragcourt.nodes.state import EvalContext
from ragcourt.observability.telemetry import NO_TELEMETRY, Telemetry
from ragcourt.runs.gc_policy import run_collection
from ragcourt.schema import (
    NORMAL,
    Decomposition,
    DecompositionKind,
    ReviewDecision,
    RunInfo,
    Sample,
    SampleDiagnostics,
    SampleStatus,
)
from ragcourt.schema.config import Method, ReviewMode
from ragcourt.stores.checkpoints import async_saver

logger = logging.getLogger(__name__)

DIAGNOSTICS_FILE = "diagnostics.jsonl"
CHECKPOINTS_FILE = "checkpoints.sqlite"
CONFIG_FILE = "config.json"


IN_FLIGHT_PER_SLOT = 2  # samples launched per slot of the config's concurrency (the rest wait in the dataset)
RESUME_BATCH = 200  # finished samples' diagnostics read from the store at a time when a run resumes
SHOWN_CHANGED = 10  # changed sample ids a refusal names, of however many


class RunLockedError(RuntimeError):
    """Another live process is evaluating this run directory."""


class SamplesChangedError(ValueError):
    """Samples given under ids the run holds with other contents: the run's figures were computed on those."""

    def __init__(self, run_id: str, sample_ids: Sequence[str], dataset: str = "") -> None:
        self.run_id, self.sample_ids = run_id, tuple(sample_ids)
        shown = ", ".join(self.sample_ids[:SHOWN_CHANGED]) + (", ..." if len(self.sample_ids) > SHOWN_CHANGED else "")
        super().__init__(
            f"run {run_id} evaluated other contents of {len(self.sample_ids)} of these samples ({shown}): its "
            f"figures are not theirs. Evaluate the changed samples in a new run with `ragcourt rerun --changed "
            f"{run_id} --dataset {dataset or 'FILE'}` (the others are copied), or give another run id")


@dataclass(frozen=True)
class ResumePlan:
    """What a run takes from the store as it starts: `stored`, finished samples shown as they are; `reopened`,
    finished samples with work unscored for a transient reason, evaluated again so that only it is asked."""

    stored: tuple[str, ...] = ()
    reopened: tuple[str, ...] = ()


@dataclass(frozen=True)
class StoredSamples:
    """The given samples against what the run holds: `changed`, ids it holds with other contents (in the given
    order); `kept`, ids it holds as they are now written (the others, samples it does not hold or holds in an
    older serialisation of the same contents, are to be written: Runner.save_unsaved). Ids, not samples: a dataset
    read as a stream is never held, and a new run keeps none."""

    changed: tuple[str, ...]
    kept: frozenset[str]


@dataclass(frozen=True)
class RunPaths:
    run_dir: Path

    @property
    def diagnostics(self) -> Path:
        return self.run_dir / DIAGNOSTICS_FILE

    @property
    def checkpoints(self) -> Path:
        return self.run_dir / CHECKPOINTS_FILE

    @property
    def lock(self) -> Path:
        return self.run_dir / "run.lock"


class RunLock:
    """An exclusive lock on the run directory's lock file: a second process (or a second runner in this one)
    is refused while the first holds it. The kernel (flock) releases it when its holder dies, even by
    kill -9, so a killed run's lock is taken over by the next one; the file holds the holder's pid for the
    message only, so an empty or garbled file (a process killed while writing it) is no obstacle either.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def __enter__(self) -> RunLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.read(fd, 32).decode("ascii", "replace").strip() or "unknown"
                os.close(fd)
                raise RunLockedError(
                    f"run directory {self.path.parent} is in use by process {holder}; wait for it or stop it"
                ) from None
            # The holder we waited on may have unlinked the file on its way out: a lock on a file that is no
            # longer at the path guards nothing, so take the lock again on the file that is there now.
            try:
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        self.path.unlink(missing_ok=True)  # while still held, so nobody locks the file being removed
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def batches(samples: Iterable[Sample], size: int) -> Iterator[list[Sample]]:
    """The samples `size` at a time, in order (the last batch may be shorter)."""
    iterator = iter(samples)
    while batch := list(itertools.islice(iterator, size)):
        yield batch


def _drop_torn_line(path: Path) -> None:
    """Cut a last line that a kill left without its newline (the file ends mid-record)."""
    with path.open("rb+") as handle:
        end = handle.seek(0, os.SEEK_END)
        if end == 0:
            return
        handle.seek(end - 1)
        if handle.read(1) == b"\n":
            return
        position = end
        while position > 0:  # back to the last newline, a block at a time
            start = max(0, position - 65536)
            handle.seek(start)
            block = handle.read(position - start)
            newline = block.rfind(b"\n")
            if newline >= 0:
                handle.truncate(start + newline + 1)
                return
            position = start
        handle.truncate(0)


def _sample_id_of(line: str) -> str | None:
    try:
        return str(json.loads(line)["sample_id"])
    except (ValueError, KeyError, TypeError):  # not a line this runner wrote: it names no sample
        return None


def _stream_line(diagnostics: SampleDiagnostics) -> str:
    return diagnostics.stream_line()


def _thread(run_id: str, sample_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": f"{run_id}:{sample_id}"}}


class Runner:
    """Evaluates samples of one run. Build it with an EvalContext from the composition root, and the run's
    telemetry (spans of the run, its samples, nodes and LLM calls; none by default)."""

    def __init__(self, context: EvalContext, run_id: str, run_dir: Path, telemetry: Telemetry = NO_TELEMETRY) -> None:
        self.context, self.run_id, self.paths = context, run_id, RunPaths(run_dir)
        self.telemetry = telemetry
        self._pinned_samples: set[str] | None = None  # samples with splits pinned in this run, read once

    async def astream(
        self, samples: Iterable[Sample], *, dataset: str = "", system: str = "", rescore: bool = False,
        on_start: Callable[[ResumePlan], None] | None = None,
    ) -> AsyncIterator[SampleDiagnostics]:
        """Yield each sample's diagnostics as it finishes (already finished ones first, from the store).

        samples: a sequence, or an iterable read afresh each time it is iterated (data.reading.SampleStream: a
        dataset read from its file, never held). It is iterated a few times, a batch or one sample at a time, and
        only a window of samples is in flight at once, so the run's memory does not grow with the dataset.

        rescore: evaluate finished samples again too (from stored work: used after reviews).
        on_start: told what comes from the store, once the run is locked and its samples checked, before the
        first diagnostics (so nothing is announced for a run that is refused).
        Raises RunLockedError, or SamplesChangedError when samples the run holds are given with other contents.
        """
        async with AsyncExitStack() as stack:
            stack.enter_context(self._lock())
            stack.enter_context(run_collection())  # the GC policy of a run: runs.gc_policy
            stack.enter_context(self.telemetry.run_span(self.run_id, dataset=dataset,
                                                        system=system or self.context.system.name))
            async for diagnostics in self._stream(stack, samples, dataset, system, rescore, on_start):
                yield diagnostics

    @contextmanager
    def _lock(self) -> Iterator[None]:
        """The run's file lock; with a PostgreSQL store, an advisory lock in the database instead, which holds
        across machines (released by the server when its holder's connection ends, even by kill -9)."""
        store = self.context.store
        if store.url is None:
            with RunLock(self.paths.lock):
                yield
            return
        with store.dialect.run_lock(f"ragcourt-run:{self.run_id}") as held:
            if not held:
                raise RunLockedError(f"run {self.run_id} is in use by another process on {store.location}; "
                                     "wait for it or stop it")
            yield

    def register(self, *, dataset: str = "", system: str = "") -> None:
        """Record the run and the configuration it used, once (a resumed run keeps its first record)."""
        if self.context.store.get_run(self.run_id) is None:
            self.context.store.put(RunInfo(
                run_id=self.run_id, dataset=dataset, system=system or self.context.system.name,
                config=self.context.config.model_dump(mode="json"), collection=self.context.collection,
            ))
        self.paths.run_dir.mkdir(parents=True, exist_ok=True)
        (self.paths.run_dir / CONFIG_FILE).write_text(self.context.config.model_dump_json(indent=2))

    async def _stream(
        self, stack: AsyncExitStack, samples: Iterable[Sample], dataset: str, system: str, rescore: bool,
        on_start: Callable[[ResumePlan], None] | None,
    ) -> AsyncIterator[SampleDiagnostics]:
        store = self.context.store
        held = await asyncio.to_thread(self.compare_with_store, samples)
        if held.changed:  # before anything is written: the run stays as it was, with the inputs it was computed on
            raise SamplesChangedError(self.run_id, held.changed, dataset)
        self.register(dataset=dataset, system=system)
        await asyncio.to_thread(self.save_unsaved, samples, held)  # a resume rewrites none it holds
        del held  # a resume's ids, not kept through the run
        # Ids only: a finished sample's record (mostly its alignment graph) is read when it is shown, a batch at a time.
        completed = set() if rescore else store.finished_sample_ids(self.run_id)
        reopened = await asyncio.to_thread(self._with_transient_failures, samples, completed) if completed else set()
        done = completed - reopened
        self._complete_stream(completed)
        shown, reopened_in_order = (await asyncio.to_thread(self._in_order, samples, done, reopened)
                                    if completed else ([], []))
        if on_start is not None:
            on_start(ResumePlan(stored=tuple(shown), reopened=tuple(reopened_in_order)))
        for start in range(0, len(shown), RESUME_BATCH):
            batch = shown[start : start + RESUME_BATCH]
            stored = {d.sample_id: d for d in await asyncio.to_thread(store.diagnostics_of_samples, self.run_id, batch)}
            for sample_id in batch:
                yield stored[sample_id]
        todo = (s for s in samples if s.id not in done)
        checkpointer = None
        if self.context.config.review_mode is ReviewMode.INLINE:
            checkpointer = await stack.enter_async_context(async_saver(self.context.store.url, self.paths.checkpoints))
        graph = build_sample_graph(checkpointer, self.telemetry.wrap_node)
        limit = asyncio.Semaphore(self.context.config.concurrency)

        async def one(sample: Sample) -> SampleDiagnostics | None:
            async with limit:
                return await self.evaluate_one(graph, sample)

        # Tasks made here, in the dataset's order, so the semaphore admits the samples in it (as_completed would
        # make them from a set, in no order); a consumer that stops early stops the samples still running. Only
        # running ones are held: a finished task holds its sample's diagnostics, graph and all.
        running: set[asyncio.Task[SampleDiagnostics | None]] = set()
        finished: asyncio.Queue[asyncio.Task[SampleDiagnostics | None]] = asyncio.Queue()

        def on_done(task: asyncio.Task[SampleDiagnostics | None]) -> None:
            running.discard(task)
            finished.put_nowait(task)

        def launch(sample: Sample) -> None:  # a function, so no loop variable holds the last task to the end
            task = asyncio.ensure_future(one(sample))
            running.add(task)
            task.add_done_callback(on_done)

        # A window of samples in flight, the next launched as one finishes: the semaphore still admits them in the
        # dataset's order, and no more than the window is held (200,000 tasks made at once held every sample).
        window, launched, consumed = IN_FLIGHT_PER_SLOT * self.context.config.concurrency, 0, 0
        for sample in itertools.islice(todo, window):
            launch(sample)
            launched += 1
        try:
            while consumed < launched:
                task = await finished.get()
                consumed += 1
                following = next(todo, None)
                if following is not None:
                    launch(following)
                    launched += 1
                diagnostics = task.result()
                if diagnostics is not None:
                    yield diagnostics
        finally:
            for task in list(running):
                task.cancel()
        if rescore:  # the replay appended every sample again: the file lists each sample once, as it is now
            await asyncio.to_thread(self._rewrite_stream, [s.id for s in samples])
        elif reopened:  # so were the re-opened ones: once each, the run's other samples kept where they were
            await asyncio.to_thread(self._rewrite_stream, self._listed_ids())

    def compare_with_store(self, samples: Iterable[Sample]) -> StoredSamples:
        """Which of `samples` the run holds with other contents, and which it does not hold yet. A batch of
        stored samples is read at a time, as text: one stored as put_samples would write it now is unchanged
        without being parsed, so a resume over many samples holds no second copy of them."""
        changed: list[str] = []
        kept: set[str] = set()
        for batch in batches(samples, RESUME_BATCH):
            stored = self.context.store.sample_payloads(self.run_id, [s.id for s in batch])
            for sample in batch:
                payload = stored.get(sample.id)
                if payload is None:
                    continue
                if payload == sample.model_dump_json():
                    kept.add(sample.id)
                elif Sample.model_validate_json(payload).content_hash != sample.content_hash:
                    changed.append(sample.id)  # other contents (the same in an older form is written again)
        return StoredSamples(tuple(changed), frozenset(kept))

    def save_unsaved(self, samples: Iterable[Sample], held: StoredSamples) -> None:
        """Write the samples the run does not hold as they are (compare_with_store's), a batch at a time."""
        for batch in batches((s for s in samples if s.id not in held.kept), RESUME_BATCH):
            self.context.store.put_samples(self.run_id, batch)

    @staticmethod
    def _in_order(samples: Iterable[Sample], done: set[str], reopened: set[str]) -> tuple[list[str], list[str]]:
        """The ids of `done` and of `reopened` in the samples' order, in one pass."""
        shown: list[str] = []
        again: list[str] = []
        for sample in samples:
            if sample.id in done:
                shown.append(sample.id)
            elif sample.id in reopened:
                again.append(sample.id)
        return shown, again

    def _with_transient_failures(self, samples: Iterable[Sample], finished: set[str]) -> set[str]:
        """Finished samples holding work a later try may mend: a verdict of this run's jury or an answer unscored
        for a transient reason, or a split the sample needed but was not given (a split is pinned to the run only
        when scored, and its failure leaves no record; one that failed for a lasting reason, a parse failure,
        comes back from the LLM cache without a call)."""
        store, config = self.context.store, self.context.config
        flagged = store.transient_sample_ids(self.run_id, [judge.judge_id for judge in self.context.judges])
        pinned = store.pinned_split_kinds(self.run_id)
        answered = store.answered_sample_ids(self.run_id, NORMAL) if Method.QCARE in config.methods else set()
        given: set[str] = set()  # the finished ones among the samples (read once: they may be a stream)
        for sample in samples:
            if sample.id not in finished:
                continue
            given.add(sample.id)
            if sample.id in flagged:
                continue
            wanted = set()
            if Method.QCARE in config.methods:
                wanted.add(str(DecompositionKind.SUBQUERIES))
                if sample.id in answered:  # claims are split from a scored normal answer only
                    wanted.add(str(DecompositionKind.CLAIMS))
            if Method.ELEMENTS in config.methods and sample.reference_answer:
                wanted.add(str(DecompositionKind.ELEMENTS))
            if wanted - pinned.get(sample.id, set()):
                flagged.add(sample.id)
        return flagged & given

    async def evaluate_one(self, graph: Any, sample: Sample, resume: Any = None) -> SampleDiagnostics | None:
        """One sample through the graph; its failure is recorded, never raised. None when it stopped at an
        inline-review interrupt. The caller holds the run lock (or, like the live evaluator, owns the run)."""
        try:
            payload: Any = Command(resume=resume) if resume is not None else {
                "run_id": self.run_id, "sample": sample, "pinned_splits": await self._pinned_splits(sample.id),
            }
            with self.telemetry.sample_span(self.run_id, sample) as trace:
                state = await graph.ainvoke(payload, config=_thread(self.run_id, sample.id), context=self.context)
                trace.record(state.get("diagnostics"))
        except Exception as error:  # one sample's failure is recorded; the run goes on
            return await self.record_failure(sample.id, sample.question, error)
        if "diagnostics" not in state:
            return None
        diagnostics: SampleDiagnostics = state["diagnostics"]
        await self._append_to_stream_file(diagnostics)
        return diagnostics

    async def record_failure(self, sample_id: str, question: str, error: Exception) -> SampleDiagnostics:
        """A sample that could not be evaluated, as its record: stored and streamed like any other; never raises."""
        diagnostics = SampleDiagnostics(run_id=self.run_id, sample_id=sample_id, question=question,
                                        status=SampleStatus.FAILED, error=f"{type(error).__name__}: {error}")
        try:
            await self.context.store.aput(diagnostics)
        except Exception:  # the store itself failed: the returned record still says "failed"
            logger.exception("cannot store the failure of sample %s", sample_id)
        await self._append_to_stream_file(diagnostics)
        return diagnostics

    async def _append_to_stream_file(self, diagnostics: SampleDiagnostics) -> None:
        try:
            await asyncio.to_thread(self._append, diagnostics)
        except OSError:  # the stream file is a convenience; the store holds the record
            logger.exception("cannot append to %s", self.paths.diagnostics)

    async def _pinned_splits(self, sample_id: str) -> tuple[Decomposition, ...]:
        store = self.context.store
        if self._pinned_samples is None:
            self._pinned_samples = await store.aread(store.pinned_sample_ids, self.run_id)
        if sample_id not in self._pinned_samples:  # a new sample (every sample of a new run): no read
            return ()
        return tuple(await store.aread(store.pinned_splits, self.run_id, sample_id))

    async def resume(self, sample: Sample, decisions: Sequence[ReviewDecision]) -> SampleDiagnostics | None:
        """Resume one sample stopped at an inline-review interrupt with a person's decisions."""
        async with async_saver(self.context.store.url, self.paths.checkpoints) as checkpointer:
            graph = build_sample_graph(checkpointer, self.telemetry.wrap_node)
            return await self.evaluate_one(graph, sample, resume=[d.model_dump(mode="json") for d in decisions])

    async def pending_interrupts(self, sample: Sample) -> list[Any]:
        async with async_saver(self.context.store.url, self.paths.checkpoints) as checkpointer:
            graph = build_sample_graph(checkpointer)
            snapshot = await graph.aget_state(_thread(self.run_id, sample.id))
            return [i.value for task in snapshot.tasks for i in task.interrupts]

    def _complete_stream(self, done: set[str]) -> None:
        """A kill between a sample's commit and its line in diagnostics.jsonl leaves the line out, and one in
        the middle of the write leaves a torn last line: drop the torn line and add the finished samples the
        file lacks, so that it lists every finished sample. A kill before the rewrite that ends a run with
        re-opened samples leaves a sample listed twice: the file is written again from the store, once each."""
        path = self.paths.diagnostics
        listed: set[str | None] = set()
        if path.exists():
            _drop_torn_line(path)
            lines = 0
            with path.open(encoding="utf-8") as handle:  # a line at a time: the file holds every alignment graph
                for line in handle:
                    if line.strip():
                        lines += 1
                        listed.add(_sample_id_of(line))
            if len(listed) < lines:
                self._rewrite_stream(self._listed_ids())
        missing = done - listed
        if missing:  # read only the records the file lacks (a kill leaves few), in the order the store holds them
            for diagnostics in self.context.store.diagnostics_of_samples(self.run_id, sorted(missing)):
                self._append(diagnostics)

    def _listed_ids(self) -> list[str]:
        """The samples diagnostics.jsonl lists, each once, in the order they first appear."""
        with self.paths.diagnostics.open(encoding="utf-8") as handle:
            ids = dict.fromkeys(_sample_id_of(line) for line in handle if line.strip())
        return [i for i in ids if i is not None]

    def _rewrite_stream(self, sample_ids: Sequence[str]) -> None:
        path = self.paths.diagnostics
        partial = path.with_name(path.name + ".partial")
        with partial.open("w", encoding="utf-8") as handle:
            for start in range(0, len(sample_ids), RESUME_BATCH):  # a batch of records in memory at a time
                batch = sample_ids[start : start + RESUME_BATCH]
                stored = {d.sample_id: d for d in self.context.store.diagnostics_of_samples(self.run_id, batch)}
                for sample_id in batch:
                    if sample_id in stored:
                        handle.write(_stream_line(stored[sample_id]))
        os.replace(partial, path)  # a kill leaves the old file whole, never a half-written one

    def _append(self, diagnostics: SampleDiagnostics) -> None:
        with self.paths.diagnostics.open("a", encoding="utf-8") as handle:
            handle.write(_stream_line(diagnostics))
