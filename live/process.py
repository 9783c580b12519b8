"""The live evaluator's worker process: the evaluation of captured requests off the app's interpreter.

The app's process starts `python -m ragcourt.live.process` (a fresh interpreter: nothing of the app is
imported again, unlike multiprocessing's spawn) and talks to it over its stdin/stdout in length-prefixed
pickle frames. To the worker: the settings, then one CapturedRequest per sampled request, a pair of booleans
(diagnostics, prompt) whenever what the app waits for changes (see `Listeners`), then None (stop).
From it: ("ready", None) or ("error", text), then per request ("started", None), ("feedback", posted or None)
and ("finished", (ok, diagnostics JSON or None while the app wants none)); ("stopped", None) last. The app's
process keeps every count (live.evaluator.LiveEvaluator); this module only moves requests there and events back.
A third pipe, the Doorbell, says when the worker should read the requests: when the app starts to wait on a model.

What the app's process pays per sampled request, in the thread that finished it, is appending it to a list
(bench/live_overhead.py): the HandOff sends the requests it holds in batches, at the app's first model call
INTAKE_BATCH_S after the oldest of them (or within INTAKE_POLL_S more without one), each pickled in its own frame,
in one non-blocking write and one ring; no thread is woken per request, in the app's process or in the worker's.
A thread writes only what a full pipe did not take. The worker runs at the lowest CPU priority
(`run_in_background`) and writes its events in batches (EventBatch): while nothing in the app waits on them, twice
a second, so the app's reader thread wakes twice a second rather than once per request.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import functools
import logging
import os
import pickle
import select
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol

from ragcourt.schema import SampleDiagnostics, SampleStatus
from ragcourt.schema.config import EvalConfig

if TYPE_CHECKING:
    from ragcourt.live.engine import CapturedRequest


class WorkerCounts(Protocol):
    """What the worker's events are told to: the live evaluator's counts (live.evaluator.LiveEvaluator)."""

    def hand_off_failed(self, requests: int) -> None: ...

    def worker_started_one(self) -> None: ...

    def worker_feedback(self, posted: int | None) -> None: ...

    def worker_finished_one(self, ok: bool,
                            diagnostics: SampleDiagnostics | Callable[[], SampleDiagnostics] | None) -> None: ...

    def worker_stopped(self) -> None: ...


logger = logging.getLogger("ragcourt.live")
HEADER = struct.Struct(">I")
WORKER_NICENESS = 19  # the lowest priority: see run_in_background()
STARTED_DELAY_S = 0.1  # see EventBatch
EVENT_DELAY_S = 0.5  # see EventBatch
INTAKE_POLL_S = 1.0  # see HandOff
INTAKE_BATCH_S = 0.5  # see HandOff
PIPE_BYTES = 1 << 20  # the requests pipe's buffer asked for (Linux allows up to 1 MiB unprivileged)


def frame(item: Any) -> bytes:
    data = pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL)
    return HEADER.pack(len(data)) + data


def write_frame(stream: IO[bytes], item: Any) -> None:
    stream.write(frame(item))
    stream.flush()


def read_exactly(stream: IO[bytes], size: int) -> bytes:
    """`size` bytes (an unbuffered stream returns what the pipe holds: read on); EOFError when the pipe closed."""
    data = stream.read(size)
    while data is not None and 0 < len(data) < size:
        more = stream.read(size - len(data))
        if not more:
            break
        data += more
    if data is None or len(data) < size:
        raise EOFError
    return data


def read_frame(stream: IO[bytes]) -> Any:
    """The next item; EOFError when the other side closed the pipe."""
    size = HEADER.unpack(read_exactly(stream, HEADER.size))[0]
    return pickle.loads(read_exactly(stream, size))  # noqa: S301 - our own child process, over its private pipe


class RequestPipe:
    """The app's end of the requests pipe. `send` writes a frame without blocking, in the caller's thread; what
    a full pipe does not take waits in `pending`, and only then is the drain thread woken to write it out."""

    def __init__(self, stream: IO[bytes], *, written_later: Callable[[], None] = lambda: None) -> None:
        self.stream, self.fd = stream, stream.fileno()
        self.written_later = written_later  # called by the drain thread after each write of what had to wait
        with contextlib.suppress(OSError, AttributeError):  # a bigger buffer: a slow worker rarely fills it
            fcntl.fcntl(self.fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        os.set_blocking(self.fd, False)
        self.pending = bytearray()
        self._changed = threading.Condition()
        self._closing = self._broken = False
        self._drain = threading.Thread(target=self._drain_pending, name="ragcourt-live-drain", daemon=True)
        self._drain.start()

    def send(self, data: bytes) -> None:
        """Never blocks; a worker that is gone takes nothing (the reader thread counts what it had not done)."""
        with self._changed:
            if self._broken or self._closing:
                return
            if not self.pending:
                data = data[self._write(data):]
            if data:
                self.pending += data
                self._changed.notify()

    def close(self, last: bytes) -> None:
        """Send `last`, then close the pipe once everything before it is written."""
        self.send(last)
        with self._changed:
            self._closing = True
            self._changed.notify()

    def join(self, timeout: float) -> None:
        self._drain.join(timeout)

    def _write(self, data: bytes | bytearray) -> int:
        """Bytes the pipe took now (called with the lock held)."""
        try:
            return os.write(self.fd, data)
        except BlockingIOError:
            return 0
        except OSError:  # the worker died: the reader thread counts what it had not evaluated
            self._broken = True
            self.pending.clear()
            logger.warning("live evaluation: the worker process stopped reading")
            return len(data)

    def _drain_pending(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self.pending or self._closing or self._broken)
                if not self.pending:  # closing or broken, and nothing left to write
                    break
            select.select([], [self.fd], [])  # until the worker has read some: the pipe takes more
            with self._changed:
                del self.pending[:self._write(self.pending)]
            self.written_later()
        with contextlib.suppress(OSError):
            self.stream.close()


# (diagnostics, prompt): the app wants each result's diagnostics (an on_result callback or a stream() reader
# takes them), and wants the events without delay (the same, or a flush() waiting on the counts).
Listeners = tuple[bool, bool]


class Doorbell:
    """The app's end of the doorbell pipe: one byte tells the worker to read the requests pipe now (see HandOff)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        os.set_blocking(fd, False)

    def ring(self) -> None:
        with contextlib.suppress(OSError):  # full: the worker has not read the rings before, which say the same
            os.write(self.fd, b"\0")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)


