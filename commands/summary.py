"""`ragcourt summary RUN`: a run's figures from the store (no LLM call)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

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
from ragcourt.schema.config import ConfigError, EvalConfig, Reconcile
from ragcourt.validity.jury_weights import (
    JuryWeights,
    changed_heading,
    changed_text,
    estimate_text,
    fit_jury,
    weighting_sentence,
)
from ragcourt.validity.review_budget import Uncertainty, plan_reviews


def summary(
    run_id: str,
    jury: Annotated[bool, typer.Option(
        "--jury/--no-jury", help="the per-judge table (Dawid-Skene accuracy per check kind, from the run's verdicts "
                                 "and reviews) and the remaining uncertainty of the headline figures; default: on "
                                 "for a `reconcile: weighted` run or one with pending escalations")] = False,
    home: Home = DEFAULT_HOME,
) -> None:
    """Print a run's figures from the store (no LLM call).

    With pending escalations (or --jury) also each headline figure's remaining uncertainty: its range if every
    pending escalation feeding it were decided yes / no, and its standard deviation from the decisions'
    probabilities (validity.review_budget); and for a weighted run (or --jury) how much each judge is worth."""
    store = existing_store(home)
    if store.get_run(run_id) is None:
        fail(f"no run '{run_id}' in {Workspace(home).store_path}")
    run = store.get_run(run_id)
    assert run is not None
    if run.base_run:  # seed 003: a re-test records which rows it evaluated again
        console.print(escape(f"re-test of run {run.base_run}: {len(run.rerun_sample_ids)} rows evaluated again "
                             f"({', '.join(run.rerun_sample_ids) or 'none'}), every other row copied from it"))
    figures = summarize(store, run_id)
    print_summary(figures)
    config = EvalConfig.of_stored_run(run.config)
    weighted = config.reconcile is Reconcile.WEIGHTED
    if jury or weighted or figures.n_pending:
        try:  # a calibrated run's judges are known by its profile's ids: the profile file must still be readable
            weights = fit_jury(store, run_id, config)
        except ConfigError as error:
            console.print(escape(f"jury estimates n/a: {error}"))
        else:
            if jury or weighted:
                print_jury(weights, weighted)
            print_uncertainty(plan_reviews(store, run_id, weights).uncertainty)
    print_element_diagnosis(store, run_id)
    print_method_tables(store, run_id, config)


def print_jury(weights: JuryWeights, weighted: bool) -> None:
    """Per check kind, each judge's estimated accuracy with its 95 % interval, and what the weighting changed."""
    table = Table(title="jury: estimated accuracy per judge (Dawid-Skene, one-coin; 95 % Beta interval; "
                        "reviews clamped)")
    table.add_column("check kind")
    table.add_column("checks", justify="right")
    table.add_column("reviewed", justify="right")
    for judge in weights.judges:
        table.add_column(escape(judge), justify="right")
    table.add_column(changed_heading(weighted), justify="right")
    for kind in weights.kinds:
        table.add_row(str(kind.kind), str(kind.n_checks), str(kind.n_reviewed),
                      *(estimate_text(kind, judge) for judge in weights.judges), changed_text(kind))
    console.print(table)
    console.print(weighting_sentence(weights, weighted))


def print_uncertainty(rows: Sequence[Uncertainty]) -> None:
    if not rows:
        return
    table = Table(title="remaining uncertainty given the reviews so far (unit-share model, validity.review_budget)")
    for column in ("figure", "value", "all pending no .. all yes", "sd", "pending escalations"):
        table.add_column(column, justify="left" if column == "figure" else "right")
    for row in rows:
        table.add_row(escape(row.name), f"{row.value:.3f}", f"{row.low:.3f} .. {row.high:.3f}", f"{row.sd:.3f}",
                      str(row.n_pending))
    console.print(table)


def register(app: typer.Typer) -> None:
    app.command("summary")(summary)
