"""Live-traffic evaluation: attached to a running LangChain app, evaluate a sampled share of its requests.

    live = LiveEvaluator(home="ragcourt-runs", run_id="live-prod", sample_rate=0.1, config=judge_config)
    with live:
        answer = chain.invoke(question, config={"callbacks": [live.handler]})   # per request, or
        chain = chain.with_config(callbacks=[live.handler])                       # once for the app

What it evaluates: from each sampled request, the question (the root chain's input), the documents of
every retriever run under it (or the "context" Documents of its output) and the answer (its output), as a
precomputed sample. Live traffic has no reference answers, so only the reference-free checks run
(Q-CARE: sub-queries, claims, C-Prec / C-nDCG, completeness, conciseness, verifiableness), through the
same per-sample graph as a batch run. Diagnostics go to the record store, to `diagnostics.jsonl` of the
run directory (so `ragcourt watch RUN` follows it), to `on_result`, and to every `stream()` iterator.

How it stays out of the app's way:
- The handler's callbacks copy plain values and count; their only I/O is non-blocking pipe writes (the
  hand-off, the doorbell); no LLM call, no waiting. It runs inline (`run_inline`), so an async app does not
  pay an executor hop per callback.
- Every callback catches its own exceptions (counted as `handler_errors`): nothing raises into the app.
- Evaluation runs in a worker PROCESS (live.process) fed through a pipe: graph steps, pydantic,
  JSON, SQLite writes and the judge's HTTP client never hold the app's interpreter. The thread that finishes
  a request captures plain values (no Chunk is validated or hashed there) and appends them to a list. The
  requests go in batches: an app's chat model call (`on_chat_model_start`) half a second or more after the oldest
  one pickles them, writes them to the pipe without blocking and rings the worker's doorbell, so the evaluation
  runs while the app waits on its model, not in the moment its next request starts its threads, and the app
  pays for the cold caches of the hand-off and of the worker's wake-up once per batch, not per request
  (live.process.HandOff; within 1.5 s at the latest without a model call). A reader thread
  applies the worker's events to the counts; the worker sends them in batches, twice a second while nothing
  waits on them (so `counts()` lags by up to half a second), at once while `flush()`, `on_result` or a
  `stream()` reader does, and sends the diagnostics only to those two.
  `worker="thread"` evaluates in one background thread of the app's process instead (its own event loop):
  an asyncio task on the app's loop would delay the app's requests and would not exist for a sync app.
  A thread costs the app a few % of latency (bench/live_overhead.py); it is what runs when you pass a
  Telemetry or a LangSmithFeedback of your own, objects that live in your process (worker="auto").
- The queue is bounded (`max_queue` waiting requests; `config.concurrency` more are evaluated at once).
  A sampled request that finds it full is dropped, counted, and logged (warning on the 1st, 10th, 100th,
  ... drop). `counts()` always adds up: see `LiveCounts.accounted`.

Attach the handler at the outermost call of the app: a request is a run without a parent run.

Traces out: while LangSmith tracing is on, each evaluated request's figures are posted as LangSmith feedback on
the request's traced run (observability.langsmith_feedback; `langsmith_feedback=False` turns it off), and with an OTLP
endpoint configured (`telemetry.otlp_endpoint` of the config or $OTEL_EXPORTER_OTLP_ENDPOINT) each evaluation
is a trace of spans: the sample, its graph nodes, its LLM calls (observability.telemetry).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import math
import random
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Self

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from pydantic import BaseModel, ConfigDict

from ragcourt.live.engine import CapturedRequest, LiveEngine
from ragcourt.live.process import Listeners, WorkerProcess
from ragcourt.observability.langsmith_feedback import LangSmithFeedback
from ragcourt.observability.telemetry import Telemetry
from ragcourt.runs.runner import RunLock, RunPaths
from ragcourt.runs.workspace import Workspace
from ragcourt.schema import ConditionKind, SampleDiagnostics, SampleStatus
from ragcourt.schema.config import EvalConfig, Method, ReviewMode
from ragcourt.schema.inputs import id_problem
from ragcourt.systems import answer_text, document_parts

logger = logging.getLogger("ragcourt.live")

QUESTION_KEYS = ("question", "input", "query")  # where a dict input usually keeps the question
ANSWER_KEYS = ("answer", "output", "result", "text")  # where a dict output usually keeps the answer
CONTEXT_KEYS = ("context", "documents", "source_documents")


def live_config(**changes: Any) -> EvalConfig:
    """An EvalConfig for live traffic: Q-CARE only (no references), the normal condition, deferred review."""
    return EvalConfig(methods=(Method.QCARE,), **changes)


def check_live_config(config: EvalConfig) -> EvalConfig:
    """Live traffic has one answer per request and no references: refuse what cannot be evaluated."""
    problems = []
    if tuple(config.methods) != (Method.QCARE,):
        problems.append(f"methods must be [qcare] (live traffic has no reference answers), got "
                        f"{[str(m) for m in config.methods]}")
    if tuple(config.conditions) != (ConditionKind.NORMAL,) or config.perturbations.kinds:
        problems.append("only the normal condition exists for a captured request (no conditions, no perturbations)")
    if config.review_mode is not ReviewMode.DEFERRED:
        problems.append("review_mode must be deferred (nobody waits on live traffic)")
    if problems:
        raise ValueError("live evaluation: " + "; ".join(problems))
    return config


class LiveCounts(BaseModel):
    """What happened to every request the handler saw. `accounted` checks that the parts add up."""

    model_config = ConfigDict(frozen=True)

    requests: int = 0  # root runs the handler saw start
    not_sampled: int = 0  # left out by the sampling share
    app_running: int = 0  # sampled, the app has not finished them yet
    app_errors: int = 0  # sampled, the app raised: nothing to evaluate
    uncapturable: int = 0  # sampled, but no question or no answer could be read
    dropped_queue_full: int = 0  # sampled and captured, but the queue was full
    dropped_closed: int = 0  # captured after the evaluator stopped
    queued: int = 0
    evaluating: int = 0
    evaluated: int = 0  # diagnostics with status ok
    failed: int = 0  # the evaluation raised: diagnostics with status failed
    dropped_at_close: int = 0  # still queued or running when close() stopped waiting
    handler_errors: int = 0  # exceptions caught in callbacks (never raised into the app)
    result_callback_errors: int = 0
    stream_dropped: int = 0  # results a slow stream() reader did not take in time
    feedback_posted: int = 0  # LangSmith feedback items posted (one per figure of an evaluated request)
    feedback_errors: int = 0  # evaluated requests whose feedback LangSmith did not take (logged)

    @property
    def dropped(self) -> int:
        return self.dropped_queue_full + self.dropped_closed + self.dropped_at_close

    @property
    def accounted(self) -> bool:
        return self.requests == (
            self.not_sampled + self.app_running + self.app_errors + self.uncapturable + self.dropped
            + self.queued + self.evaluating + self.evaluated + self.failed
        )

    def describe(self) -> str:
        return (f"{self.requests} requests: {self.not_sampled} not sampled, {self.evaluated} evaluated, "
                f"{self.failed} failed, {self.dropped} dropped (queue full {self.dropped_queue_full}, "
                f"at close {self.dropped_at_close}, after close {self.dropped_closed}), "
                f"{self.queued + self.evaluating} pending, {self.app_errors} app errors, "
                f"{self.uncapturable} uncapturable")


@dataclass
class _Subscriber:
    loop: asyncio.AbstractEventLoop
    queue: asyncio.Queue[SampleDiagnostics | None]


@dataclass
class _Request:
    """What the handler collects for one sampled request while the app runs it."""

    question: str | None
    documents: list[Any] = field(default_factory=list)
    children: list[uuid.UUID] = field(default_factory=list)


class LiveEvaluator:
    """The background evaluation of captured requests, its bounded queue, its counts and its outputs.

    home / run_id: the workspace and run the diagnostics go to (the run directory is locked while open).
    sample_rate: share of requests evaluated, drawn with `seed`. max_queue: requests waiting at most.
    on_result: called in a thread of the evaluator with each diagnostics; its exceptions are counted, not raised.
    langsmith_feedback: the figures as LangSmith feedback on each request's run: None (default) while LangSmith
    tracing is on at start(), to $LANGSMITH_ENDPOINT; False never; or a LangSmithFeedback of your own client.
    telemetry: where the OpenTelemetry spans go; None (default): the config's or the environment's OTLP endpoint.
    worker: "process" evaluates in a worker process, "thread" in a thread of the app's process; "auto" (default)
    is "process" unless a Telemetry or LangSmithFeedback object of your own is given (it cannot cross processes).
    """

    def __init__(
        self,
        *,
        home: Path | str = Path("ragcourt-runs"),
        run_id: str = "live",
        config: EvalConfig | None = None,
        sample_rate: float = 0.1,
        max_queue: int = 100,
        seed: int | None = None,
        on_result: Callable[[SampleDiagnostics], None] | None = None,
        app_name: str = "langchain-app",
        question_key: str | None = None,
        answer_key: str | None = None,
        langsmith_feedback: LangSmithFeedback | bool | None = None,
        telemetry: Telemetry | None = None,
        worker: Literal["auto", "process", "thread"] = "auto",
    ) -> None:
        if not 0.0 <= sample_rate <= 1.0:
            raise ValueError(f"sample_rate must be in [0, 1], got {sample_rate}")
        if max_queue < 1:
            raise ValueError(f"max_queue must be at least 1, got {max_queue}")
        self.workspace = Workspace(Path(home))
        self.run_id, self.app_name = run_id, app_name
        self.config = check_live_config(config or live_config())
        self.sample_rate, self.max_queue = sample_rate, max_queue
        self.on_result = on_result
        self.handler = LiveCallbackHandler(self, question_key=question_key, answer_key=answer_key)
        self._random = random.Random(seed)
        # Reentrant: flush() holds it while it tells the worker who listens, which sends the requests held for
        # it, and one that does not pickle is counted (hand_off_failed) there.
        self._lock = threading.RLock()
        self._counts: dict[str, int] = dict.fromkeys(LiveCounts.model_fields, 0)
        self._subscribers: list[_Subscriber] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._inbox: asyncio.Queue[CapturedRequest] | None = None
        self._stopping: asyncio.Event | None = None
        self._idle = threading.Condition(self._lock)
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self._run_lock = RunLock(RunPaths(self.workspace.run_dir(run_id)).lock)
        self._accepting = False
        self._closed = False
        self._startup_error: BaseException | None = None
        self._feedback_choice, self._telemetry_choice = langsmith_feedback, telemetry
        self._feedback: LangSmithFeedback | None = None
        self._telemetry: Telemetry | None = None
        own_objects = isinstance(langsmith_feedback, LangSmithFeedback) or telemetry is not None
        if worker == "process" and own_objects:
            raise ValueError("worker='process' cannot take a Telemetry or LangSmithFeedback object of your own "
                             "(it lives in this process): use worker='thread' or 'auto'")
        if worker not in ("auto", "process", "thread"):
            raise ValueError(f"worker must be auto, process or thread, got {worker!r}")
        self.worker = "thread" if worker == "thread" or (worker == "auto" and own_objects) else "process"
        self._process: WorkerProcess | None = None
        self._flushing = 0  # flush() calls waiting
        self._told_listeners: Listeners | None = None  # what the worker process was last told

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> Self:
        """Lock the run directory and start the worker (ready to evaluate when this returns)."""
        if self.worker == "process":
            self._run_lock.__enter__()
            try:
                listeners = self._listeners()
                self._process = WorkerProcess.start(
                    self, home=self.workspace.home, run_id=self.run_id, config=self.config, app_name=self.app_name,
                    langsmith_feedback=self._feedback_choice is not False, listeners=listeners)
                self._told_listeners = listeners
            except BaseException as error:
                self._run_lock.__exit__(None, None, None)
                raise RuntimeError(f"live evaluator could not start: {error}") from error
            with self._lock:
                self._accepting = True
            return self
        choice = self._feedback_choice
        if isinstance(choice, LangSmithFeedback) or choice is False:
            self._feedback = choice or None
        else:  # None or True: read where LangSmith traces to, as the app's own tracer does
            self._feedback = LangSmithFeedback.from_environment()
        self._telemetry = self._telemetry_choice or Telemetry.configured(self.config.telemetry.otlp_endpoint)
        self._run_lock.__enter__()
        self._thread = threading.Thread(target=self._thread_main, name=f"ragcourt-live-{self.run_id}", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._startup_error is not None:
            self._run_lock.__exit__(None, None, None)
            raise RuntimeError(f"live evaluator could not start: {self._startup_error}") from self._startup_error
        return self

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until nothing is queued or being evaluated; False when `timeout` came first."""
        with self._idle:
            self._flushing += 1
            self._tell_worker_who_listens()
            try:
                return self._idle.wait_for(lambda: self._counts["queued"] + self._counts["evaluating"] == 0, timeout)
            finally:
                self._flushing -= 1
                self._tell_worker_who_listens()

    def close(self, timeout: float = 10.0) -> LiveCounts:
        """Stop accepting, give pending work up to `timeout` seconds, drop (and count) the rest."""
        if self._thread is None and self._process is None:
            return self.counts()
        self.flush(timeout)
        with self._lock:
            self._accepting = False
        if self._process is not None:
            self._process.stop()  # its reader thread counts what was left (worker_stopped)
            self._process = None
        else:
            assert self._thread is not None
            if self._loop is not None and self._stopping is not None:
                self._loop.call_soon_threadsafe(self._stopping.set)
            self._thread.join()
            self._thread = None
        self._run_lock.__exit__(None, None, None)
        if self._telemetry is not None and self._telemetry_choice is None:  # its own: sends what is batched
            self._telemetry.shutdown()
        counts = self.counts()
        logger.info("live evaluation of run %s closed: %s", self.run_id, counts.describe())
        return counts

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def run_dir(self) -> Path:
        return self.workspace.run_dir(self.run_id)

    # ------------------------------------------------------------------ the app side (never blocks)

    def counts(self) -> LiveCounts:
        with self._lock:
            return LiveCounts(**self._counts)

    def _count(self, name: str, by: int = 1) -> None:
        with self._lock:
            self._counts[name] += by

    def decide_sampling(self) -> bool:
        """One new request: is it sampled? Counted either way."""
        with self._lock:
            self._counts["requests"] += 1
            sampled = self._random.random() < self.sample_rate
            self._counts["app_running" if sampled else "not_sampled"] += 1
            return sampled

    def request_finished(self, captured: CapturedRequest | None, *, app_failed: bool = False) -> bool:
        """A sampled request ended in the app: enqueue what it captured. Never blocks, never raises."""
        with self._lock:
            self._counts["app_running"] -= 1
            if app_failed:
                self._counts["app_errors"] += 1
                return False
            if captured is None:
                self._counts["uncapturable"] += 1
                return False
            if not self._accepting or (self._loop is None and self._process is None):
                self._counts["dropped_closed"] += 1
                return False
            if self._counts["queued"] >= self.max_queue:
                self._counts["dropped_queue_full"] += 1
                dropped = self._counts["dropped_queue_full"]
                if _is_power_of_ten(dropped):
                    logger.warning("live evaluation queue full (%d waiting): dropped %d sampled request(s) so far",
                                   self.max_queue, dropped)
                return False
            self._counts["queued"] += 1
            process = self._process
        try:
            if process is not None:
                process.send(captured)  # held for the next batch (live.process.HandOff): the bound is the count
            else:
                assert self._inbox is not None and self._loop is not None
                self._loop.call_soon_threadsafe(self._inbox.put_nowait, captured)
        except RuntimeError:  # the worker closed between the check and the call
            with self._lock:
                self._counts["queued"] -= 1
                self._counts["dropped_closed"] += 1
            return False
        return True

    def hand_off_failed(self, requests: int) -> None:
        """Queued requests the worker process could not be sent (a document's metadata that does not pickle)."""
        with self._lock:
            self._counts["queued"] -= requests
            self._counts["uncapturable"] += requests
            self._idle.notify_all()

    def app_waits(self) -> None:
        """The app starts to wait on a model: the moment to hand the worker process what waits (HandOff)."""
        process = self._process
        if process is not None:
            process.app_waits()

    def submit(self, question: str, documents: Sequence[Any], answer: Any, request_id: str | None = None) -> bool:
        """Evaluate one request captured by other means (no LangChain callbacks); it counts as sampled.

        A `request_id` that cannot be an id raises ValueError in the loaders' words (it names the request in
        every result line); the rest is checked where it is evaluated: a refused request is a failed record."""
        problem = None if request_id is None else id_problem(request_id)
        if problem is not None:
            raise ValueError(f"refused: field 'id': {problem}")
        with self._lock:
            self._counts["requests"] += 1
            self._counts["app_running"] += 1
        return self.request_finished(CapturedRequest(
            request_id=request_id or uuid.uuid4().hex, question=question,
            documents=tuple(document_parts(document) for document in documents), answer=answer_text(answer),
        ))

    async def stream(self, max_buffer: int = 1000) -> AsyncIterator[SampleDiagnostics]:
        """Diagnostics as requests finish evaluating, from now until the evaluator closes.

        Consumed on any event loop. A reader more than `max_buffer` results behind loses results
        (counted as `stream_dropped`) rather than holding memory of the app's process.
        """
        subscriber = _Subscriber(asyncio.get_running_loop(), asyncio.Queue(maxsize=max_buffer))
        with self._lock:
            closed = self._closed
            if not closed:
                self._subscribers.append(subscriber)
                self._tell_worker_who_listens()
        if closed:
            return
        try:
            while (item := await subscriber.queue.get()) is not None:
                yield item
        finally:
            with self._lock:
                if subscriber in self._subscribers:
                    self._subscribers.remove(subscriber)
                    self._tell_worker_who_listens()

    def _listeners(self) -> Listeners:
        diagnostics = self.on_result is not None or bool(self._subscribers)
        return diagnostics, diagnostics or self._flushing > 0

    def _tell_worker_who_listens(self) -> None:
        """The worker process sends each result's diagnostics only while on_result or a stream() reader takes them,
        and its events without delay only while someone waits on them (live.process.EventBatch): the app's
        process reads no text for nobody and is not woken per request for nobody (called with the lock held)."""
        listeners = self._listeners()
        if self._process is not None and listeners != self._told_listeners:
            self._told_listeners = listeners
            with contextlib.suppress(RuntimeError):  # stopping: nothing more will be sent
                self._process.listen(listeners)

    # ------------------------------------------------------------------ the worker's events (either kind)

    def worker_started_one(self) -> None:
        with self._lock:
            self._counts["queued"] -= 1
            self._counts["evaluating"] += 1

    def worker_feedback(self, posted: int | None) -> None:
        self._count("feedback_errors" if posted is None else "feedback_posted", 1 if posted is None else posted)

    def worker_finished_one(self, ok: bool,
                             diagnostics: SampleDiagnostics | Callable[[], SampleDiagnostics] | None) -> None:
        """One evaluation ended; `diagnostics` is its record, or builds it (called only when someone reads it), or
        None when the worker process sent none because nobody was listening when it finished."""
        with self._lock:
            self._counts["evaluating"] -= 1
            self._counts["evaluated" if ok else "failed"] += 1
            subscribers = list(self._subscribers)
            self._idle.notify_all()
        if diagnostics is not None and (self.on_result is not None or subscribers):
            self._publish(diagnostics if isinstance(diagnostics, SampleDiagnostics) else diagnostics(), subscribers)

    def worker_stopped(self) -> None:
        """The worker ended: what it had not evaluated is dropped at close; stream() readers end."""
        with self._lock:
            left = self._counts["queued"] + self._counts["evaluating"]
            self._counts["dropped_at_close"] += left
            self._counts["queued"] = self._counts["evaluating"] = 0
            self._accepting = False
            self._idle.notify_all()
            subscribers, self._subscribers = self._subscribers, []
            self._closed = True
        if left:
            logger.warning("live evaluation closed with %d request(s) not evaluated (dropped)", left)
        for subscriber in subscribers:
            _offer(subscriber, None, self)

    # ------------------------------------------------------------------ the worker thread (worker="thread")

    def _thread_main(self) -> None:
        try:
            asyncio.run(self._worker())
        except BaseException as error:  # noqa: BLE001 - reported by start(), never raised into the app
            self._startup_error = self._startup_error or error
            self._ready.set()

    async def _worker(self) -> None:
        try:
            assert self._telemetry is not None
            engine = LiveEngine(home=self.workspace.home, run_id=self.run_id, config=self.config,
                                app_name=self.app_name, telemetry=self._telemetry, feedback=self._feedback)
            self._loop, self._inbox, self._stopping = asyncio.get_running_loop(), asyncio.Queue(), asyncio.Event()
        except BaseException as error:  # noqa: BLE001 - start() reports it
            self._startup_error = error
            self._ready.set()
            return
        with self._lock:
            self._accepting = True
        self._ready.set()
        consumers = [asyncio.create_task(self._consume(engine)) for _ in range(self.config.concurrency)]
        try:
            await self._stopping.wait()
        finally:
            for task in consumers:
                task.cancel()
            await asyncio.gather(*consumers, return_exceptions=True)
            self.worker_stopped()
            # Cancelled evaluations may still be writing in executor threads: let them end first.
            await asyncio.get_running_loop().shutdown_default_executor()
            engine.close()

    async def _consume(self, engine: LiveEngine) -> None:
        assert self._inbox is not None
        while True:
            captured = await self._inbox.get()
            self.worker_started_one()
            diagnostics = await engine.evaluate(captured)
            if engine.feedback is not None:  # before it counts as evaluated, so flush() waits for it too
                self.worker_feedback(await engine.post_feedback(diagnostics))
            self.worker_finished_one(diagnostics.status is SampleStatus.OK, diagnostics)

    def _publish(self, diagnostics: SampleDiagnostics, subscribers: list[_Subscriber]) -> None:
        if self.on_result is not None:
            try:
                self.on_result(diagnostics)
            except Exception:  # a consumer's bug must not stop the evaluation
                self._count("result_callback_errors")
                logger.exception("live evaluation: on_result raised")
        for subscriber in subscribers:
            _offer(subscriber, diagnostics, self)


