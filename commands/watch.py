"""`ragcourt watch RUN`: follow a running evaluation (batch or live) in the terminal.

It tails the run's diagnostics.jsonl (one line per finished question, appended by the Runner and by the
live evaluator) and keeps a summary of the run so far below the lines. It stops when the run's lock file
is gone and nothing new arrived, or on Ctrl-C; `--once` prints what is there now and exits.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.console import Group
from rich.live import Live
from rich.markup import escape
from rich.table import Table

from ragcourt.commands.output import Home, console, question_metrics
from ragcourt.runs.runner import RunPaths
from ragcourt.runs.workspace import DEFAULT_HOME, Workspace
from ragcourt.schema import SampleDiagnostics, SampleStatus


class DiagnosticsTail:
    """Reads the complete lines appended to a diagnostics.jsonl since the last read."""

    def __init__(self, path: Path) -> None:
        self.path, self.offset, self.bad_lines = path, 0, 0

    def read_new(self) -> list[SampleDiagnostics]:
        if not self.path.exists():
            return []
        with self.path.open("rb") as handle:
            handle.seek(self.offset)
            data = handle.read()
        end = data.rfind(b"\n") + 1  # a line still being written is read next time
        self.offset += end
        out = []
        for line in data[:end].splitlines():
            if not line.strip():
                continue
            try:
                out.append(SampleDiagnostics.model_validate(json.loads(line)))
            except (ValueError, ValidationError):
                self.bad_lines += 1
        return out


@dataclass
class RunSoFar:
    """The summary that updates: questions, failures, escalations and the mean of each metric so far."""

    questions: int = 0
    failed: int = 0
    escalated: int = 0
    unscored: int = 0
    sums: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    not_available: dict[str, int] = field(default_factory=dict)

    def add(self, diagnostics: SampleDiagnostics) -> None:
        self.questions += 1
        self.failed += diagnostics.status is SampleStatus.FAILED
        self.escalated += len(diagnostics.escalations)
        self.unscored += diagnostics.n_unscored
        for metric in diagnostics.metrics:
            if metric.value is None:
                self.not_available[metric.name] = self.not_available.get(metric.name, 0) + 1
            else:
                self.sums[metric.name] = self.sums.get(metric.name, 0.0) + metric.value
                self.counts[metric.name] = self.counts.get(metric.name, 0) + 1

    def mean(self, name: str) -> float | None:
        return self.sums[name] / self.counts[name] if self.counts.get(name) else None

    def table(self, run_id: str, running: bool) -> Table:
        state = "running" if running else "finished"
        table = Table(title=f"run {escape(run_id)} ({state}): {self.questions} questions, {self.failed} failed, "
                      f"{self.escalated} escalated checks awaiting review, {self.unscored} unscored verdicts")
        for column in ("metric", "mean so far", "questions", "n/a"):
            table.add_column(column)
        for name in sorted(set(self.sums) | set(self.not_available)):
            mean = self.mean(name)
            table.add_row(name, "n/a" if mean is None else f"{mean:.3f}", str(self.counts.get(name, 0)),
                          str(self.not_available.get(name, 0)))
        return table


def question_line(d: SampleDiagnostics) -> str:
    if d.status is SampleStatus.FAILED:
        return f"[red]✗[/red] {escape(d.sample_id[:12])}  failed: {escape(d.error or '')}"
    return (f"[green]✓[/green] {escape(d.sample_id[:12])}  {question_metrics(d)}  unsupported={len(d.unsupported_claims)}"
            f"  escalated={len(d.escalations)}  unscored={d.n_unscored}  {escape(d.question[:60])}")


def watch(
    run_id: str,
    home: Home = DEFAULT_HOME,
    once: Annotated[bool, typer.Option("--once", help="print the current state and exit")] = False,
    interval: Annotated[float, typer.Option(help="seconds between reads of diagnostics.jsonl")] = 0.5,
) -> None:
    """Follow a running evaluation: one line per finished question and a summary that updates."""
    paths = RunPaths(Workspace(home).run_dir(run_id))
    if not paths.run_dir.exists():
        console.print(f"[red]error:[/red] no run directory {escape(str(paths.run_dir))}")
        raise typer.Exit(2)
    tail, so_far = DiagnosticsTail(paths.diagnostics), RunSoFar()
    if once:
        for diagnostics in tail.read_new():
            so_far.add(diagnostics)
            console.print(question_line(diagnostics))
        console.print(so_far.table(run_id, paths.lock.exists()))
        return
    try:
        with Live(so_far.table(run_id, True), console=console, refresh_per_second=4, transient=False) as live:
            while True:
                running = paths.lock.exists()  # read before the lines: a last line written before unlock is seen
                new = tail.read_new()
                for diagnostics in new:
                    so_far.add(diagnostics)
                    live.console.print(question_line(diagnostics))
                live.update(Group(so_far.table(run_id, running)))
                if not running and not new:
                    break
                time.sleep(interval)
    except KeyboardInterrupt:
        console.print("stopped watching (the run goes on)")
    if tail.bad_lines:
        console.print(f"[yellow]{tail.bad_lines} unreadable line(s) in {escape(str(paths.diagnostics))}[/yellow]")


def register(app: typer.Typer) -> None:
    app.command("watch")(watch)
