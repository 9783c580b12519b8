"""`ragcourt noise` (run-to-run measurement noise) and `ragcourt compare` (differences marked as noise)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated

import pandas as pd
import typer
from pydantic import ValidationError
from rich.markup import escape
from rich.table import Table

from ragcourt.analysis.noise import (
    ALL,
    DEFAULT_METRICS,
    METRIC_MEANINGS,
    PAIRED_BAND,
    BandSource,
    SavedBand,
    compare_frame,
    different_configurations_refusal,
    differing_settings,
    known_metric_names,
    metric_names,
    noise_frame,
    nothing_varied,
    repeat_sds,
    runs_origin,
    unknown_metrics,
)
from ragcourt.commands.endpoints import require_endpoints
from ragcourt.commands.evaluation import build_system, read_samples
from ragcourt.commands.gate import enforce_no_regression
from ragcourt.commands.output import Home, console, existing_store, print_table
from ragcourt.commands.output import fail as _fail
from ragcourt.data.loaders import DatasetError
from ragcourt.runs.models import Models, eval_context
from ragcourt.runs.runner import Runner
from ragcourt.runs.workspace import DEFAULT_HOME, Workspace
from ragcourt.schema import Decomposition, DecompositionKind, Sample, SampleDiagnostics, content_id
from ragcourt.schema.config import ConfigError, load_config
from ragcourt.stores.records import RecordStore

NOISE_COLUMNS = {"group": "group", "n_questions": "n", "n_unpaired": "unpaired", "per_question_sd": "sd/question",
                 "mean_difference": "mean B-A", "band": "± band", "is_noise": "noise?"}
COMPARE_COLUMNS = {"metric": "metric", "n_questions": "n", "mean_a": "A", "mean_b": "B", "difference": "B-A",
                   "band": "± band", "verdict": "verdict", "band_from": "band from"}
# The per-question sd `ragcourt noise` measured last, per metric: the noise band `compare` uses without --noise.
BANDS_FILE = Path("noise") / "bands.json"

NOTHING_VARIED = (
    "warning: the band of {metric} is 0 because nothing varied: both runs gave identical values on every "
    "question (likely precomputed answers, rule-based judges such as lexical, or a temperature-0 "
    "deterministic model). It says nothing about the run-to-run noise of a real system; repeat with the "
    "live system and LLM judges to measure that."
)


AllowDifferentConfigs = Annotated[bool, typer.Option(
    "--allow-different-configs",
    help="take the band from runs of different configurations anyway (refused without it: their differences are "
         "not run-to-run noise); the band then says so wherever it is shown")]


def _cell(value: object) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(value)


def _print_frame(title: str, frame: pd.DataFrame, columns: dict[str, str]) -> None:
    """The chosen columns (frame column -> header); n/a reasons as numbered notes under the table."""
    notes: dict[str, int] = {}
    rows = []
    for row in frame.to_dict("records"):
        reason = row.get("na_reason")
        rows.append([*(_cell(row[c]) for c in columns),
                     f"[{notes.setdefault(reason, len(notes) + 1)}]" if reason else ""])
    print_table(Table(title=escape(title)), [*columns.values(), "note"], rows)  # ids and groups never cut
    for reason, number in notes.items():
        console.print(escape(f"[{number}] n/a: {reason}"))


def _diagnostics(store: RecordStore, run_id: str) -> list[SampleDiagnostics]:
    if store.get_run(run_id) is None:
        _fail(f"no run '{run_id}' in {store.path}")
    return store.get_diagnostics(run_id)


def _repeat_runs(store: RecordStore, run_a: str, run_b: str, allow_different: bool) -> list[str]:
    """The settings two stored runs differ in (empty for repeats of one configuration). Runs of different
    configurations differ by more than noise: refused (exit 2) unless `allow_different`, then warned about."""
    a, b = store.get_run(run_a), store.get_run(run_b)
    differing = [] if a is None or b is None else differing_settings(a, b)
    if differing and not allow_different:
        _fail(different_configurations_refusal(run_a, run_b, differing))
    if differing:
        console.print(escape(f"warning: {run_a} and {run_b} ran different configurations ({', '.join(differing)}); "
                             "their per-question differences are not run-to-run noise alone"), style="yellow")
    return differing


async def _run_once(home: Path, frozen: list[Decomposition], config_path: Path, samples: list[Sample],
                    system: str, vectors_home: Path, collection: str) -> list[SampleDiagnostics]:
    """One evaluation in its own workspace: its own store, so no verdict or LLM cache answer is shared with
    the other repeat; element lists are copied in, so both repeats judge the same frozen elements."""
    config = load_config(config_path)
    workspace = Workspace(home)
    with workspace.open_store() as store:
        if frozen:
            store.put(*frozen)
        models = Models(config, store)
        main = Workspace(vectors_home)
        target = build_system(system, main, models, collection if system == "reference" else None)
        vectors = main.open_vectors() if system == "reference" else None
        context = eval_context(config, target, store, models, vectors, collection if vectors else None)
        run_id = "repeat"
        runner = Runner(context, run_id, workspace.run_dir(run_id))
        return [d async for d in runner.astream(samples, dataset=str(config_path))]


def noise(
    run_a: Annotated[str | None, typer.Argument(help="first run of the configuration")] = None,
    run_b: Annotated[str | None, typer.Argument(help="second run of the same configuration")] = None,
    metric: Annotated[list[str] | None, typer.Option(
        help="per-sample metric(s); default element_answer_coverage (elements the answer states: seed 003's noise) "
             "and, beside it, element_coverage (elements found in the retrieved chunks)")] = None,
    by: Annotated[str | None, typer.Option(help="also per subgroup of this sample metadata key")] = None,
    config_file: Annotated[Path | None, typer.Option("--config", help="run this configuration twice")] = None,
    dataset: Annotated[Path | None, typer.Option(help="samples for --config")] = None,
    system: Annotated[str, typer.Option(help="for --config: precomputed or reference")] = "precomputed",
    collection: Annotated[str, typer.Option(help="for --config with the reference system")] = "hotpotqa",
    allow_different_configs: AllowDifferentConfigs = False,
    home: Home = DEFAULT_HOME,
) -> None:
    """Per-question standard deviation between two runs of one configuration and the band within which a
    change of a mean is noise (z = 1.96), for the whole run and per subgroup.

    Two stored runs whose configurations differ (another system, judge, top_k, ...) are refused, naming what
    differs: their differences are not run-to-run noise. With --allow-different-configs the band is measured
    anyway and kept saying so, and `ragcourt compare` shows where it came from.
    """
    metrics = metric or list(DEFAULT_METRICS)
    unknown = unknown_metrics(metrics)
    if unknown:  # before anything runs: a misspelling must not cost two evaluations
        _fail(f"unknown metric(s): {', '.join(unknown)} (known: {', '.join(known_metric_names())}; K a positive "
              "integer, the retrieval's top_k)")
    if config_file is not None:
        if dataset is None:
            _fail("--config needs --dataset")
        assert dataset is not None
        try:
            samples = read_samples(dataset)
            config = load_config(config_file)
        except (DatasetError, ConfigError) as error:
            _fail(str(error))
        require_endpoints(config)
        frozen: list[Decomposition] = []
        if Workspace(home).has_store():
            with Workspace(home).open_store() as main:
                frozen = _element_lists(main)
        key = content_id(config_file.read_text(encoding="utf-8"), [s.content_hash for s in samples], system)[:10]
        base = home / "noise" / key
        console.print(f"running the configuration twice in {base}/a and {base}/b (separate stores: no shared "
                      f"cache; {len(frozen)} frozen element lists copied into both)")
        first = asyncio.run(_run_once(base / "a", frozen, config_file, samples, system, home, collection))
        second = asyncio.run(_run_once(base / "b", frozen, config_file, samples, system, home, collection))
        measured = f"one configuration ({config_file}) run twice on {dataset}"
        differing: list[str] = []
    else:
        if run_a is None or run_b is None:
            _fail("give two runs (RUN_A RUN_B) or --config FILE --dataset FILE")
        with existing_store(home) as store:
            first, second = _diagnostics(store, run_a), _diagnostics(store, str(run_b))
            differing = _repeat_runs(store, run_a, str(run_b), allow_different_configs)
            samples = store.get_samples(run_a)
        measured = runs_origin(run_a, str(run_b), differing)
    present = set(metric_names(first)) | set(metric_names(second))
    if not metric:
        metrics = _present_defaults(present)
    for name in metrics:
        if name not in present:
            _fail(f"metric '{name}' is in neither run (their metrics: {', '.join(sorted(present)) or 'none'})")
    for name in metrics:
        frame = noise_frame(first, second, samples, name, by)
        meaning = f" ({METRIC_MEANINGS[name]})" if name in METRIC_MEANINGS else ""
        _print_frame(f"run-to-run noise of {name}{meaning}: band = 1.96 x sd / sqrt(n); a change of a mean "
                     f"inside it is noise", frame, NOISE_COLUMNS)
        if nothing_varied(frame):
            console.print(escape(NOTHING_VARIED.format(metric=name)), style="yellow")
        whole = frame.loc[frame["group"] == ALL].to_dict("records")
        if whole and whole[0]["per_question_sd"] is not None:
            _save_band(home, name, SavedBand(
                per_question_sd=whole[0]["per_question_sd"], n_questions=whole[0]["n_questions"], measured=measured,
                source=BandSource.DIFFERENT_CONFIGURATIONS if differing else BandSource.ONE_CONFIGURATION,
                differing=tuple(differing)))


def _present_defaults(present: set[str]) -> list[str]:
    """The default metrics the runs report. Runs scored before the answer side existed have the context side
    only: it is measured alone, with a note, rather than refused."""
    found = [name for name in DEFAULT_METRICS if name in present]
    if not found:
        _fail(f"neither run has the default metrics ({', '.join(DEFAULT_METRICS)}): name one with --metric (their "
              f"metrics: {', '.join(sorted(present)) or 'none'})")
    for name in DEFAULT_METRICS:
        if name not in present:
            console.print(escape(f"note: {name} is in neither run (scored before ragcourt reported it); measuring "
                                 f"{', '.join(found)} only"), style="yellow")
    return found


def _element_lists(store: RecordStore) -> list[Decomposition]:
    ids = store.to_frame(Decomposition)
    if ids.empty:
        return []
    wanted = ids.loc[ids["kind"] == str(DecompositionKind.ELEMENTS), "id"]
    return [d for d in (store.get_decomposition(i) for i in wanted) if d is not None]


def compare(
    run_a: Annotated[str, typer.Argument(help="run A (baseline)")],
    run_b: Annotated[str, typer.Argument(help="run B")],
    noise_runs: Annotated[list[str] | None, typer.Option(
        "--noise", help="twice: two runs of one configuration whose per-question sd sets the band")] = None,
    fail_on_regression: Annotated[bool, typer.Option(
        help="exit 1 when a metric dropped by more than its noise band (one line per drop); a metric with no "
             "known noise band (neither --noise nor a band saved by `ragcourt noise`) is named, not failed")] = False,
    fail_on_any_drop: Annotated[bool, typer.Option(
        help="with --fail-on-regression: a metric without a known noise band fails on any drop")] = False,
    allow_different_configs: AllowDifferentConfigs = False,
    home: Home = DEFAULT_HOME,
) -> None:
    """Per metric: mean of A and B over the questions both scored, B - A, and "noise" when inside the band.

    The elements method's answer-side coverage comes first, its context-side coverage beside it.
    The band: from --noise (two repeat runs of one configuration), else the per-question sd that `ragcourt
    noise` measured last for that metric (kept in HOME/noise/bands.json), else the paired band of the A-B
    differences themselves (not run-to-run noise: --fail-on-regression does not fail on it). Each metric's
    "band from" says which, and whether its runs were of one configuration.
    """
    with existing_store(home) as store:
        a, b = _diagnostics(store, run_a), _diagnostics(store, run_b)
        if noise_runs:
            if len(noise_runs) != 2:
                _fail("--noise takes exactly two runs (give it twice)")
            run_x, run_y = noise_runs
            x, y = _diagnostics(store, run_x), _diagnostics(store, run_y)
            source = runs_origin(run_x, run_y, _repeat_runs(store, run_x, run_y, allow_different_configs))
            frame = compare_frame(a, b, repeat_sds(x, y, [m for d in a for m in {n.name for n in d.metrics}]), source)
        else:
            bands = _saved_bands(home)
            frame = _with_saved_bands(compare_frame(a, b), a, b, bands)
            source = f"`ragcourt noise` where it measured one (HOME/noise/bands.json), else the {PAIRED_BAND}"
            _warn_of_bands_across_configurations(frame, bands)
    _print_frame(f"compare {run_a} -> {run_b}: band from {source}, z = 1.96", frame, COMPARE_COLUMNS)
    for name in frame["metric"]:  # the elements method's two coverages, answer side first: say which is which
        if name in METRIC_MEANINGS:
            console.print(escape(f"{name}: {METRIC_MEANINGS[name]}"))
    if fail_on_regression:
        enforce_no_regression(frame, fail_on_any_drop)


def _save_band(home: Path, metric: str, band: SavedBand) -> None:
    """Keep the measured per-question sd of `metric` for later `compare` runs (the others' stay)."""
    path = home / BANDS_FILE
    bands = _saved_bands(home) | {metric: band}
    path.parent.mkdir(parents=True, exist_ok=True)
    kept = {name: saved.model_dump(mode="json", exclude_defaults=True) for name, saved in bands.items()}
    path.write_text(json.dumps(kept, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    console.print(escape(f"noise band of {metric} kept in {path}: `ragcourt compare` uses it"))


def _saved_bands(home: Path) -> dict[str, SavedBand]:
    path = home / BANDS_FILE
    if not path.is_file():
        return {}
    again = "delete it and measure again"
    try:
        bands = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        _fail(f"{path}: not a bands file written by `ragcourt noise` ({error}); {again}")
    if not isinstance(bands, dict):
        _fail(f"{path}: not a bands file written by `ragcourt noise` (no mapping of metrics); {again}")
    kept: dict[str, SavedBand] = {}
    for name, saved in bands.items():
        try:
            kept[name] = SavedBand.model_validate(saved)
        except ValidationError as error:
            first = error.errors()[0]
            key = ".".join(map(str, first["loc"]))
            _fail(f"{path}: metric '{name}'{f', key {key!r}' if key else ''}: {first['msg']}; {again}")
    return kept


def _warn_of_bands_across_configurations(frame: pd.DataFrame, bands: dict[str, SavedBand]) -> None:
    """A kept band measured on runs of different configurations is used (it was allowed explicitly), and said."""
    for name in frame["metric"]:
        saved = bands.get(name)
        if saved is not None and saved.source is BandSource.DIFFERENT_CONFIGURATIONS:
            console.print(escape(f"warning: the band of {name} was measured on runs of different configurations "
                                 f"({', '.join(saved.differing)}): it is not run-to-run noise alone"), style="yellow")


def _with_saved_bands(paired: pd.DataFrame, a: list[SampleDiagnostics], b: list[SampleDiagnostics],
                      bands: dict[str, SavedBand]) -> pd.DataFrame:
    """The compare frame with each metric `ragcourt noise` measured judged against its noise band; the
    others keep the paired band."""
    rows = paired.to_dict("records")
    for i, row in enumerate(rows):
        saved = bands.get(row["metric"])
        if saved is not None and row["difference"] is not None:
            measured = compare_frame(a, b, {row["metric"]: saved.per_question_sd}, saved.origin)
            rows[i] = next(r for r in measured.to_dict("records") if r["metric"] == row["metric"])
    return pd.DataFrame(rows, columns=paired.columns, dtype=object)


def register(app: typer.Typer) -> None:
    app.command("noise")(noise)
    app.command("compare")(compare)
