"""One persistent event loop, in a daemon thread, on which the synchronous API runs its coroutines.

`asyncio.run` per call would give every `ragcourt.evaluate` a new loop and close it afterwards. Clients that
outlive a call keep state bound to the loop they first ran on: langchain-openai's ChatOpenAI shares one
process-wide httpx.AsyncClient per base URL, whose pooled keep-alive connections belong to the first loop, so
a second run on a new loop failed every question with "Event loop is closed". One loop for every sync call
keeps them valid, and works whether or not the calling thread has a running loop (Jupyter, async code).

Nothing is created at import: the loop and its thread start on the first `run`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import AsyncIterator, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

THREAD_NAME = "ragcourt-event-loop"
CANCEL_GRACE_S = 10.0  # after an interrupt: how long the caller waits for the run to clean up (locks, store)

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None


class LoopReentryError(RuntimeError):
    """A synchronous ragcourt call made from ragcourt's own loop thread: it would wait for itself forever."""


def _serve(loop: asyncio.AbstractEventLoop) -> None:
    asyncio.set_event_loop(loop)
    loop.run_forever()


def get_loop() -> asyncio.AbstractEventLoop:
    """The loop (started on first use, and again if its thread is gone)."""
    global _loop, _thread
    with _lock:
        if _loop is None or _thread is None or not _thread.is_alive() or _loop.is_closed():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=_serve, args=(loop,), name=THREAD_NAME, daemon=True)
            thread.start()
            _loop, _thread = loop, thread
        return _loop


def in_loop_thread() -> bool:
    return _thread is not None and threading.current_thread() is _thread


def run(coroutine: Coroutine[Any, Any, T], *, async_hint: str = "await the async API instead") -> T:
    """Run `coroutine` on the persistent loop and wait for it; its exception propagates as it was raised.

    An interrupt while waiting (KeyboardInterrupt, or any exception raised in the waiting thread) cancels the
    run, waits up to CANCEL_GRACE_S for it to unwind (so run locks and stores are released), then re-raises.
    """
    if in_loop_thread():
        coroutine.close()
        raise LoopReentryError(f"called from ragcourt's own event loop (e.g. inside a callback of a run): {async_hint}")
    loop = get_loop()
    outcome: concurrent.futures.Future[T] = concurrent.futures.Future()
    tasks: list[asyncio.Task[None]] = []
    finished = threading.Event()

    async def guarded() -> None:
        # Every outcome is handed over here, KeyboardInterrupt and SystemExit included: raised out of a task
        # they would stop the loop's thread before any done-callback ran, and the caller would wait forever.
        try:
            outcome.set_result(await coroutine)
        except asyncio.CancelledError:
            outcome.cancel()
            raise
        except BaseException as error:  # noqa: BLE001 - handed to the caller, who re-raises it
            outcome.set_exception(error)
        finally:
            finished.set()

    def start() -> None:
        tasks.append(loop.create_task(guarded()))

    def cancel() -> None:
        for task in tasks:
            task.cancel()

    loop.call_soon_threadsafe(start)
    try:
        return outcome.result()
    except BaseException:
        if not outcome.done():
            loop.call_soon_threadsafe(cancel)  # after start: call_soon_threadsafe callbacks run in order
            with contextlib.suppress(BaseException):  # a second interrupt: stop waiting
                finished.wait(CANCEL_GRACE_S)
        raise


async def run_async(coroutine: Coroutine[Any, Any, T]) -> T:
    """Await `coroutine` on the persistent loop from whatever loop the caller runs: `aevaluate` and
    `evaluate` then share clients bound to one loop, in either order (cancelling the caller cancels it)."""
    if in_loop_thread():
        return await coroutine
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coroutine, get_loop()))


async def stream(items: AsyncIterator[T]) -> AsyncIterator[T]:
    """Iterate `items` on the persistent loop and hand each to the caller's loop as it comes (`astream`).
    A consumer that stops early cancels the iteration, so its `finally` blocks run (the run lock, the store)."""
    if in_loop_thread():
        async for item in items:
            yield item
        return
    caller = asyncio.get_running_loop()
    handed: asyncio.Queue[tuple[bool, Any]] = asyncio.Queue()  # (is the end, an item / None / an exception)

    def hand(end: bool, value: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the caller's loop is gone: nobody is waiting any more
            caller.call_soon_threadsafe(handed.put_nowait, (end, value))

    async def produce() -> None:
        try:
            async for item in items:
                hand(False, item)
        except BaseException as error:  # noqa: BLE001 - handed to the consumer, who raises it
            hand(True, error)
            if isinstance(error, asyncio.CancelledError):
                raise
        else:
            hand(True, None)

    producer = asyncio.run_coroutine_threadsafe(produce(), get_loop())
    try:
        while True:
            end, value = await handed.get()
            if not end:
                yield value
            elif value is not None:
                raise value
            else:
                return
    finally:
        if not producer.done():  # the consumer stopped early: stop the run and wait until it has unwound
            producer.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.wrap_future(producer)
