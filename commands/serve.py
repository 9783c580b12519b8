"""`ragcourt serve RUN`: the review desk, live progress and the report in the browser."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from ragcourt.commands.output import console
from ragcourt.runs.workspace import DEFAULT_HOME


def serve(
    run_id: Annotated[str, typer.Argument(help="the run to review")],
    host: Annotated[str, typer.Option(help="address to bind; anything but loopback requires --token")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port")] = 8765,
    token: Annotated[str | None, typer.Option(envvar="RAGCOURT_TOKEN", show_envvar=True,
                                                 help="access token (at least 16 characters)")] = None,
    reviewer: Annotated[str, typer.Option(help="reviewer name prefilled on the desk")] = "",
    home: Annotated[Path, typer.Option(help="workspace folder: record store, chroma, runs")] = DEFAULT_HOME,
) -> None:
    """Serve the review desk (keyboard-driven), live progress and the report of a run."""
    import uvicorn

    from ragcourt.web.app import DeskSettings, create_app
    from ragcourt.web.security import ServeRefused

    try:
        app = create_app(DeskSettings(home=home, run_id=run_id, host=host, port=port, token=token,
                                      reviewer=reviewer))
    except (ServeRefused, FileNotFoundError, LookupError) as error:
        console.print(f"[red]error:[/red] {escape(str(error))}")
        raise typer.Exit(2) from None
    shown = f"[{host}]" if ":" in host else host
    hint = "/?token=<your token>" if token else "/desk"
    console.print(f"review desk: http://{escape(shown)}:{port}{hint}  (Ctrl+C stops)")
    uvicorn.run(app, host=host, port=port, log_level="warning")


def register(app: typer.Typer) -> None:
    app.command(name="serve")(serve)
