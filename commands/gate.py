"""The CI gate of `ragcourt run --fail-under` and `ragcourt compare --fail-on-regression`: the thresholds
read before anything runs, and the failure lines printed (one per failed figure) with exit status 1."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import typer
from rich.markup import escape

from ragcourt.analysis.gate import (
    GateError,
    check_thresholds,
    gate_summary,
    na_reasons,
    parse_threshold_items,
    regressions,
)
from ragcourt.analysis.summary import RunSummary
from ragcourt.commands.output import RAN_AND_FAILED, console, fail
from ragcourt.runs.workspace import Workspace
from ragcourt.schema.config import EvalConfig

GATE_FAILED = RAN_AND_FAILED  # the figures are below the gate (COULD_NOT_RUN, 2, is a command that could not run)


def thresholds_of(config: EvalConfig, config_source: str, items: Sequence[str] | None) -> dict[str, float]:
    """The config's `fail_under` with the `--fail-under` items over it; fails naming the bad one, before
    anything is evaluated (a misspelt metric must not cost a run)."""
    try:
        check_thresholds(config.fail_under, f"{config_source}: key 'fail_under'")
        return {**config.fail_under, **parse_threshold_items(items or ())}
    except GateError as error:
        fail(str(error))


def enforce_fail_under(workspace: Workspace, summary: RunSummary, thresholds: dict[str, float],
                       allow_na: bool, count_flagged: bool = False) -> None:
    """Print one line per figure below its minimum (or n/a, unless `allow_na`) and exit 1 if any; else one
    line saying the gate passed. A flagged sample figure counts as n/a unless `count_flagged`."""
    if not thresholds:
        return
    missing = [row.name for row in summary.metrics if row.name in thresholds and row.mean is None]
    diagnostics = []
    if missing or summary.n_failed:  # only then are the per-sample reasons read
        with workspace.open_store() as store:
            diagnostics = store.get_diagnostics(summary.run_id)
    failures = gate_summary(summary, thresholds, allow_na=allow_na, reasons=na_reasons(diagnostics, missing),
                            diagnostics=diagnostics, count_flagged=count_flagged)
    for failure in failures:
        console.print(escape(failure.line()), style="red", soft_wrap=True)  # one line each, whatever the width
    if failures:
        raise typer.Exit(GATE_FAILED)
    shown = ", ".join(f"{name} >= {minimum:g}" for name, minimum in thresholds.items())
    flagged = sum(row.n_flagged for row in summary.metrics if row.name in thresholds)
    notes = [*(["n/a allowed"] if allow_na else []),
             *([f"{flagged} flagged figures {'counted' if count_flagged else 'left out as n/a'}"] if flagged else [])]
    said = f" ({'; '.join(notes)})" if notes else ""
    console.print(escape(f"gate passed: {shown}{said}"), soft_wrap=True)


def enforce_no_regression(frame: pd.DataFrame, fail_on_any_drop: bool) -> None:
    """One line per drop of a `compare_frame` (failed, inside the band, or without a known band) and exit 1
    when one fails the gate."""
    found = regressions(frame, fail_on_any_drop=fail_on_any_drop)
    for regression in found:
        console.print(escape(regression.line), style="red" if regression.failed else None, soft_wrap=True)
    if any(r.failed for r in found):
        raise typer.Exit(GATE_FAILED)
    console.print("gate passed: no drop beyond the noise band" if found else "gate passed: no metric dropped")