def _offer(subscriber: _Subscriber, item: SampleDiagnostics | None, evaluator: LiveEvaluator) -> None:
    """Hand `item` to a stream() reader on its own loop; None ends its iteration."""

    def put() -> None:
        if item is None:
            while subscriber.queue.full():  # the end must get through: make room by dropping the oldest
                subscriber.queue.get_nowait()
                evaluator._count("stream_dropped")
            subscriber.queue.put_nowait(None)
        elif subscriber.queue.full():
            evaluator._count("stream_dropped")
        else:
            subscriber.queue.put_nowait(item)

    with contextlib.suppress(RuntimeError):  # the reader's loop is closed: nobody is listening any more
        subscriber.loop.call_soon_threadsafe(put)


def _is_power_of_ten(n: int) -> bool:
    return n > 0 and 10 ** round(math.log10(n)) == n


# --------------------------------------------------------------------------- the LangChain callback handler



def _never_into_the_app(method: Callable[..., None]) -> Callable[..., None]:
    """A callback catches its own exceptions and counts them: nothing it does may raise into the app."""

    @functools.wraps(method)
    def guarded(self: Any, *args: Any, **kwargs: Any) -> None:
        try:
            method(self, *args, **kwargs)
        except Exception:  # noqa: BLE001 - never into the app
            self.evaluator._count("handler_errors")

    return guarded

