"""The hand-off to the live evaluator's worker process (live/process.py): what the app's process pays per
request, and the worker's priority. End to end (the example app, both workers): tests/scenarios/live."""

from __future__ import annotations

import asyncio
import io
import logging
import os
import pickle
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document

from ragcourt.live import process as live_process
from ragcourt.live.engine import CapturedRequest
from ragcourt.live.evaluator import LiveEvaluator
from ragcourt.live.process import (
    EVENT_DELAY_S,
    STARTED_DELAY_S,
    Doorbell,
    EventBatch,
    HandOff,
    RequestPipe,
    frame,
    read_frame,
)
from ragcourt.schema import content_id
from ragcourt.stores.records import RecordStore
from ragcourt.systems import document_parts

SCHED_IDLE = 5  # Linux's number of the policy, as /proc shows it
linux_only = pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads /proc (Linux)")


def thread_priorities(pid: int | str = "self") -> list[tuple[int, int]]:
    """(nice, scheduling policy) of each thread of process `pid`."""
    rows = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        rows.append((int(fields[16]), int(fields[38])))  # stat fields 19 and 41
    return rows


def captured(text_size: int = 100) -> CapturedRequest:
    documents = (Document(id="warranty", page_content="w" * text_size, metadata={"title": "warranty", "page": 2}),
                 Document(page_content="Unused kettles can be returned.", metadata={"score": 0.5, "vector": [0.1]}))
    return CapturedRequest(request_id="r1", question="How long is the warranty?",
                           documents=tuple(document_parts(d) for d in documents), answer="Two years.")


def test_a_captured_request_crosses_the_pipe_unchanged_and_makes_the_chunks_in_the_worker() -> None:
    original = captured()
    assert all(type(value) in (str, int, float, dict, type(None)) for parts in original.documents for value in parts)
    copy = pickle.loads(pickle.dumps(original))
    assert copy == original
    warranty, returns = copy.sample().contexts
    assert (warranty.id, warranty.title, warranty.rank, warranty.metadata) == \
        ("warranty", "warranty", 1, {"title": "warranty", "page": 2})
    # No id: the content names it; the score is read from the metadata; a vector is not a chunk's metadata.
    assert returns.id == f"doc-{content_id('Unused kettles can be returned.')}"
    assert (returns.score, returns.rank, returns.metadata) == (0.5, 2, {"score": 0.5})


def test_a_document_that_makes_no_chunk_fails_its_evaluation_not_the_app(tmp_path) -> None:
    """The Chunks are validated in the worker: a title that is not text fails that request's evaluation (counted
    failed, with the reason in its record), never a callback of the app."""
    with LiveEvaluator(home=tmp_path, run_id="r", sample_rate=1.0, worker="process") as live:
        assert live.submit("q", [Document(page_content="text", metadata={"title": 7})], "a", request_id="bad")
        assert live.flush(timeout=60)
        counts = live.counts()
    assert (counts.failed, counts.evaluated, counts.handler_errors) == (1, 0, 0)
    with RecordStore(tmp_path / "store.sqlite") as store:
        (diagnostics,) = store.get_diagnostics("r")
    assert diagnostics.sample_id == "bad" and "title" in (diagnostics.error or "")


