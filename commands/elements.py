"""`ragcourt elements export|import` (editable frozen element lists) and `ragcourt ragchecker-samples`
(the bundled RAGChecker pairs as a dataset of long reference answers with a precomputed answer)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.markup import escape

from ragcourt.commands.output import Home, console
from ragcourt.commands.output import fail as _fail
from ragcourt.data.loaders import BundledDataset, DatasetErrors, bundled, load_ragchecker_pairs
from ragcourt.runs.element_lists import export_lines, import_lines, read_lines, write_lines
from ragcourt.runs.models import Models
from ragcourt.runs.workspace import DEFAULT_HOME, Workspace
from ragcourt.schema.config import EvalConfig

MAX_SHOWN = 50  # problems printed by a failed import; the rest are counted


def fail_all(error: DatasetErrors, consequence: str) -> NoReturn:
    """Print every problem of a refused file (up to MAX_SHOWN), one `error:` line each, then how many lines
    are bad and `consequence` (e.g. "nothing was imported"); exit 2 like `fail`."""
    for problem in error.errors[:MAX_SHOWN]:
        console.print(f"[red]error:[/red] {escape(str(problem))}")
    if len(error.errors) > MAX_SHOWN:
        console.print(f"[red]error:[/red] ... and {len(error.errors) - MAX_SHOWN} more problems")
    bad = error.n_lines
    if bad:
        _fail(f"{bad} bad line{'s' * (bad != 1)} in {error.file}; {consequence}")
    raise typer.Exit(2)


elements_app = typer.Typer(no_args_is_help=True, help="Export and import the frozen element lists of "
                           "reference answers, so a person can edit them (seed 003).")


@elements_app.command("export")
def export_elements(
    run_id: Annotated[str, typer.Argument(help="the run whose samples' element lists to export")],
    out: Annotated[Path, typer.Option(help="JSONL file to write, one line per sample")],
    home: Home = DEFAULT_HOME,
) -> None:
    """Write one line per sample: sample_id, question, reference_answer, decomposition_id, elements, edited,
    pointer_elements (what the pointer rule would drop). Edit `elements`, then `ragcourt elements import`."""
    workspace = Workspace(home)
    if not workspace.has_store():
        _fail(f"no record store at {workspace.store_path}")
    with workspace.open_store() as store:
        run = store.get_run(run_id)
        if run is None:
            _fail(f"no run '{run_id}' in {workspace.store_path}")
        config = EvalConfig.of_stored_run(run.config)
        lines = export_lines(store, Models(config, store).decomposer(), store.get_samples(run_id))
    write_lines(lines, out)
    missing = sum(1 for line in lines if not line.elements)
    console.print(escape(f"wrote {len(lines)} element lists to {out} ({sum(len(x.elements) for x in lines)} "
                         f"elements, {sum(x.edited for x in lines)} already edited, "
                         f"{sum(len(x.pointer_elements) for x in lines)} flagged as pointers, {missing} with no "
                         "stored split)"))
    console.print("edit the 'elements' lists (delete, merge, rewrite); keep every other field as it is")


@elements_app.command("import")
def import_elements(
    file: Annotated[Path, typer.Argument(help="a JSONL file written by `ragcourt elements export`, edited")],
    home: Home = DEFAULT_HOME,
) -> None:
    """Validate every line, then store each changed list as edited under the same id: later runs use it."""
    try:
        lines = read_lines(file)
    except DatasetErrors as error:
        fail_all(error, "nothing was imported")
    with Workspace(home).open_store() as store:
        result = import_lines(store, lines)
    console.print(f"{len(result.changed)} element lists stored as edited, {len(result.unchanged)} unchanged")
    if result.sample_ids:
        console.print(escape(f"samples with a changed list: {', '.join(result.sample_ids)}"))
        console.print("next: [bold]ragcourt rerun --changed RUN[/bold] evaluates only these samples again")


def ragchecker_samples(
    out: Annotated[Path, typer.Option(help="JSONL file of samples to write")],
    response: Annotated[int, typer.Option(min=1, max=2, help="whose response is the precomputed answer")] = 1,
) -> None:
    """The bundled RAGChecker pairs as samples: query, long reference answer (gt_answer) and model 1's (or 2's)
    response as a precomputed answer. The pairs have no retrieved contexts: run them with
    `--system precomputed`; element verdicts then come from the answer only."""
    pairs = load_ragchecker_pairs(bundled(BundledDataset.RAGCHECKER_PAIRS))
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as handle:
        for pair in pairs:
            sample = pair.to_sample()
            chosen = pair.model1 if response == 1 else pair.model2
            row = {**sample.model_dump(mode="json", exclude={"contexts", "answer"}), "answer": chosen.response,
                   "metadata": {**sample.metadata, "answer_model": chosen.model_name}}
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    console.print(f"wrote {len(pairs)} samples to {out} (answers of model {response}; no contexts: RAGChecker "
                  "pairs do not include the retrieved chunks)")


def register(app: typer.Typer) -> None:
    app.add_typer(elements_app, name="elements")
    app.command("ragchecker-samples")(ragchecker_samples)