class LiveCallbackHandler(BaseCallbackHandler):
    """Captures question, retrieved documents and answer of each sampled request; see the module docstring.

    A request is a chain run without a parent. Its question is its input (a string, or the first of
    `question_key` / question / input / query in a dict); its documents are those of every retriever run
    under it, else the Documents under context / documents / source_documents in its output; its answer is
    its output (a string, a message, or the first of `answer_key` / answer / output / result / text).
    """

    run_inline = True  # cheap and non-blocking: no executor hop per callback in async apps
    raise_error = False

    def __init__(self, evaluator: LiveEvaluator, *, question_key: str | None = None,
                 answer_key: str | None = None) -> None:
        self.evaluator = evaluator
        self.question_keys = (question_key, *QUESTION_KEYS) if question_key else QUESTION_KEYS
        self.answer_keys = (answer_key, *ANSWER_KEYS) if answer_key else ANSWER_KEYS
        self._lock = threading.Lock()
        self._requests: dict[uuid.UUID, _Request] = {}
        self._root_of: dict[uuid.UUID, uuid.UUID] = {}

    # Read by LangChain for every event of every run: plain class attributes, not BaseCallbackHandler's properties.
    ignore_chain = ignore_retriever = ignore_chat_model = False
    ignore_llm = ignore_agent = ignore_custom_event = ignore_retry = True  # ignore_llm: also every streamed token

    # A child run of a sampled request: remember which request it belongs to.
    def _child_started(self, run_id: uuid.UUID, parent_run_id: uuid.UUID) -> None:
        with self._lock:
            root = parent_run_id if parent_run_id in self._requests else self._root_of.get(parent_run_id)
            if root is not None:
                self._root_of[run_id] = root
                self._requests[root].children.append(run_id)

    @_never_into_the_app
    def on_chain_start(self, serialized: dict[str, Any] | None, inputs: Any, *, run_id: uuid.UUID,
                       parent_run_id: uuid.UUID | None = None, **kwargs: Any) -> None:
        if parent_run_id is not None:
            self._child_started(run_id, parent_run_id)
        elif self.evaluator.decide_sampling():
            with self._lock:
                self._requests[run_id] = _Request(question=self._question(inputs))

    @_never_into_the_app
    def on_retriever_start(self, serialized: dict[str, Any] | None, query: str, *, run_id: uuid.UUID,
                           parent_run_id: uuid.UUID | None = None, **kwargs: Any) -> None:
        if parent_run_id is not None:
            self._child_started(run_id, parent_run_id)

    on_tool_start = on_retriever_start  # a tool inside a sampled request is a child run like a retriever

    @_never_into_the_app
    def on_chat_model_start(self, serialized: dict[str, Any] | None, messages: Any, *, run_id: uuid.UUID,
                            parent_run_id: uuid.UUID | None = None, **kwargs: Any) -> None:
        # Any model call, sampled or not: the app now waits, the worker may take up what was handed to it.
        self.evaluator.app_waits()

    @_never_into_the_app
    def on_retriever_end(self, documents: Sequence[Document], *, run_id: uuid.UUID,
                         parent_run_id: uuid.UUID | None = None, **kwargs: Any) -> None:
        with self._lock:
            root = self._root_of.get(run_id)
            if root is not None:
                self._requests[root].documents.extend(documents)

    @_never_into_the_app
    def on_chain_end(self, outputs: Any, *, run_id: uuid.UUID, parent_run_id: uuid.UUID | None = None,
                     **kwargs: Any) -> None:
        if parent_run_id is not None:
            return
        request = self._pop(run_id)
        if request is None:
            return
        captured = None
        try:
            captured = self._capture(run_id, request, outputs, kwargs.get("inputs"))
        except Exception:  # noqa: BLE001 - an output we cannot read is uncapturable, not an app error
            self.evaluator._count("handler_errors")
        self.evaluator.request_finished(captured)

    @_never_into_the_app
    def on_chain_error(self, error: BaseException, *, run_id: uuid.UUID, parent_run_id: uuid.UUID | None = None,
                       **kwargs: Any) -> None:
        if parent_run_id is None and self._pop(run_id) is not None:
            self.evaluator.request_finished(None, app_failed=True)

    def _pop(self, run_id: uuid.UUID) -> _Request | None:
        with self._lock:
            request = self._requests.pop(run_id, None)
            if request is not None:
                for child in request.children:
                    self._root_of.pop(child, None)
            return request

    def _question(self, inputs: Any) -> str | None:
        if isinstance(inputs, str):
            return inputs or None
        if isinstance(inputs, Mapping):
            for key in self.question_keys:
                value = inputs.get(key)
                if isinstance(value, str) and value:
                    return value
        return None

    def _capture(self, run_id: uuid.UUID, request: _Request, outputs: Any, final_inputs: Any) -> CapturedRequest | None:
        # A streamed chain starts with an empty input and reports the real one at its end.
        question = request.question or self._question(final_inputs)
        documents = request.documents
        if not documents and isinstance(outputs, Mapping):
            for key in CONTEXT_KEYS:
                value = outputs.get(key)
                if isinstance(value, list) and value and all(isinstance(d, Document) for d in value):
                    documents = value
                    break
        answer = self._answer(outputs)
        if question is None or answer is None:
            return None
        unique = list({(d.id or d.page_content): d for d in documents}.values())
        return CapturedRequest(request_id=str(run_id), question=question,
                               documents=tuple(document_parts(document) for document in unique), answer=answer)

    def _answer(self, outputs: Any) -> str | None:
        if isinstance(outputs, Mapping):
            for key in self.answer_keys:
                if key in outputs:
                    text = answer_text(outputs[key])
                    return text or None
            return None
        text = answer_text(outputs)
        return text or None
