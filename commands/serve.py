"""`ragcourt serve RUN`: the review desk, live progress and the report in the browser."""

from __future__ import annotations

import secrets
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
                                                 help="access token (at least 16 characters); by default a new "
                                                      "one is made and printed in the desk's URL")] = None,
    no_token: Annotated[bool, typer.Option("--no-token", help="loopback only: no token; then any process of "
                                                               "this machine can read and decide")] = False,
    reviewer: Annotated[str, typer.Option(help="reviewer name prefilled on the desk")] = "",
    home: Annotated[Path, typer.Option(help="workspace folder: record store, chroma, runs")] = DEFAULT_HOME,
) -> None:
    """Serve the review desk (keyboard-driven), live progress and the report of a run."""
    import uvicorn

    from ragcourt.web.app import DeskSettings, create_app
    from ragcourt.web.security import ServeRefused

    if token and no_token:
        console.print("[red]error:[/red] give --token or --no-token, not both")
        raise typer.Exit(2)
    chosen = desk_token(token, no_token)
    if no_token:
        console.print("[yellow]warning:[/yellow] --no-token: any process on this machine can read the desk's CSRF "
                      "token, forge the Origin and decide reviews")
    try:
        app = create_app(DeskSettings(home=home, run_id=run_id, host=host, port=port, token=chosen,
                                      reviewer=reviewer))
    except (ServeRefused, FileNotFoundError, LookupError) as error:
        console.print(f"[red]error:[/red] {escape(str(error))}")
        raise typer.Exit(2) from None
    shown = f"[{host}]" if ":" in host else host
    hint = "/desk" if chosen is None else "/?token=<your token>" if token else f"/?token={chosen}"
    console.print(f"review desk: http://{escape(shown)}:{port}{hint}  (Ctrl+C stops)")
    uvicorn.run(app, host=host, port=port, log_level="warning")


def desk_token(given: str | None, no_token: bool) -> str | None:
    """The token the desk requires: the one given, else a new one (as Jupyter does: on loopback any local
    process can otherwise read the CSRF token and decide a review); none only when asked with --no-token."""
    if no_token:
        return None
    return given or secrets.token_urlsafe(24)


def register(app: typer.Typer) -> None:
    app.command(name="serve")(serve)
