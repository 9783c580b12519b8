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
from collections.abc import AsyncGenerator, Callable, Coroutine
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


async def stream(items: AsyncGenerator[T, None]) -> AsyncGenerator[T, None]:
    """Iterate `items` on the persistent loop and hand each to the caller's loop as it comes (`astream`).

    As a generator would, the iteration waits at each item until the consumer asks for the next (so a run is
    still running, its lock held, while the consumer handles its last item). A consumer that stops early
    (aclose, an exception, cancellation) stops the iteration and waits until it has unwound: `items` is
    closed, so its `finally` blocks (the run lock, the store) have run when this generator is closed.
    """
    if in_loop_thread():
        async with contextlib.aclosing(items):
            async for item in items:
                yield item
        return
    caller, loop = asyncio.get_running_loop(), get_loop()
    handed: asyncio.Queue[tuple[bool, Any]] = asyncio.Queue()  # (is the end, an item / None / an exception)
    unwound = asyncio.Event()  # in the caller's loop: the iteration is over and `items` closed
    asked = asyncio.Event()  # in the persistent loop: the consumer wants the next item
    tasks: list[asyncio.Task[None]] = []
    began = False  # read and written in the persistent loop's thread only

    def to_caller(callback: Callable[..., object], *args: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the caller's loop is gone: nobody is waiting any more
            caller.call_soon_threadsafe(callback, *args)

    async def produce() -> None:
        nonlocal began
        began = True
        try:
            async with contextlib.aclosing(items):  # stopped while waiting below: close `items` too
                async for item in items:
                    to_caller(handed.put_nowait, (False, item))
                    await asked.wait()
                    asked.clear()
        except asyncio.CancelledError:
            raise
        except BaseException as error:  # noqa: BLE001 - handed to the consumer, who raises it
            to_caller(handed.put_nowait, (True, error))
        else:
            to_caller(handed.put_nowait, (True, None))
        finally:
            to_caller(unwound.set)

    def start() -> None:
        tasks.append(loop.create_task(produce()))

    def stop() -> None:  # runs after start (one thread, callbacks in order)
        tasks[0].cancel()
        if not began:  # cancelled before its first step: the body never runs, and there is nothing to unwind
            to_caller(unwound.set)

    loop.call_soon_threadsafe(start)
    ended = False
    try:
        while True:
            end, value = await handed.get()
            if not end:
                yield value
                loop.call_soon_threadsafe(asked.set)
                continue
            ended = True
            if value is not None:
                raise value
            return
    finally:
        if not ended:
            loop.call_soon_threadsafe(stop)
        await unwound.wait()
