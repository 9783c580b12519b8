"""What every command shares: the console, the one way to fail (one line, no traceback: exit 2 when the
command could not run, 1 when it ran and failed) and the errors any command may meet said that way, the
workspace option and its record store, the dataset options (--map, --format) and table printing (progress
bars: commands.progress)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, NoReturn

import pandas as pd
import typer
from rich.cells import cell_len
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ragcourt.analysis.summary import RunSummary
from ragcourt.data.formats import DatasetFormat
from ragcourt.data.human_scores import HumanScores
from ragcourt.metrics.values import MetricKey, MetricName
from ragcourt.runs.workspace import StoreLocationError, Workspace
from ragcourt.schema import SampleDiagnostics
from ragcourt.schema.config import EvalConfig, Method
from ragcourt.stores.records import RecordStore, StoreUnavailableError, StoreVersionError


class PipeFriendlyConsole(Console):
    """rich's console, except that piped (not a terminal) a printed line is never wrapped at the console's width:
    rich assumes 80 columns for a pipe and broke every per-question line of a logged run in two. Tables still
    fit the width (print_table sizes them): only text is printed unwrapped."""

    def print(self, *objects: Any, soft_wrap: bool | None = None, **options: Any) -> None:
        if soft_wrap is None and not self.is_terminal and all(isinstance(o, str) for o in objects):
            soft_wrap = True
        super().print(*objects, soft_wrap=soft_wrap, **options)


console = PipeFriendlyConsole()
Home = Annotated[Path, typer.Option(help="workspace folder: record store, chroma, runs")]
ColumnMapOption = Annotated[list[str] | None, typer.Option(
    "--map", metavar="FIELD=COLUMN", help="your column names: FIELD=COLUMN[,FIELD=COLUMN...] (repeatable), e.g. "
                  "question=query,reference_answer=gt_answer; a LangSmith export's as inputs.NAME / outputs.NAME")]
DatasetFormatOption = Annotated[DatasetFormat, typer.Option(
    "--format", help="auto (from the first row's fields), ragcourt, ragas (an EvaluationDataset's to_jsonl / "
                     "to_csv), langsmith (an export of examples) or hotpotqa")]
StrictOption = Annotated[bool, typer.Option(
    "--strict", help="refuse a row with a top-level field no sample has (without it: a warning naming the file, "
                     "line and the field it most likely misspells, and the field kept in metadata)")]


COULD_NOT_RUN = 2  # bad input or options, or a store, model or endpoint the command needs is not there
RAN_AND_FAILED = 1  # the command ran and failed: it produced nothing, or a gate did not pass


def fail(message: str, code: int = COULD_NOT_RUN) -> NoReturn:
    console.print(f"[red]error:[/red] {escape(message)}")
    raise typer.Exit(code)


@contextmanager
def one_line_errors() -> Iterator[None]:
    """Around every command (cli.py): the errors any command can meet beyond its own checks, said as `fail`
    says them instead of a traceback: a record store that cannot be opened or was written by another version,
    a store location that is no PostgreSQL URL."""
    try:
        yield
    except (StoreUnavailableError, StoreVersionError, StoreLocationError) as error:
        fail(str(error))


def existing_store(home: Path) -> RecordStore:
    """The record store of the workspace `home`; fails when it has none (nothing is created)."""
    workspace = Workspace(home)
    if not workspace.has_store():
        fail(f"no record store at {workspace.store_path}")
    return workspace.open_store()


# A question's line (`run`'s progress, `watch`): the headline figures of each method, both sides of element
# coverage (found in the retrieved chunks; stated by the answer, seed 003's own figure).
QUESTION_METRICS = (MetricName.C_PRECISION, MetricName.COMPLETENESS, MetricName.VERIFIABLENESS, MetricName.ELEMENT_COVERAGE,
                    MetricName.ELEMENT_ANSWER_COVERAGE, MetricName.SOFT_CORRECTNESS)


def question_metrics(d: SampleDiagnostics) -> str:
    """`c_prec=1.00  completeness=0.50 ...`: the QUESTION_METRICS the sample has, n/a where one is not available;
    with a failed split, a `*` on each value judged without it and the splits named at the end."""
    shown = []
    for name in QUESTION_METRICS:
        metric = next((m for m in d.metrics if MetricKey.of(m.name).base == name), None)
        if metric is not None:
            value = "n/a" if metric.value is None else f"{metric.value:.2f}{'*' if metric.flag else ''}"
            shown.append(f"{name}={value}")
    if d.failed_splits:
        shown.append(f"failed splits: {', '.join(d.failed_splits)} (* judged without them)")
    return "  ".join(shown)


def print_table(table: Table, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Print `table` with these columns and rows (plain text, escaped here), sized so that no value is cut at
    a narrow terminal (rich's own squeezing printed `extract…` for extractive_k1 and extractive_k5). Each
    column is at least as wide as its longest word, so names, ids and numbers stay whole. When the table is
    wider than the console, first multi-word headers wrap between words, then multi-word values ("[1506,
    1513]", reasons), the biggest saving first; if it is still too wide it runs past the console, whole."""
    natural, headers_wrapped, all_wrapped = [], [], []
    for index, header in enumerate(headers):
        values = [row[index] for row in rows]
        natural.append(max(map(cell_len, [header, *values])))
        headers_wrapped.append(max(map(cell_len, [*header.split(), *values])))
        all_wrapped.append(max(map(cell_len, [*header.split(), *(w for v in values for w in v.split())])))
    widths = list(natural)
    overhead = 3 * len(headers) + 1  # a border before each column and after the last, one space either side
    for narrower in (headers_wrapped, all_wrapped):
        while sum(widths) + overhead > console.width:
            saving, index = max((w - n, i) for i, (w, n) in enumerate(zip(widths, narrower, strict=True)))
            if saving <= 0:
                break
            widths[index] = narrower[index]
    too_wide = sum(widths) + overhead > console.width
    if too_wide:
        table.width = sum(widths) + overhead
    for header, width in zip(headers, widths, strict=True):
        table.add_column(escape(header), width=width)
    for row in rows:
        table.add_row(*map(escape, row))
    console.print(table, crop=not too_wide)