@linux_only
def test_run_in_background_lowers_every_thread_of_the_process_also_those_started_before() -> None:
    script = """
import threading, time
from pathlib import Path
from ragcourt.live.process import run_in_background
threading.Thread(target=time.sleep, args=(5,), daemon=True).start()  # started before
run_in_background()
threading.Thread(target=time.sleep, args=(5,), daemon=True).start()  # started after: inherits
fields = [(task / "stat").read_text().rsplit(")", 1)[1].split() for task in Path("/proc/self/task").iterdir()]
print(len(fields), sorted({(int(f[16]), int(f[38])) for f in fields}))
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    threads, priorities = result.stdout.split(" ", 1)
    assert int(threads) >= 3 and priorities.strip() == str([(19, SCHED_IDLE)])


@linux_only
def test_every_thread_of_the_worker_process_runs_at_idle_priority(tmp_path) -> None:
    with LiveEvaluator(home=tmp_path, run_id="r", sample_rate=1.0, worker="process") as live:
        assert live.submit("How long is the warranty?", ["The kettle has a two-year warranty."], "Two years.")
        assert live.flush(timeout=60)  # the worker has evaluated: its event loop's executor threads exist too
        (worker,) = [pid for pid in os.listdir("/proc") if pid.isdigit() and is_our_worker(pid)]
        assert set(thread_priorities(worker)) == {(19, SCHED_IDLE)}
    assert live.counts().evaluated == 1


def is_our_worker(pid: str) -> bool:
    try:
        parent = int((Path("/proc") / pid / "stat").read_text().rsplit(")", 1)[1].split()[1])
        command = (Path("/proc") / pid / "cmdline").read_bytes()
    except OSError:  # it ended meanwhile
        return False
    return parent == os.getpid() and b"ragcourt.live.process" in command


def read_all(fd: int) -> bytes:
    chunks = []
    while data := os.read(fd, 1 << 16):
        chunks.append(data)
    return b"".join(chunks)


def test_a_full_pipe_never_blocks_the_sender_and_what_it_did_not_take_follows_in_order() -> None:
    read_end, write_end = os.pipe()
    pipe = RequestPipe(os.fdopen(write_end, "wb"))
    items = [captured(text_size=50_000) for _ in range(60)]  # about 3 MB: more than any pipe buffer
    started = time.perf_counter()
    for item in items:
        pipe.send(frame(item))
    assert time.perf_counter() - started < 5  # nobody has read yet: the sends waited on nothing
    assert pipe.pending  # what the pipe did not take
    pipe.close(frame(None))
    stream = io.BytesIO(read_all(read_end))  # EOF once the drain thread has written all and closed the pipe
    assert [read_frame(stream) for _ in items] == items
    assert read_frame(stream) is None
    pipe.join(5)
    assert not pipe.pending


def test_a_worker_gone_takes_nothing_and_the_sender_is_told_once(caplog) -> None:
    read_end, write_end = os.pipe()
    pipe = RequestPipe(os.fdopen(write_end, "wb"))
    os.close(read_end)
    with caplog.at_level(logging.WARNING, logger="ragcourt.live"):
        for _ in range(3):
            pipe.send(frame(captured()))  # no exception into the app's thread
    assert [r.message for r in caplog.records] == ["live evaluation: the worker process stopped reading"]
    pipe.close(frame(None))
    pipe.join(5)
    assert not pipe.pending


def rings(fd: int) -> bytes:
    """What the bell's pipe holds now (b"" when nothing)."""
    os.set_blocking(fd, False)
    try:
        return os.read(fd, 1 << 16)
    except BlockingIOError:
        return b""


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class HandOffPipes:
    """A HandOff on real pipes: what reached the requests pipe and how often the bell rang, read without blocking."""

    def __init__(self, *, batch_s: float = 0.5, poll_s: float = 3600.0, clock: Any = None) -> None:
        self.requests_out, requests_in = os.pipe()
        self.bell_out, bell_in = os.pipe()
        self.unsendable: list[int] = []
        self.hand_off = HandOff(RequestPipe(os.fdopen(requests_in, "wb")), Doorbell(bell_in), batch_s=batch_s,
                                poll_s=poll_s, unsendable=self.unsendable.append, clock=clock or time.monotonic)

    def received(self) -> list[Any]:
        stream = io.BytesIO(rings(self.requests_out))
        items = []
        while stream.tell() < len(stream.getbuffer()):
            items.append(read_frame(stream))
        return items

    def close(self) -> None:
        self.hand_off.close(frame(None))
        self.hand_off.requests.join(5)
        self.hand_off.bell.close()
        os.close(self.requests_out)
        os.close(self.bell_out)


def request(request_id: str, question: str = "How long is the warranty?") -> CapturedRequest:
    return CapturedRequest(request_id=request_id, question=question, documents=((None, "two years", {}),),
                           answer="Two years.")


