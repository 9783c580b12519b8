"""Group commit: async writes that arrive while a transaction commits share the next one.

Every node of every sample in flight writes a few rows (retrievals, answers, checks, verdicts, the LLM cache),
each in its own transaction behind the store's one write connection: at 30+ samples a second the commits
queued behind each other and held up the samples waiting on them. Here the first write starts a flusher;
writes that arrive meanwhile wait for it and then go in one transaction together. A caller returns once its
rows are committed, exactly as with a transaction of its own; if a shared transaction fails, its writes are
retried one by one so that only the write at fault fails.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

Statement = tuple[str, Sequence[Sequence[Any]]]


class _LoopWriter:
    """The queue and flusher of one event loop (a store can be used from several, one after another or in
    different threads at once)."""

    def __init__(self, write: Callable[[list[Statement]], None]) -> None:
        self._write = write
        self._pending: list[tuple[list[Statement], asyncio.Future[None]]] = []
        self._flusher: asyncio.Task[None] | None = None

    async def submit(self, statements: list[Statement]) -> None:
        loop = asyncio.get_running_loop()
        committed: asyncio.Future[None] = loop.create_future()
        self._pending.append((statements, committed))
        if self._flusher is None or self._flusher.done():
            self._flusher = loop.create_task(self._flush())
        await committed

    async def _flush(self) -> None:
        while self._pending:
            batch, self._pending = self._pending, []
            try:
                await asyncio.to_thread(self._write, [s for statements, _ in batch for s in statements])
            except Exception:  # noqa: BLE001 - retried one by one below, each caller gets its own outcome
                for statements, committed in batch:
                    try:
                        await asyncio.to_thread(self._write, statements)
                    except Exception as error:  # noqa: BLE001 - handed to the caller
                        _settle(committed, error)
                    else:
                        _settle(committed, None)
            else:
                for _, committed in batch:
                    _settle(committed, None)


def _settle(committed: asyncio.Future[None], error: BaseException | None) -> None:
    if committed.done():  # the caller was cancelled; its rows are written all the same
        return
    if error is None:
        committed.set_result(None)
    else:
        committed.set_exception(error)


class GroupCommit:
    """`await group.submit(statements)`: written and committed, together with whatever else was waiting."""

    def __init__(self, write: Callable[[list[Statement]], None]) -> None:
        self._write = write
        self._writers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopWriter] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    async def submit(self, statements: list[Statement]) -> None:
        loop = asyncio.get_running_loop()
        with self._lock:
            writer = self._writers.get(loop)
            if writer is None:
                writer = self._writers[loop] = _LoopWriter(self._write)
        await writer.submit(statements)
