"""`ragcourt summary RUN`: a run's figures from the store (no LLM call)."""

from __future__ import annotations

import typer
from rich.markup import escape

from ragcourt.analysis.summary import summarize
from ragcourt.commands.output import (
    Home,
    console,
    existing_store,
    fail,
    print_element_diagnosis,
    print_method_tables,
    print_summary,
)
from ragcourt.runs.workspace import DEFAULT_HOME, Workspace
from ragcourt.schema.config import EvalConfig


def summary(run_id: str, home: Home = DEFAULT_HOME) -> None:
    """Print a run's figures from the store (no LLM call)."""
    store = existing_store(home)
    if store.get_run(run_id) is None:
        fail(f"no run '{run_id}' in {Workspace(home).store_path}")
    run = store.get_run(run_id)
    assert run is not None
    if run.base_run:  # seed 003: a re-test records which rows it evaluated again
        console.print(escape(f"re-test of run {run.base_run}: {len(run.rerun_sample_ids)} rows evaluated again "
                             f"({', '.join(run.rerun_sample_ids) or 'none'}), every other row copied from it"))
    print_summary(summarize(store, run_id))
    print_element_diagnosis(store, run_id)
    print_method_tables(store, run_id, EvalConfig.model_validate(run.config))


def register(app: typer.Typer) -> None:
    app.command("summary")(summary)
