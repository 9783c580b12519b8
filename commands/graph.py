"""`ragcourt graph`: the per-sample state machine as Mermaid."""

from __future__ import annotations

import typer

from ragcourt.commands.output import console


def graph() -> None:
    """Print the per-sample state machine as Mermaid."""
    from ragcourt.graphs.sample import build_sample_graph

    console.print(build_sample_graph().get_graph().draw_mermaid(), markup=False, highlight=False)


def register(app: typer.Typer) -> None:
    app.command("graph")(graph)
