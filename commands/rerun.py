"""`ragcourt rerun --changed BASE_RUN`: evaluate only the samples whose reference answer or element list
changed since BASE_RUN, in a new run that reuses every other row of the base run (see ragcourt.runs.rerun)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from ragcourt.commands.endpoints import require_endpoints
from ragcourt.commands.evaluation import (
    OTLP_HELP,
    PRECOMPUTED,
    REFERENCE,
    build_system,
    read_samples,
    telemetry_of,
)
from ragcourt.commands.output import (
    ColumnMapOption,
    DatasetFormatOption,
    Home,
    StrictOption,
    console,
    print_summary,
    print_table,
)
from ragcourt.commands.output import fail as _fail
from ragcourt.data.formats import DatasetFormat
from ragcourt.data.loaders import DatasetError
from ragcourt.runs.models import Models, eval_context
from ragcourt.runs.rerun import CarriedReviews, RerunResult, arerun_changed
from ragcourt.runs.runner import RunLockedError
from ragcourt.runs.workspace import DEFAULT_HOME, HOTPOTQA_COLLECTION, Workspace
from ragcourt.schema.config import ConfigError, EvalConfig
from ragcourt.systems import Precomputed


def _print_result(result: RerunResult) -> None:
    plan = result.plan
    console.print(escape(f"new run {result.run.run_id} (base {result.run.base_run}, created "
                         f"{result.run.created_at:%Y-%m-%d %H:%M:%S} UTC): {len(plan.changed)} rows re-run, "
                         f"{len(result.copied)} rows copied from the base run"
                         + (f", {len(plan.dropped)} base rows not in the dataset (left out)" if plan.dropped else "")))
    line = reviews_line(result.reviews)
    if line:
        console.print(escape(line))
    if not plan.changed:
        return
    finished = {d.sample_id: d for d in result.rerun}
    rows = []
    for change in plan.changed:
        row = finished.get(change.sample_id)
        when = f"{row.created_at:%Y-%m-%d %H:%M:%S}" if row else "not finished"
        rows.append([change.sample_id, "; ".join(change.reasons), when, str(row.status) if row else "-"])
    print_table(Table(title="re-run rows"), ["sample", "why", "evaluated at (UTC)", "status"], rows)


def reviews_line(reviews: CarriedReviews) -> str | None:
    """What became of the base run's review decisions; None when it had none."""
    carried, gone, waiting = len(reviews.carried), len(reviews.gone), len(reviews.waiting)
    if not carried and not gone and not waiting:
        return None
    return (f"review decisions: {carried} carried from the base run (their checks are unchanged: nobody is asked "
            f"again), {gone} no longer {'applies' if gone == 1 else 'apply'} (the check is not in the new run)"
            + (f", {waiting} wait on samples that did not finish (the same command again settles them)"
               if waiting else ""))


def rerun(
    changed: Annotated[str, typer.Option("--changed", help="the base run: re-run only what changed since it")],
    dataset: Annotated[Path | None, typer.Option(help="the (edited) samples; default: the base run's samples")]
    = None,
    system: Annotated[str | None, typer.Option(help="precomputed or reference; default: as in the base run")]
    = None,
    collection: Annotated[str | None, typer.Option(
        help="chromadb collection of the reference system; default: the base run's")] = None,
    run_id: Annotated[str | None, typer.Option(help="id of the new run (default: derived, so it resumes)")]
    = None,
    column_map: ColumnMapOption = None,
    dataset_format: DatasetFormatOption = DatasetFormat.AUTO,
    strict: StrictOption = False,
    otlp_endpoint: Annotated[str | None, typer.Option(help=OTLP_HELP)] = None,
    home: Home = DEFAULT_HOME,
) -> None:
    """Evaluate only the samples whose reference answer or element list changed since the base run, and copy
    every other row; prints which rows were re-run, why and when.

    A person's review decisions carry over wherever their check is unchanged (nobody is asked again); it says how
    many carried and how many no longer apply.

    The re-evaluated samples' spans go where `run`'s do (--otlp-endpoint)."""
    from ragcourt.analysis.qcare_tables import element_diagnosis_lines
    from ragcourt.analysis.summary import summarize

    workspace = Workspace(home)
    if not workspace.has_store():
        _fail(f"no record store at {workspace.store_path}")
    store = workspace.open_store()
    try:
        base = store.get_run(changed)
        if base is None:
            _fail(f"no run '{changed}' in {workspace.store_path}")
        assert base is not None
        try:
            samples = (read_samples(dataset, dataset_format, column_map, strict=strict) if dataset
                       else store.get_samples(changed))
        except (DatasetError, ValueError) as error:
            _fail(str(error))
        kind = system or (PRECOMPUTED if base.system == Precomputed().name else REFERENCE)
        if kind not in (PRECOMPUTED, REFERENCE):
            _fail(f"unknown system '{kind}' (use precomputed or reference)")
        # runs recorded before RunInfo kept the collection used `run`'s default one
        collection = collection or base.collection or HOTPOTQA_COLLECTION
        config = EvalConfig.of_stored_run(base.config)
        require_endpoints(config)
        models = Models(config, store)
        target = build_system(kind, workspace, models, collection)
        vectors = workspace.open_vectors() if kind == REFERENCE else None
        try:
            context = eval_context(config, target, store, models, vectors, collection if kind == REFERENCE else None)
        except ConfigError as error:
            _fail(str(error))
        telemetry = telemetry_of(otlp_endpoint, config)
        try:
            result = asyncio.run(arerun_changed(context, changed, samples, new_run_id=run_id,
                                                runs_home=workspace.home / "runs",
                                                dataset=str(dataset) if dataset else None, telemetry=telemetry))
        except (RunLockedError, LookupError, ValueError) as error:
            _fail(str(error))
        finally:
            telemetry.shutdown()  # sends the spans still batched
        _print_result(result)
        print_summary(summarize(store, result.run.run_id))
        for line in element_diagnosis_lines(store.get_diagnostics(result.run.run_id)):
            console.print(escape(line))
        console.print(escape(f"run directory: {workspace.run_dir(result.run.run_id)}"))
    finally:
        store.close()


def register(app: typer.Typer) -> None:
    app.command("rerun")(rerun)

