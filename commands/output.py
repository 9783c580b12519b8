"""What every command shares: the console, the one way to fail (exit 2, a message, no traceback),
the workspace option, progress bars and table printing."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, NoReturn

import pandas as pd
import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ragcourt.stores.records import RecordStore
from ragcourt.summary import RunSummary

console = Console()
Home = Annotated[Path, typer.Option(help="workspace folder: record store, chroma, runs")]


def fail(message: str) -> NoReturn:
    console.print(f"[red]error:[/red] {escape(message)}")
    raise typer.Exit(2)


def progress() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=console, transient=True)


def print_frame(title: str, frame: pd.DataFrame) -> None:
    table = Table(title=title)
    for column in frame.columns:
        table.add_column(str(column))
    for row in frame.itertuples(index=False):
        table.add_row(*(_cell(v) for v in row))
    console.print(table)


def _cell(value: object) -> str:
    if value is None or (isinstance(value, float) and value != value):  # pandas turns None into NaN
        return "n/a"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def print_summary(summary: RunSummary) -> None:
    table = Table(title=f"run {escape(summary.run_id)}: {summary.n_samples} samples ({summary.n_failed} failed), "
                  f"{summary.n_checks} checks, {summary.n_unscored} unscored verdicts, "
                  f"{summary.n_escalated} escalated ({summary.n_pending} awaiting review)")
    for column in ("metric", "mean", "samples", "n/a", "unscored checks", "escalated checks"):
        table.add_column(column)
    for row in summary.metrics:
        table.add_row(row.name, "n/a" if row.mean is None else f"{row.mean:.3f}", str(row.n_samples),
                      str(row.n_na), str(row.n_unscored), str(row.n_escalated))
    console.print(table)


def print_element_diagnosis(store: RecordStore, run_id: str) -> None:
    from ragcourt.report.qcare_tables import element_diagnosis_lines

    for line in element_diagnosis_lines(store.get_diagnostics(run_id)):
        console.print(escape(line))