class HandOff:
    """The app's side of the hand-off: when captured requests go to the worker, and the doorbell with them.

    A request the app finished waits here as it was captured: the app's thread that finished it appends it to a
    list and returns. The held requests go together, each pickled in its own frame, in one write to the requests
    pipe and one ring of the doorbell, when the app starts to wait on a chat model (the handler's
    on_chat_model_start: `app_waits`) at least `batch_s` after the oldest of them was added. So the worker takes up
    and evaluates requests while the app waits on its model, not in the moment after the app's request ended: then
    the app starts its next request and the threads it runs on, and a background process that is runnable then, even
    at idle priority, makes a thread the app starts wait for a scheduler tick (docs/BENCHMARKS.md, "Live traffic").
    And it does so once for several requests: the pickling, the write and the ring run on caches that the app's
    wait on its model has left cold (each costs there ten times what it costs in a loop), and each wake-up of the
    worker on the app's core evicts the app's code and data from that core's caches, which the app pays for in its
    next request; batched, the app pays once per batch, not once per request.

    Without a model call, a thread sends what waits `batch_s` or longer every `poll_s`. While the app waits on the
    worker (`prompt`: flush(), on_result or a stream() reader), every request goes at once. A request that does not
    pickle goes to `unsendable` (counted by the evaluator) and never reaches the pipe.
    """

    def __init__(self, requests: RequestPipe, bell: Doorbell, *, batch_s: float, poll_s: float,
                 unsendable: Callable[[int], None], prompt: bool = False,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.requests, self.bell, self.batch_s, self.clock = requests, bell, batch_s, clock
        self.unsendable, self.prompt = unsendable, prompt
        self._lock = threading.Lock()
        self._held: list[CapturedRequest] = []
        self._oldest: float | None = None  # when the oldest held request was added
        self._closed = threading.Event()
        self._timer = threading.Thread(target=self._send_overdue, args=(poll_s,), name="ragcourt-live-hand-off",
                                       daemon=True)
        self._timer.start()

    def add(self, captured: CapturedRequest) -> None:
        with self._lock:
            self._held.append(captured)
            if self._oldest is None:
                self._oldest = self.clock()
        if self.prompt:
            self.send_held()

    def app_waits(self) -> None:
        oldest = self._oldest  # read unlocked: a request added meanwhile waits for the next call or the timer
        if oldest is not None and self.clock() - oldest >= self.batch_s:
            self.send_held()

    def set_prompt(self, prompt: bool) -> None:
        self.prompt = prompt
        if prompt:
            self.send_held()

    def send_held(self, last: bytes = b"") -> None:
        """Send what is held, then `last` (a frame of the app's own), in one write; ring once."""
        with self._lock:
            held, self._held, self._oldest = self._held, [], None
            frames, failed = [], 0
            for captured in held:
                try:
                    frames.append(frame(captured))
                except Exception:  # noqa: BLE001 - a document's metadata that does not pickle: never the app's
                    logger.warning("live evaluation: a sampled request could not be handed to the worker",
                                   exc_info=True)
                    failed += 1
            if frames or last:
                self.requests.send(b"".join(frames) + last)
        if failed:
            self.unsendable(failed)
        if frames or last:
            self.bell.ring()

    def close(self, last: bytes) -> None:
        """Send what is held and `last`, then close the requests pipe once all is written."""
        self._closed.set()
        self.send_held()
        self.requests.close(last)
        self.bell.ring()

    def _send_overdue(self, poll_s: float) -> None:
        while not self._closed.wait(poll_s):
            oldest = self._oldest
            if oldest is not None and self.clock() - oldest >= self.batch_s:
                self.send_held()


class WorkerProcess:
    """The app-side end: requests go out through a HandOff (a RequestPipe and a Doorbell); a reader thread applies
    the worker's events to the evaluator's counts. `send` never waits on the pipe or the worker."""

    def __init__(self, evaluator: WorkerCounts, process: subprocess.Popen[bytes], bell: Doorbell, *,
                 prompt: bool) -> None:
        assert process.stdin is not None
        self.evaluator, self.process = evaluator, process
        self.hand_off = HandOff(RequestPipe(process.stdin, written_later=bell.ring), bell, batch_s=INTAKE_BATCH_S,
                                poll_s=INTAKE_POLL_S, unsendable=evaluator.hand_off_failed, prompt=prompt)
        self._reader = threading.Thread(target=self._read, name="ragcourt-live-reader", daemon=True)
        self._stopped = False

    @classmethod
    def start(cls, evaluator: WorkerCounts, *, home: Path, run_id: str, config: EvalConfig, app_name: str,
              langsmith_feedback: bool, listeners: Listeners) -> WorkerProcess:
        """Start the worker and wait until it is ready (RuntimeError with its reason when it could not start)."""
        bell_out, bell_in = os.pipe()
        try:
            process = subprocess.Popen([sys.executable, "-m", "ragcourt.live.process"],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, pass_fds=(bell_out,))
        except BaseException:
            os.close(bell_in)
            raise
        finally:
            os.close(bell_out)  # the worker's copy is its own
        bell = Doorbell(bell_in)
        assert process.stdin is not None and process.stdout is not None
        try:
            write_frame(process.stdin, {"home": str(home), "run_id": run_id, "config": config.model_dump_json(),
                                        "app_name": app_name, "langsmith_feedback": langsmith_feedback,
                                        "listeners": listeners, "doorbell": bell_out})
            kind, detail = read_frame(process.stdout)
        except (EOFError, OSError) as error:
            kind, detail = "error", f"the worker process ended ({type(error).__name__})"
        if kind != "ready":
            process.kill()
            process.wait()
            bell.close()
            raise RuntimeError(detail)
        worker = cls(evaluator, process, bell, prompt=listeners[1])
        worker._reader.start()
        return worker

    def send(self, captured: CapturedRequest) -> None:
        if self._stopped:
            raise RuntimeError("the live worker process is stopping")
        self.hand_off.add(captured)

    def app_waits(self) -> None:
        """The app starts to wait on a model: the moment to hand over what it holds (see HandOff)."""
        self.hand_off.app_waits()

    def listen(self, listeners: Listeners) -> None:
        """What the app waits for, from now on (requests already sent included): see `Listeners`."""
        if self._stopped:
            raise RuntimeError("the live worker process is stopping")
        self.hand_off.send_held(last=frame(listeners))
        self.hand_off.set_prompt(listeners[1])

    def stop(self, timeout: float = 30.0) -> None:
        """Ask the worker to stop (it cancels what it is still evaluating), then wait for its last event."""
        self._stopped = True
        self.hand_off.close(frame(None))
        self._reader.join(timeout)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout)
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.hand_off.requests.join(1.0)
        self.hand_off.bell.close()

    def _read(self) -> None:
        assert self.process.stdout is not None
        evaluator = self.evaluator
        try:
            while True:
                kind, detail = read_frame(self.process.stdout)
                if kind == "started":
                    evaluator.worker_started_one()
                elif kind == "feedback":
                    evaluator.worker_feedback(detail)
                elif kind == "finished":
                    ok, text = detail
                    evaluator.worker_finished_one(
                        ok, None if text is None else functools.partial(SampleDiagnostics.model_validate_json, text))
                elif kind == "stopped":
                    break
        except (EOFError, OSError):
            logger.error("live evaluation: the worker process ended unexpectedly (exit %s)", self.process.poll())
        finally:
            evaluator.worker_stopped()