def test_the_hand_off_sends_a_batch_at_the_first_model_call_half_a_second_after_the_oldest_and_at_once_while_the_app_waits_on_us(
        ) -> None:
    clock = Clock()
    pipes = HandOffPipes(clock=clock)
    hand_off = pipes.hand_off
    hand_off.app_waits()
    assert (pipes.received(), rings(pipes.bell_out)) == ([], b"")  # nothing held: the app's model calls send nothing
    hand_off.add(request("a"))
    clock.now += 0.3
    hand_off.add(request("b"))
    assert (pipes.received(), rings(pipes.bell_out)) == ([], b"")  # held: nothing is written when a request ends
    hand_off.app_waits()
    assert (pipes.received(), rings(pipes.bell_out)) == ([], b"")  # the oldest was added 0.3 s ago: not due yet
    clock.now += 0.2
    hand_off.app_waits()
    hand_off.app_waits()
    # Both, each in its frame, and one ring, at the first model call half a second after the first was added.
    assert (pipes.received(), rings(pipes.bell_out)) == ([request("a"), request("b")], b"\0")
    hand_off.add(request("c"))
    clock.now += 0.49
    hand_off.app_waits()
    assert (pipes.received(), rings(pipes.bell_out)) == ([], b"")  # the next batch counts from its own oldest
    hand_off.set_prompt(True)  # a flush(), on_result or stream() reader waits on the worker: what is held goes now
    assert (pipes.received(), rings(pipes.bell_out)) == ([request("c")], b"\0")
    hand_off.add(request("d"))  # ... and every request at once
    assert (pipes.received(), rings(pipes.bell_out)) == ([request("d")], b"\0")
    pipes.close()


def test_without_a_model_call_the_hand_off_sends_what_waits_within_a_poll() -> None:
    pipes = HandOffPipes(batch_s=0.05, poll_s=0.05)
    pipes.hand_off.add(request("a"))
    deadline = time.monotonic() + 10
    received: list[Any] = []
    while not received and time.monotonic() < deadline:
        time.sleep(0.05)
        received = pipes.received()
    assert received == [request("a")] and rings(pipes.bell_out) == b"\0"
    pipes.close()


def test_the_app_frame_follows_what_is_held_in_one_write_and_one_ring() -> None:
    pipes = HandOffPipes()
    pipes.hand_off.add(request("a"))
    pipes.hand_off.send_held(last=frame((True, True)))  # what WorkerProcess.listen sends
    assert (pipes.received(), rings(pipes.bell_out)) == ([request("a"), (True, True)], b"\0")
    pipes.close()


def test_a_held_request_that_does_not_pickle_is_reported_and_the_rest_of_its_batch_goes() -> None:
    pipes = HandOffPipes()
    pipes.hand_off.add(request("bad", question=Unpicklable("How long is the warranty?")))
    pipes.hand_off.add(request("good"))
    pipes.hand_off.send_held()
    assert pipes.received() == [request("good")] and pipes.unsendable == [1]
    pipes.close()


def test_a_bell_nobody_reads_never_blocks_or_raises_into_the_app() -> None:
    read_end, write_end = os.pipe()
    bell = Doorbell(write_end)
    while True:  # fill it
        try:
            os.write(write_end, b"\0" * 4096)
        except BlockingIOError:
            break
    bell.ring()
    os.close(read_end)
    bell.ring()  # the worker is gone
    bell.close()