def print_usage(rows: Sequence[Mapping[str, Any]]) -> None:
    """LLM usage (llm.usage.UsageMeter.rows()) as a table: one row per model and role, and the total."""
    if not rows:
        return
    headers = ["model", "role", "calls", "cached calls", "prompt tokens", "completion tokens", "cost (USD)"]
    keys = ["calls", "cached_calls", "prompt_tokens", "completion_tokens"]

    def cost(value: float | None) -> str:
        return "n/a (no price)" if value is None else f"{value:.4f}"

    table_rows = [[str(r["model_id"]), str(r["role"]), *(f"{r[k]:,}" for k in keys), cost(r["cost_usd"])]
                  for r in rows]
    if len(rows) > 1:
        costs = [r["cost_usd"] for r in rows if r["cost_usd"] is not None]
        # a total over some models only would read as the whole cost
        total = (cost(sum(costs)) if len(costs) == len(rows) else cost(None) if not costs
                 else "n/a (a model has no price)")
        table_rows.append(["total", "", *(f"{sum(r[k] for r in rows):,}" for k in keys), total])
    print_table(Table(title="LLM usage (cached calls cost nothing and add no tokens)"), headers, table_rows)


def print_frame(title: str, frame: pd.DataFrame) -> None:
    print_table(Table(title=escape(title)), [str(c) for c in frame.columns],
                [[_cell(v) for v in row] for row in frame.itertuples(index=False)])


def _cell(value: object) -> str:
    if value is None or (isinstance(value, float) and value != value):  # pandas turns None into NaN
        return "n/a"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def print_summary(summary: RunSummary) -> None:
    table = Table(title=escape(summary.header()))
    print_table(table, ["metric", "mean", "samples", "n/a", "unscored checks", "escalated checks"],
                [[row.name, "n/a" if row.mean is None else f"{row.mean:.3f}", str(row.n_samples), str(row.n_na),
                  str(row.n_unscored), str(row.n_escalated)] for row in summary.metrics])
    if summary.unscored_by_judge:
        console.print(escape(unscored_by_judge_line(summary)))
    if (flagged := summary.flagged_line()) is not None:
        console.print(escape(flagged))
    if summary.n_empty_answers:
        console.print(escape(empty_answers_line(summary)))


def empty_answers_line(summary: RunSummary) -> str:
    """How many samples the system answered with nothing, and how that was scored (a non-answer, not n/a)."""
    n = summary.n_empty_answers
    return (f"empty answers: {n} of {summary.n_samples} samples (the system's answer showed nothing), scored as "
            "stating nothing: 0 where a figure counts what the answer states or gets right, n/a where it asks "
            "how good its claims are")


def unscored_by_judge_line(summary: RunSummary) -> str:
    """Which judges left verdicts unscored, and who decided those checks: another judge only where one scored
    (a per-check split would need every verdict read; the summary reads aggregates only)."""
    shown = ", ".join(f"{judge} {n} of {total}" for judge, n, total in summary.unscored_by_judge)
    others = {judge for judge, _, _ in summary.unscored_by_judge if set(summary.scored_judges) - {judge}}
    if not others:
        return (f"unscored verdicts by judge: {shown}. No other judge scored any check, so nobody decided those "
                "checks: they count in a metric's 'unscored checks' (checks no judge scored).")
    return (f"unscored verdicts by judge: {shown}. Where another judge scored such a check, it was decided "
            "without them; a metric's 'unscored checks' counts the checks no judge scored.")