# --------------------------------------------------------------------------- the worker process itself


async def serve(settings: dict[str, Any], requests: IO[bytes], events: IO[bytes]) -> None:
    from ragcourt.live.engine import LiveEngine
    from ragcourt.observability.langsmith_feedback import LangSmithFeedback
    from ragcourt.observability.telemetry import Telemetry

    config = EvalConfig.model_validate_json(settings["config"])
    telemetry = Telemetry.configured(config.telemetry.otlp_endpoint)
    feedback = LangSmithFeedback.from_environment() if settings["langsmith_feedback"] else None
    engine = LiveEngine(home=Path(settings["home"]), run_id=settings["run_id"], config=config,
                        app_name=settings["app_name"], telemetry=telemetry, feedback=feedback)
    loop = asyncio.get_running_loop()
    inbox: asyncio.Queue[CapturedRequest] = asyncio.Queue()
    stop = asyncio.Event()

    diagnostics_wanted, prompt = settings["listeners"]
    out = EventBatch(events, loop, prompt=prompt)
    bell = settings["doorbell"]
    os.set_blocking(bell, False)

    def listen(listeners: Listeners) -> None:
        nonlocal diagnostics_wanted
        diagnostics_wanted = listeners[0]
        out.set_prompt(listeners[1])

    def receive() -> None:  # a thread: the pipe is read with blocking reads, when the bell rings (see HandOff)
        prompt_intake, bell_open = settings["listeners"][1], True
        with contextlib.suppress(EOFError):  # EOF: the app's process is gone, stop as if told to
            while True:
                if prompt_intake or not bell_open:  # the app waits on us (or is gone): read each request as it comes
                    select.select([requests, bell] if bell_open else [requests], [], [])
                else:  # every write to the requests pipe is followed by a ring (HandOff, RequestPipe.written_later)
                    select.select([bell], [], [])
                if bell_open:
                    with contextlib.suppress(BlockingIOError):
                        bell_open = os.read(bell, 4096) != b""  # b"": the app's end is closed
                while readable(requests):
                    item = read_frame(requests)
                    if item is None:
                        raise EOFError
                    if isinstance(item, tuple):
                        prompt_intake = item[1]
                        loop.call_soon_threadsafe(listen, item)
                    else:
                        loop.call_soon_threadsafe(inbox.put_nowait, item)
        loop.call_soon_threadsafe(stop.set)

    async def consume() -> None:
        while True:
            captured = await inbox.get()
            out.put(("started", None), urgent=False)
            diagnostics = await engine.evaluate(captured)
            if engine.feedback is not None:  # before "finished", so the app's flush() waits for it too
                out.put(("feedback", await engine.post_feedback(diagnostics)))
            text = diagnostics.model_dump_json() if diagnostics_wanted else None
            out.put(("finished", (diagnostics.status is SampleStatus.OK, text)))

    write_frame(events, ("ready", None))
    threading.Thread(target=receive, name="ragcourt-live-receive", daemon=True).start()
    consumers = [asyncio.create_task(consume()) for _ in range(config.concurrency)]
    try:
        await stop.wait()  # told to stop: what is still evaluating is cancelled (the app counts it dropped)
    finally:
        for task in consumers:
            task.cancel()
        await asyncio.gather(*consumers, return_exceptions=True)
        await loop.shutdown_default_executor()  # cancelled evaluations may still be writing in executor threads
        engine.close()
        telemetry.shutdown()
        out.flush()
        write_frame(events, ("stopped", None))


