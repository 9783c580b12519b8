"""The method charts a run writes next to its diagnostics: cube_bounds.svg (CuBE) and cuer_utility.svg
(CUE-R), when the run used the method and has what the chart needs; each with the counts behind it, as the
HTML report draws it (the CuBE chart lists the reasons of its n/a figures itself; the CUE-R chart has the
closed-book control)."""

from __future__ import annotations

from pathlib import Path

from ragcourt.analysis.cube_tables import Unavailable, cube_inputs, cube_of_inputs, cube_rule_based_note
from ragcourt.analysis.cuer_tables import cuer_closed_book_of_run, cuer_counts
from ragcourt.analysis.run_order import diagnostics_in_run_order
from ragcourt.report.cube_chart import cube_bounds_svg
from ragcourt.report.cuer_chart import cuer_utility_svg
from ragcourt.schema.config import EvalConfig, Method
from ragcourt.stores.records import RecordStore

CUBE_CHART = "cube_bounds.svg"
CUER_CHART = "cuer_utility.svg"


def write_method_charts(store: RecordStore, run_id: str, config: EvalConfig, run_dir: Path) -> dict[Path, str | None]:
    """Each chart file -> None when written, or the reason it was not (the method's table is n/a)."""
    out: dict[Path, str | None] = {}
    run_dir.mkdir(parents=True, exist_ok=True)
    if Method.CUBE in config.methods:
        path = run_dir / CUBE_CHART
        inputs = cube_inputs(store, run_id, config)
        if isinstance(inputs, Unavailable):
            out[path] = inputs.reason
        else:
            report = cube_of_inputs(inputs, config)
            warning = cube_rule_based_note(config, [j.judge for j in report.judges])
            path.write_text(cube_bounds_svg(report, counts=inputs.counts, warning=warning), encoding="utf-8")
            out[path] = None
    if Method.CUER in config.methods:
        path = run_dir / CUER_CHART
        diagnostics = diagnostics_in_run_order(store, run_id)  # one row order for two identical runs
        if not any(d.perturbations for d in diagnostics):
            out[path] = "no perturbed answers in this run"
        else:
            answers, retrievals = store.get_answers(run_id), store.get_retrievals(run_id)
            counts = cuer_counts(diagnostics, answers, retrievals)
            closed_book = cuer_closed_book_of_run(store, run_id, answers, retrievals)
            path.write_text(cuer_utility_svg(diagnostics, counts=counts, closed_book=closed_book), encoding="utf-8")
            out[path] = None
    return out
