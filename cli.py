"""The command line: the composition root. Its commands (ragcourt/commands/, one module each) read files
and flags, build the stores, the system under test and the jury, and hand them to the run; this module
registers them on the typer app."""

from __future__ import annotations

import sys

import typer

from ragcourt.commands import (
    calibrate,
    demo,
    elements,
    generate,
    graph,
    index,
    noise,
    rank,
    report,
    rerun,
    review,
    run,
    serve,
    summary,
    watch,
)
from ragcourt.commands.output import console

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__ and "Evaluate RAG systems: find where "
                  "quality is lost (retrieval, generation or the documents).")

# Every command is defined in its own module (ragcourt/commands/) and registers here, in the order of
# `ragcourt --help`.
for command in (demo, index, run, summary, review, graph, generate, report, serve, rank, calibrate, watch, elements,
                noise, rerun):
    command.register(app)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        console.print("interrupted; everything judged so far is stored — run the same command to resume")
        sys.exit(130)