def print_element_diagnosis(store: RecordStore, run_id: str) -> None:
    from ragcourt.analysis.qcare_tables import element_diagnosis_lines

    for line in element_diagnosis_lines(store.get_diagnostics(run_id)):
        console.print(escape(line))


def print_cube_human(store: RecordStore, run_id: str, config: EvalConfig, human: HumanScores) -> None:
    """Seed 000's Table 5 of a run: the people's ratings between the judges' bounds, with its n/a notes."""
    from ragcourt.analysis.cube_tables import (
        HUMAN_NOTE,
        Unavailable,
        cube_human,
        cube_human_noted,
        cube_inputs,
        cube_of_inputs,
    )

    inputs = cube_inputs(store, run_id, config)
    if isinstance(inputs, Unavailable):
        console.print(f"CuBE human ratings: n/a: {escape(inputs.reason)}")
        return
    report = cube_of_inputs(inputs, config)
    table = cube_human_noted(cube_human(inputs, report, human, config), report, inputs.counts.n_samples)
    print_frame("CuBE human ratings between the judges' bounds (seed 000, Table 5)", table.marked())
    console.print(escape(HUMAN_NOTE))
    for line in table.lines():
        console.print(f"[yellow]n/a[/yellow] {escape(line)}")


def print_method_tables(store: RecordStore, run_id: str, config: EvalConfig) -> None:
    """The CuBE and CUE-R tables of a run, for the methods its configuration ran, with their n/a notes."""
    from ragcourt.analysis.cube_tables import (
        Unavailable,
        cube_inputs,
        cube_noted_frame,
        cube_of_inputs,
        cube_r_at_k_reason,
        cube_retrieved_only_noted,
        cube_rule_based_note,
        reading_legend,
        top_n_note,
    )
    from ragcourt.analysis.cuer_tables import (
        cuer_closed_book_of_run,
        cuer_condition_frame,
        cuer_counts,
        cuer_frame,
        cuer_totals,
    )
    from ragcourt.analysis.na_notes import NaNotes

    if Method.CUBE in config.methods:
        inputs = cube_inputs(store, run_id, config)
        if isinstance(inputs, Unavailable):
            console.print(f"CuBE: n/a: {escape(inputs.reason)}")
        else:
            report = cube_of_inputs(inputs, config)
            r = report.r_at_k.value
            notes = NaNotes()  # one numbering for both tables: "n/a [k]" is note k, printed under its table
            table4 = cube_noted_frame(report, notes=notes, spread=True)
            print_frame(f"CuBE (seed 000 Table 4): normalized (RAG - closed_book) / (oracle - closed_book); "
                        f"R@k = {'n/a' if r is None else f'{r:.2%}'} (k = TOP-N {inputs.top_n})", table4.marked())
            console.print(escape(f"{reading_legend(report)}. {top_n_note(inputs, config.top_k)}"))
            rule_based = cube_rule_based_note(config, [j.judge for j in report.judges])
            if rule_based:
                console.print(f"[yellow]warning:[/yellow] CuBE {escape(rule_based)}")
            r_at_k = cube_r_at_k_reason(report)
            for line in [*table4.lines(), *([f"R@k n/a: {r_at_k}"] if r_at_k else [])]:
                console.print(f"[yellow]n/a[/yellow] {escape(line)}")
            retrieved_only = cube_retrieved_only_noted(inputs, notes)
            print_frame("CuBE retrieved-only analysis (seed 000 5.3): RAG scores vs rank score, all samples "
                        "and samples whose gold document was retrieved", retrieved_only.marked())
            for line in retrieved_only.lines():
                console.print(f"[yellow]n/a[/yellow] {escape(line)}")
    if Method.CUER in config.methods:
        diagnostics = store.get_diagnostics(run_id)
        answers, retrievals = store.get_answers(run_id), store.get_retrievals(run_id)
        closed_book = cuer_closed_book_of_run(store, run_id, answers, retrievals)
        if not any(d.perturbations for d in diagnostics):
            console.print("CUE-R: n/a: no perturbed answers in this run")
        else:
            print_frame("CUE-R: mean change when a chunk is removed / replaced / duplicated (perturbed - normal); "
                        "last row: the closed-book control", cuer_frame(diagnostics, closed_book=closed_book))
            counts = cuer_counts(diagnostics, answers, retrievals)
            console.print(escape(cuer_totals(counts)[0]))
            print_frame("CUE-R per condition: soft correctness, answer F1, grounding, confidence error and trace "
                        "divergence (trace: reported by the system or judged from the claim-chunk checks)",
                        cuer_condition_frame(diagnostics))
        console.print(escape(closed_book.note()))