def wait_for_count(live: LiveEvaluator, name: str, value: int, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if getattr(live.counts(), name) == value:
            return True
        time.sleep(0.05)
    return False


def test_the_worker_takes_up_a_request_at_the_app_s_model_call_not_when_the_request_ends(tmp_path,
                                                                                          monkeypatch) -> None:
    monkeypatch.setattr(live_process, "INTAKE_POLL_S", 3600.0)  # no timer: only the model call
    with LiveEvaluator(home=tmp_path, run_id="r", sample_rate=1.0, worker="process") as live:
        assert live.submit("How long is the warranty?", ["The kettle has a two-year warranty."], "Two years.")
        time.sleep(4 * EVENT_DELAY_S)  # the worker would have told it started (its events wait EVENT_DELAY_S)
        counts = live.counts()
        assert (counts.queued, counts.evaluating, counts.evaluated) == (1, 0, 0)
        live.app_waits()  # the handler's on_chat_model_start, more than INTAKE_BATCH_S after the request ended
        assert wait_for_count(live, "evaluated", 1)


def test_without_a_model_call_the_worker_gets_a_request_within_a_poll(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(live_process, "INTAKE_POLL_S", 0.2)
    with LiveEvaluator(home=tmp_path, run_id="r", sample_rate=1.0, worker="process") as live:
        assert live.submit("How long is the warranty?", ["The kettle has a two-year warranty."], "Two years.")
        assert wait_for_count(live, "evaluated", 1)  # no flush(), no model call of the app: the timer sent it


class CountingStream(io.BytesIO):
    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write(self, data) -> int:  # type: ignore[override]
        self.writes += 1
        return super().write(data)


def test_events_of_one_loop_turn_are_one_write_and_a_lone_started_waits_for_company() -> None:
    async def scenario() -> tuple[CountingStream, list[int]]:
        stream = CountingStream()
        events = EventBatch(stream, asyncio.get_running_loop(), prompt=True)
        events.put(("started", None), urgent=False)
        events.put(("finished", (True, "{}")))
        events.put(("started", None), urgent=False)
        await asyncio.sleep(0)  # the end of this turn: one write of all three
        writes = [stream.writes]
        events.put(("started", None), urgent=False)
        await asyncio.sleep(STARTED_DELAY_S / 2)
        writes.append(stream.writes)  # a lone "started" is not written yet
        await asyncio.sleep(STARTED_DELAY_S)
        writes.append(stream.writes)  # ... but within STARTED_DELAY_S
        return stream, writes

    stream, writes = asyncio.run(scenario())
    assert writes == [1, 1, 2]
    stream.seek(0)
    assert [read_frame(stream)[0] for _ in range(4)] == ["started", "finished", "started", "started"]


def test_while_nothing_waits_on_them_events_wait_for_the_batch_and_a_waiter_gets_them_at_once() -> None:
    async def scenario() -> list[int]:
        stream = CountingStream()
        events = EventBatch(stream, asyncio.get_running_loop(), prompt=False)
        events.put(("started", None), urgent=False)
        events.put(("finished", (True, None)))
        await asyncio.sleep(STARTED_DELAY_S * 2)
        writes = [stream.writes]  # not even a "finished" is written at once
        await asyncio.sleep(EVENT_DELAY_S)
        writes.append(stream.writes)  # within EVENT_DELAY_S, as one write
        events.put(("finished", (True, None)))
        events.set_prompt(True)  # a flush() begins to wait: what waits is written now
        await asyncio.sleep(0)
        writes.append(stream.writes)
        return writes

    assert asyncio.run(scenario()) == [0, 1, 2]


def test_sends_from_many_threads_arrive_whole() -> None:
    read_end, write_end = os.pipe()
    pipe = RequestPipe(os.fdopen(write_end, "wb"))
    sizes = (10, 5_000, 400_000)  # four threads send more than the pipe takes: some wait in `pending`
    sent = [[captured(text_size=size) for size in sizes] for _ in range(4)]

    def send_all(items: list[CapturedRequest]) -> None:
        for item in items:
            pipe.send(frame(item))

    threads = [threading.Thread(target=send_all, args=(items,)) for items in sent]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    pipe.close(frame(None))
    stream = io.BytesIO(read_all(read_end))
    received = [read_frame(stream) for _ in range(12)]
    assert read_frame(stream) is None
    assert sorted(len(r.documents[0][1]) for r in received) == sorted(len(i.documents[0][1]) for s in sent for i in s)
    pipe.join(5)


class Unpicklable(str):
    def __reduce__(self) -> Any:
        raise TypeError("this text does not pickle")


def test_a_request_that_cannot_be_handed_over_is_counted_and_nothing_waits_for_it(tmp_path) -> None:
    """A request the pipe cannot take (here a question that does not pickle) is uncapturable once its batch is sent,
    and flush() returns: it no longer counts as queued."""
    with LiveEvaluator(home=tmp_path, run_id="r", sample_rate=1.0, worker="process") as live:
        assert live.submit(Unpicklable("How long is the warranty?"), ["The kettle has a two-year warranty."], "2y")
        assert live.submit("How long is the warranty?", ["The kettle has a two-year warranty."], "Two years.")
        assert live.flush(timeout=60)
        counts = live.counts()
    assert (counts.uncapturable, counts.evaluated, counts.queued) == (1, 1, 0)
    assert counts.accounted
