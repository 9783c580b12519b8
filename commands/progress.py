"""Progress of a long command (`run`, `index`, `rank`, `calibrate`): how many of how many, the rate and the
time left.

On a terminal it is a rich bar under the command's own lines; piped, or under CI (the `CI` variable most CI
services set), it is a plain line at most every `interval_s` seconds or each tenth of the work, whichever
comes first, and one at the end, so a log has the progress without a screen of redraws. Work that came from
the store (a resumed run's finished samples) counts as done but not in the rate, so the time left is that of
the work still to do.

    with track_progress("evaluating", total=len(samples)) as progress:
        for ...:
            progress.print(line)  # above the bar, never through it
            progress.advance()
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import StrEnum
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from ragcourt.commands.output import console as shared_console

PLAIN_INTERVAL_S = 10.0
PLAIN_STEP = 0.10  # a plain line at each further tenth of the work


class ProgressStyle(StrEnum):
    RICH = "rich"  # a live bar (a terminal)
    PLAIN = "plain"  # periodic lines (a pipe, a file, CI)


def under_ci(environ: dict[str, str] | None = None) -> bool:
    """Whether a CI service runs us: `CI` set to anything but empty, 0 or false (read when asked)."""
    value = (os.environ if environ is None else environ).get("CI", "")
    return value.strip().lower() not in ("", "0", "false", "no")


def progress_style(console: Console) -> ProgressStyle:
    return ProgressStyle.RICH if console.is_terminal and not under_ci() else ProgressStyle.PLAIN


def rate_text(per_second: float | None) -> str:
    if per_second is None:
        return "-/s"
    return f"{per_second:.1f}/s" if per_second >= 0.1 else f"{per_second * 60:.1f}/min"


def duration_text(seconds: float | None) -> str:
    """0:42, 12:05, 1:02:03; '-' when unknown."""
    if seconds is None or not math.isfinite(seconds):
        return "-"
    whole = int(round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class Tracker:
    """Counts, rate and ETA of one piece of work; shown by `track_progress`."""

    def __init__(self, description: str, total: int | None, *, console: Console, style: ProgressStyle,
                 interval_s: float = PLAIN_INTERVAL_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.description, self.total = description, total
        self.console, self.style, self.interval_s, self.clock = console, style, interval_s, clock
        self.completed = 0
        self.from_store = 0  # done before this command: not in the rate
        self.started = clock()
        self._last_line_at = self.started
        self._last_step = 0
        self._bar: Progress | None = None
        self._task: TaskID | None = None

    # ------------------------------------------------------------------ figures

    @property
    def elapsed(self) -> float:
        return self.clock() - self.started

    @property
    def rate(self) -> float | None:
        """Units per second done by this command (None before the first)."""
        done, elapsed = self.completed - self.from_store, self.elapsed
        return done / elapsed if done > 0 and elapsed > 0 else None

    @property
    def eta(self) -> float | None:
        """Seconds left at the current rate (None while unknown)."""
        rate = self.rate
        if self.total is None or rate is None:
            return None
        return max(self.total - self.completed, 0) / rate

    def line(self) -> str:
        """`evaluating: 30/120 (25%), 2.1/s, ETA 0:43` (the figures a plain line and the bar show)."""
        if self.total:
            counts = f"{self.completed}/{self.total} ({self.completed / self.total:.0%})"
        else:
            counts = str(self.completed)
        stored = f", {self.from_store} from the store" if self.from_store else ""
        return f"{self.description}: {counts}{stored}, {rate_text(self.rate)}, ETA {duration_text(self.eta)}"

    def final_line(self) -> str:
        counts = f"{self.completed}/{self.total}" if self.total is not None else str(self.completed)
        stored = f" ({self.from_store} from the store)" if self.from_store else ""
        return f"{self.description}: {counts}{stored} in {duration_text(self.elapsed)}, {rate_text(self.rate)}"

    # ------------------------------------------------------------------ updates

    def advance(self, n: int = 1, *, from_store: bool = False) -> None:
        """`n` more units done; `from_store`: they were done before (a resumed run's), not now."""
        self.completed += n
        if from_store:
            self.from_store += n
        self._show()

    def set_total(self, total: int) -> None:
        self.total = total
        self._show()

    def print(self, *renderables: Any) -> None:
        """A line of the command's own output: above the bar on a terminal, as it is when piped."""
        (self._bar.console if self._bar is not None else self.console).print(*renderables)

    def _show(self) -> None:
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, completed=self.completed, total=self.total,
                             stats=f"{rate_text(self.rate)}, ETA {duration_text(self.eta)}")
            return
        now = self.clock()
        # in integers: 6 / 20 / 0.1 is 2.999... in floats, which would skip the line at 30 %
        step = self.completed * round(1 / PLAIN_STEP) // self.total if self.total else 0
        if now - self._last_line_at >= self.interval_s or step > self._last_step:
            if self.total is None or self.completed < self.total:  # the end has its own line
                self.console.print(escape(self.line()), soft_wrap=True, highlight=False)
            self._last_line_at, self._last_step = now, step

    def _open(self) -> None:
        if self.style is ProgressStyle.RICH:
            self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("{task.fields[stats]}"), TimeElapsedColumn(), console=self.console,
                                 transient=True)
            self._bar.start()
            self._task = self._bar.add_task(escape(self.description), total=self.total,
                                            stats=f"{rate_text(None)}, ETA -")

    def _close(self, finished: bool) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        if finished:  # a refused or failed command says why itself; a count under it would be noise
            self.console.print(escape(self.final_line()), soft_wrap=True, highlight=False)


@contextmanager
def track_progress(description: str, total: int | None, *, console: Console | None = None,
                   style: ProgressStyle | None = None, interval_s: float = PLAIN_INTERVAL_S,
                   clock: Callable[[], float] = time.monotonic) -> Iterator[Tracker]:
    """Show the progress of `total` units of work (None: unknown until `set_total`) for the block: a rich bar
    on a terminal, plain periodic lines when piped or under CI (`style` forces one), and when the block ends
    without an exception a closing line with the count, time and rate either way. The one function every long command uses (run, index, rank, calibrate)."""
    chosen = console or shared_console
    tracker = Tracker(description, total, console=chosen, style=style or progress_style(chosen),
                      interval_s=interval_s, clock=clock)
    tracker._open()
    try:
        yield tracker
    except BaseException:
        tracker._close(finished=False)
        raise
    tracker._close(finished=True)
