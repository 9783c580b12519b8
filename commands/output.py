"""What every command shares: the console, the one way to fail (exit 2, a message, no traceback),
the workspace option, progress bars and table printing."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, NoReturn

import pandas as pd
import typer
from rich.cells import cell_len
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ragcourt.stores.records import RecordStore
from ragcourt.analysis.summary import RunSummary

console = Console()
Home = Annotated[Path, typer.Option(help="workspace folder: record store, chroma, runs")]


def fail(message: str) -> NoReturn:
    console.print(f"[red]error:[/red] {escape(message)}")
    raise typer.Exit(2)


def progress() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=console, transient=True)


def print_table(table: Table, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Print `table` with these columns and rows (plain text, escaped here), sized so that no value is cut at
    a narrow terminal (rich's own squeezing printed `extract…` for extractive_k1 and extractive_k5). Each
    column is at least as wide as its longest word, so names, ids and numbers stay whole. When the table is
    wider than the console, first multi-word headers wrap between words, then multi-word values ("[1506,
    1513]", reasons), the biggest saving first; if it is still too wide it runs past the console, whole."""
    natural, headers_wrapped, all_wrapped = [], [], []
    for index, header in enumerate(headers):
        values = [row[index] for row in rows]
        natural.append(max(map(cell_len, [header, *values])))
        headers_wrapped.append(max(map(cell_len, [*header.split(), *values])))
        all_wrapped.append(max(map(cell_len, [*header.split(), *(w for v in values for w in v.split())])))
    widths = list(natural)
    overhead = 3 * len(headers) + 1  # a border before each column and after the last, one space either side
    for narrower in (headers_wrapped, all_wrapped):
        while sum(widths) + overhead > console.width:
            saving, index = max((w - n, i) for i, (w, n) in enumerate(zip(widths, narrower, strict=True)))
            if saving <= 0:
                break
            widths[index] = narrower[index]
    too_wide = sum(widths) + overhead > console.width
    if too_wide:
        table.width = sum(widths) + overhead
    for header, width in zip(headers, widths, strict=True):
        table.add_column(escape(header), width=width)
    for row in rows:
        table.add_row(*map(escape, row))
    console.print(table, crop=not too_wide)


def print_frame(title: str, frame: pd.DataFrame) -> None:
    print_table(Table(title=escape(title)), [str(c) for c in frame.columns],
                [[_cell(v) for v in row] for row in frame.itertuples(index=False)])


def _cell(value: object) -> str:
    if value is None or (isinstance(value, float) and value != value):  # pandas turns None into NaN
        return "n/a"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def print_summary(summary: RunSummary) -> None:
    table = Table(title=f"run {escape(summary.run_id)}: {summary.n_samples} samples ({summary.n_failed} failed), "
                  f"{summary.n_checks} checks, {summary.n_unscored} unscored verdicts, "
                  f"{summary.n_escalated} escalated ({summary.n_pending} awaiting review)")
    print_table(table, ["metric", "mean", "samples", "n/a", "unscored checks", "escalated checks"],
                [[row.name, "n/a" if row.mean is None else f"{row.mean:.3f}", str(row.n_samples), str(row.n_na),
                  str(row.n_unscored), str(row.n_escalated)] for row in summary.metrics])
    if summary.unscored_by_judge:
        shown = ", ".join(f"{judge} {n} of {total}" for judge, n, total in summary.unscored_by_judge)
        console.print(escape(f"unscored verdicts by judge: {shown}. The other judges decided those checks "
                             "without them; a metric's 'unscored checks' counts only checks no judge scored."))


def print_element_diagnosis(store: RecordStore, run_id: str) -> None:
    from ragcourt.analysis.qcare_tables import element_diagnosis_lines

    for line in element_diagnosis_lines(store.get_diagnostics(run_id)):
        console.print(escape(line))
