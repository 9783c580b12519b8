"""Recompute a run's metrics after decisions, in the background, one replay at a time (no LLM call).

Decisions arrive faster than a replay takes; a request during a replay marks the run dirty and one more
replay follows. While another process evaluates the run (it holds the run lock), the replay waits and
tries again every few seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from enum import StrEnum
from pathlib import Path

from ragcourt.runs.runner import RunLockedError
from ragcourt.schema import SampleDiagnostics
from ragcourt.stores.records import RecordStore

Replay = Callable[[RecordStore, str, Path], Awaitable[list[SampleDiagnostics]]]


class RescoreState(StrEnum):
    IDLE = "up to date"
    RUNNING = "recomputing"
    WAITING = "waiting for the running evaluation to finish"
    FAILED = "failed"


class Rescorer:
    def __init__(self, store: RecordStore, run_id: str, run_dir: Path, replay: Replay, retry_s: float = 3.0) -> None:
        self.store, self.run_id, self.run_dir, self._replay, self.retry_s = store, run_id, run_dir, replay, retry_s
        self.state = RescoreState.IDLE
        self.detail = ""
        self.replays = 0  # finished replays, for the page and the tests
        self._dirty = False
        self._task: asyncio.Task[None] | None = None

    def request(self) -> None:
        """Ask for a replay; returns at once (call from the event loop)."""
        self._dirty = True
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._drain())

    async def _drain(self) -> None:
        while self._dirty:
            self._dirty = False
            self.state = RescoreState.RUNNING
            try:
                await self._replay(self.store, self.run_id, self.run_dir)
            except RunLockedError as error:
                self._dirty, self.state, self.detail = True, RescoreState.WAITING, str(error)
                await asyncio.sleep(self.retry_s)
                continue
            except Exception as error:  # noqa: BLE001 - shown on the desk; the decisions are stored, the next one retries
                self._dirty, self.state, self.detail = True, RescoreState.FAILED, f"{type(error).__name__}: {error}"
                return
            self.replays += 1
        self.state, self.detail = RescoreState.IDLE, ""

    async def close(self) -> None:
        """Finish a replay in progress; stop waiting for a run lock that may never be released."""
        if self._task is None or self._task.done():
            return
        if self.state is RescoreState.WAITING:
            self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