def readable(stream: IO[bytes]) -> bool:
    """The pipe holds something to read, or was closed (a read then ends in EOFError)."""
    return bool(select.select([stream], [], [], 0)[0])


class EventBatch:
    """The worker's events to the app's process, written together: the app's reader thread wakes once for all
    of them, and each wake-up takes the app's interpreter from the app's own threads for a moment.

    While the app waits on them (`prompt`: flush(), on_result or a stream() reader), what ends an evaluation
    ("finished", "feedback") is written at the end of the event loop's turn, and a "started" alone waits up to
    STARTED_DELAY_S for company (so an evaluation shorter than that wakes the app once, not twice). Otherwise every
    event waits up to EVENT_DELAY_S: the app's counts lag by as much, and the app is woken twice a second at most.
    """

    def __init__(self, stream: IO[bytes], loop: asyncio.AbstractEventLoop, *, prompt: bool) -> None:
        self.stream, self.loop, self.prompt = stream, loop, prompt
        self.batch = bytearray()
        self._soon = False
        self._later: asyncio.TimerHandle | None = None

    def put(self, event: tuple[str, Any], *, urgent: bool = True) -> None:
        self.batch += frame(event)
        if urgent and self.prompt:
            self._write_soon()
        elif self._later is None and not self._soon:
            self._later = self.loop.call_later(STARTED_DELAY_S if self.prompt else EVENT_DELAY_S, self.flush)

    def set_prompt(self, prompt: bool) -> None:
        """From now on, as `prompt` says; becoming prompt writes what waits (a flush() has begun to wait on it)."""
        self.prompt = prompt
        if prompt and self.batch:
            self._write_soon()

    def _write_soon(self) -> None:
        if not self._soon:
            self._soon = True
            self.loop.call_soon(self.flush)

    def flush(self) -> None:
        self._soon = False
        if self._later is not None:
            self._later.cancel()
            self._later = None
        if self.batch:
            self.stream.write(self.batch)
            self.stream.flush()
            self.batch.clear()


