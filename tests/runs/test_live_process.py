"""The hand-off to the live evaluator's worker process (runs/live_process.py): what the app's process pays per
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

from ragcourt.runs.live import LiveEvaluator
from ragcourt.runs.live_engine import CapturedRequest
from ragcourt.runs.live_process import STARTED_DELAY_S, EventBatch, RequestPipe, frame, read_frame
from ragcourt.schema import Chunk

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
    chunks = (Chunk(id="warranty", text="w" * text_size, title="warranty", rank=1, metadata={"page": 2}),
              Chunk(id="returns", text="Unused kettles can be returned.", score=0.5, rank=2))
    return CapturedRequest(request_id="r1", question="How long is the warranty?", chunks=chunks, answer="Two years.")


def test_a_captured_request_crosses_the_pipe_unchanged() -> None:
    original = captured()
    copy = pickle.loads(pickle.dumps(original))
    assert copy == original and copy.sample() == original.sample()
    assert [c.model_fields_set for c in copy.chunks] == [c.model_fields_set for c in original.chunks]


@linux_only
def test_run_in_background_lowers_every_thread_of_the_process_also_those_started_before() -> None:
    script = """
import threading, time
from pathlib import Path
from ragcourt.runs.live_process import run_in_background
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
    return parent == os.getpid() and b"ragcourt.runs.live_process" in command


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
        events = EventBatch(stream, asyncio.get_running_loop())
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
    assert sorted(len(r.chunks[0].text) for r in received) == sorted(len(i.chunks[0].text) for s in sent for i in s)
    pipe.join(5)


class Unpicklable(str):
    def __reduce__(self) -> Any:
        raise TypeError("this text does not pickle")


def test_a_request_that_cannot_be_handed_over_is_counted_and_nothing_waits_for_it(tmp_path) -> None:
    """A request the pipe cannot take (here a question that does not pickle) is uncapturable, and flush() returns:
    it was never counted as queued."""
    with LiveEvaluator(home=tmp_path, run_id="r", sample_rate=1.0, worker="process") as live:
        assert not live.submit(Unpicklable("How long is the warranty?"), ["The kettle has a two-year warranty."], "2y")
        assert live.submit("How long is the warranty?", ["The kettle has a two-year warranty."], "Two years.")
        assert live.flush(timeout=60)
        counts = live.counts()
    assert (counts.uncapturable, counts.evaluated, counts.queued) == (1, 1, 0)
