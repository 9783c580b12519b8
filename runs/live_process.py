"""The live evaluator's worker process: the evaluation of captured requests off the app's interpreter.

The app's process starts `python -m ragcourt.runs.live_process` (a fresh interpreter: nothing of the app is
imported again, unlike multiprocessing's spawn) and talks to it over its stdin/stdout in length-prefixed
pickle frames. To the worker: the settings, then one CapturedRequest per sampled request, then None (stop).
From it: ("ready", None) or ("error", text), then per request ("started", None), ("feedback", posted or None)
and ("finished", (ok, diagnostics JSON)); ("stopped", None) last. The app's process keeps every count
(runs.live.LiveEvaluator); this module only moves requests there and events back.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import pickle
import queue
import struct
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ragcourt.schema import SampleDiagnostics, SampleStatus
from ragcourt.schema.config import EvalConfig

if TYPE_CHECKING:
    from ragcourt.runs.live import LiveEvaluator
    from ragcourt.runs.live_engine import CapturedRequest

logger = logging.getLogger("ragcourt.live")
HEADER = struct.Struct(">I")
WORKER_NICENESS = 19  # the lowest priority: see main()


def write_frame(stream: IO[bytes], item: Any) -> None:
    data = pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(HEADER.pack(len(data)) + data)
    stream.flush()


def read_frame(stream: IO[bytes]) -> Any:
    """The next item; EOFError when the other side closed the pipe."""
    header = stream.read(HEADER.size)
    if len(header) < HEADER.size:
        raise EOFError
    size = HEADER.unpack(header)[0]
    data = stream.read(size)
    if len(data) < size:
        raise EOFError
    return pickle.loads(data)  # noqa: S301 - our own child process, over its private pipe


class WorkerProcess:
    """The app-side end: a feeder thread writes queued requests to the worker, a reader thread applies its events
    to the evaluator's counts. `send` only puts on a queue: it never waits on the pipe or the worker."""

    def __init__(self, evaluator: LiveEvaluator, process: subprocess.Popen[bytes]) -> None:
        self.evaluator, self.process = evaluator, process
        self._outbox: queue.SimpleQueue[CapturedRequest | None] = queue.SimpleQueue()
        self._feeder = threading.Thread(target=self._feed, name="ragcourt-live-feeder", daemon=True)
        self._reader = threading.Thread(target=self._read, name="ragcourt-live-reader", daemon=True)
        self._stopped = False

    @classmethod
    def start(cls, evaluator: LiveEvaluator, *, home: Path, run_id: str, config: EvalConfig, app_name: str,
              langsmith_feedback: bool) -> WorkerProcess:
        """Start the worker and wait until it is ready (RuntimeError with its reason when it could not start)."""
        process = subprocess.Popen([sys.executable, "-m", "ragcourt.runs.live_process"],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert process.stdin is not None and process.stdout is not None
        try:
            write_frame(process.stdin, {"home": str(home), "run_id": run_id, "config": config.model_dump_json(),
                                        "app_name": app_name, "langsmith_feedback": langsmith_feedback})
            kind, detail = read_frame(process.stdout)
        except (EOFError, OSError) as error:
            kind, detail = "error", f"the worker process ended ({type(error).__name__})"
        if kind != "ready":
            process.kill()
            process.wait()
            raise RuntimeError(detail)
        worker = cls(evaluator, process)
        worker._feeder.start()
        worker._reader.start()
        return worker

    def send(self, captured: CapturedRequest) -> None:
        if self._stopped:
            raise RuntimeError("the live worker process is stopping")
        self._outbox.put(captured)

    def stop(self, timeout: float = 30.0) -> None:
        """Ask the worker to stop (it cancels what it is still evaluating), then wait for its last event."""
        self._stopped = True
        self._outbox.put(None)
        self._reader.join(timeout)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout)
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._feeder.join(1.0)

    def _feed(self) -> None:
        assert self.process.stdin is not None
        try:
            while True:
                item = self._outbox.get()
                write_frame(self.process.stdin, item)
                if item is None:
                    break
            self.process.stdin.close()
        except OSError:  # the worker died: the reader counts what it had not evaluated
            logger.warning("live evaluation: the worker process stopped reading")

    def _read(self) -> None:
        assert self.process.stdout is not None
        evaluator = self.evaluator
        try:
            while True:
                kind, detail = read_frame(self.process.stdout)
                if kind == "started":
                    evaluator._worker_started_one()
                elif kind == "feedback":
                    evaluator._worker_feedback(detail)
                elif kind == "finished":
                    ok, text = detail
                    evaluator._worker_finished_one(ok, functools.partial(SampleDiagnostics.model_validate_json, text))
                elif kind == "stopped":
                    break
        except (EOFError, OSError):
            logger.error("live evaluation: the worker process ended unexpectedly (exit %s)", self.process.poll())
        finally:
            evaluator._worker_stopped()


# --------------------------------------------------------------------------- the worker process itself


async def serve(settings: dict[str, Any], requests: IO[bytes], events: IO[bytes]) -> None:
    from ragcourt.runs.langsmith_feedback import LangSmithFeedback
    from ragcourt.runs.live_engine import LiveEngine
    from ragcourt.runs.telemetry import Telemetry

    config = EvalConfig.model_validate_json(settings["config"])
    telemetry = Telemetry.configured(config.telemetry.otlp_endpoint)
    feedback = LangSmithFeedback.from_environment() if settings["langsmith_feedback"] else None
    engine = LiveEngine(home=Path(settings["home"]), run_id=settings["run_id"], config=config,
                        app_name=settings["app_name"], telemetry=telemetry, feedback=feedback)
    loop = asyncio.get_running_loop()
    inbox: asyncio.Queue[CapturedRequest] = asyncio.Queue()
    stop = asyncio.Event()

    def receive() -> None:  # a thread: the pipe is read with blocking reads
        with contextlib.suppress(EOFError):  # EOF: the app's process is gone, stop as if told to
            while (item := read_frame(requests)) is not None:
                loop.call_soon_threadsafe(inbox.put_nowait, item)
        loop.call_soon_threadsafe(stop.set)

    async def consume() -> None:
        while True:
            captured = await inbox.get()
            write_frame(events, ("started", None))
            diagnostics = await engine.evaluate(captured)
            if engine.feedback is not None:  # before "finished", so the app's flush() waits for it too
                write_frame(events, ("feedback", await engine.post_feedback(diagnostics)))
            write_frame(events, ("finished", (diagnostics.status is SampleStatus.OK, diagnostics.model_dump_json())))

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
        write_frame(events, ("stopped", None))


def main() -> None:
    # Background work: on a busy machine the scheduler gives the app's process (and its model calls) the cores
    # first, so the evaluation waits rather than the app's requests.
    with contextlib.suppress(OSError):
        os.nice(WORKER_NICENESS)
    events = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # a print anywhere in the worker goes to stderr, never into the event pipe
    sys.stdout = sys.stderr
    requests = sys.stdin.buffer
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