def thread_ids() -> list[int]:
    """This process's threads (Linux); elsewhere [0], the process itself."""
    try:
        return [int(name) for name in os.listdir("/proc/self/task")]
    except OSError:
        return [0]


def run_in_background() -> None:
    """This process at the lowest CPU priority: each thread it has now, and every thread it starts later (a new
    thread inherits its creator's policy and nice value)."""
    for thread_id in thread_ids():
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, thread_id, WORKER_NICENESS)
        # SCHED_IDLE: a thread of the app that wakes up takes the core from an idle-policy thread at once, but
        # from a nice-19 thread of the normal policy only when that one's time slice ends (milliseconds, under
        # load). A thread of the app that wants to run is never kept waiting for the evaluation.
        with contextlib.suppress(OSError, AttributeError):
            os.sched_setscheduler(thread_id, os.SCHED_IDLE, os.sched_param(0))


def main() -> None:
    # Background work: on a busy machine the scheduler gives the app's process (and its model calls) the cores
    # first, so the evaluation waits rather than the app's requests.
    run_in_background()
    events = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # a print anywhere in the worker goes to stderr, never into the event pipe
    sys.stdout = sys.stderr
    requests = os.fdopen(0, "rb", buffering=0)  # unbuffered: what select() sees readable is all there is
    try:
        settings = read_frame(requests)
    except EOFError:
        return
    try:
        asyncio.run(serve(settings, requests, events))
    except Exception as error:  # noqa: BLE001 - told to the app's process, which raises it from start()
        with contextlib.suppress(OSError):
            write_frame(events, ("error", f"{type(error).__name__}: {error}"))


if __name__ == "__main__":
    main()
