"""`ragcourt report RUN`: one self-contained HTML file from the store, and CSV/Parquet exports."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from ragcourt.commands.output import console, fail, print_cube_human
from ragcourt.runs.workspace import DEFAULT_HOME, Workspace


def parse_prices(items: list[str]) -> dict[str, tuple[float, float]]:
    """`MODEL=PROMPT_PER_1K,COMPLETION_PER_1K` (USD) -> the price table of llm.usage."""
    prices = {}
    for item in items:
        model, _, pair = item.rpartition("=")
        try:
            prompt, completion = (float(p) for p in pair.split(","))
        except ValueError:
            raise typer.BadParameter(f"'{item}': expected MODEL=PROMPT_PER_1K,COMPLETION_PER_1K") from None
        if not model:
            raise typer.BadParameter(f"'{item}': the model id is missing")
        prices[model] = (prompt, completion)
    return prices


def report(
    run_id: Annotated[str, typer.Argument(help="the run to report")],
    out: Annotated[Path | None, typer.Option(help="HTML file; default <home>/runs/<run>/report.html")] = None,
    export: Annotated[Path | None, typer.Option(help="also write every table as CSV and Parquet here")] = None,
    price: Annotated[list[str] | None, typer.Option(help="repeatable MODEL=PROMPT_PER_1K,COMPLETION_PER_1K "
                                                              "(USD) for the cost column")] = None,
    human_scores: Annotated[Path | None, typer.Option(
        help="people's 0-10 ratings of the RAG answers (.jsonl / .csv: sample_id and one column per CuBE "
             "dimension), placed between the judges' closed-book and oracle bounds beside the judges' scores "
             "(seed 000, Table 5)")] = None,
    home: Annotated[Path, typer.Option(help="workspace folder: record store, chroma, runs")] = DEFAULT_HOME,
) -> None:
    """Write a self-contained HTML report (opens offline: one inline script sorts and filters its tables; no
    external resource)."""
    from ragcourt.analysis.cube_tables import check_rated_samples
    from ragcourt.data.human_scores import load_human_scores
    from ragcourt.data.loaders import DatasetError
    from ragcourt.report.data import DRILL_DOWN_QUESTIONS, collect
    from ragcourt.report.export import export_run
    from ragcourt.report.html import render_report
    from ragcourt.report.sections import method_sections

    workspace = Workspace(home)
    if not workspace.has_store():
        console.print(f"[red]error:[/red] no record store at {escape(str(workspace.store_path))}")
        raise typer.Exit(2)
    prices = parse_prices(price or [])
    store = workspace.open_store()
    try:
        try:
            data = collect(store, run_id, prices, drill_down=DRILL_DOWN_QUESTIONS)
        except LookupError as error:
            console.print(f"[red]error:[/red] {escape(str(error))}")
            raise typer.Exit(2) from None
        human = None
        if human_scores is not None:
            try:
                human = load_human_scores(human_scores, [d.name for d in data.config.dimensions])
                check_rated_samples(human, [s.id for s in store.get_samples(run_id)])
            except (DatasetError, ValueError) as error:
                fail(f"{error}" if isinstance(error, DatasetError) else f"{human_scores}: {error}")
            print_cube_human(store, run_id, data.config, human)
        sections = method_sections(store, data, human)
        target = out or workspace.run_dir(run_id) / "report.html"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(render_report(data, sections), encoding="utf-8")
        console.print(f"report: {escape(str(target))} ({target.stat().st_size / 1024:.0f} KiB)")
        if export is not None:  # every question's checks and verdicts, read a slice at a time
            written = export_run(store, data, sections, export)
            console.print(f"exported {len(written) // 2} tables as CSV and Parquet to {escape(str(export))}")
    finally:
        store.close()


def register(app: typer.Typer) -> None:
    app.command(name="report")(report)
