"""`ragcourt run DATASET`: evaluate a dataset with the reference or a precomputed system."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from ragcourt.commands.evaluation import Engine, evaluate_and_print, reference_system_of, stream_samples
from ragcourt.commands.gate import enforce_fail_under, thresholds_of
from ragcourt.commands.judge_help import judge_help
from ragcourt.commands.output import ColumnMapOption, DatasetFormatOption, Home, StrictOption, console, fail
from ragcourt.data.formats import DatasetFormat
from ragcourt.data.loaders import DatasetError
from ragcourt.data.reading import CountedSamples, SampleStream
from ragcourt.metrics.text import has_non_latin_script
from ragcourt.runs.models import Models, check_model_specs
from ragcourt.runs.workspace import DEFAULT_HOME, HOTPOTQA_COLLECTION, Workspace, derived_run_id
from ragcourt.schema.config import (
    LEGACY_ENCODER,
    BaselineModel,
    ConfigError,
    EvalConfig,
    Method,
    Reconcile,
    load_config,
)
from ragcourt.stores.encoders import EncoderChoice, EncoderName
from ragcourt.systems import Precomputed, RAGSystem


def run(
    dataset: Annotated[Path, typer.Argument(help="samples: JSONL / JSON / CSV / Parquet, a saved Hugging Face "
                                                 "dataset directory, a RAGAS or LangSmith export, or a HotpotQA "
                                                 "IRCoT file")],
    system: Annotated[str, typer.Option(help="'reference' (chromadb + answerer) or 'precomputed'")] = "reference",
    judge: Annotated[list[str] | None, typer.Option(help=judge_help(
        "learned needs --calibration-profile; default: the config's judges (lexical)"))] = None,
    config_file: Annotated[Path | None, typer.Option("--config", help="YAML or TOML EvalConfig")] = None,
    method: Annotated[list[Method] | None, typer.Option(help="repeatable; default from config")] = None,
    collection: Annotated[str, typer.Option(help="chromadb collection of the reference system")] = HOTPOTQA_COLLECTION,
    run_id: Annotated[str | None, typer.Option(
        help="re-use an id to resume a run (refused when a sample it holds was edited since: see `rerun "
             "--changed`); default: derived from the configuration, the system and the samples' contents")] = None,
    limit: Annotated[int | None, typer.Option(help="only the first N samples", min=1)] = None,
    calibration_profile: Annotated[Path | None, typer.Option(
        help="a calibration profile from `ragcourt calibrate --fit-threshold --save-profile`: on the kinds it has "
             "thresholds for, a judge's label is yes when its P(yes) >= the learned threshold (overrides the "
             "config's calibration_profile)")] = None,
    reconcile: Annotated[Reconcile | None, typer.Option(
        help="how binary checks are decided: majority (default) or weighted (the jury's Dawid-Skene estimates, "
             "as the run's final step); default from config")] = None,
    check_endpoints: Annotated[bool, typer.Option(
        "--check-endpoints/--no-check-endpoints",
        help="before the first sample, ask every configured LLM endpoint once (GET {base_url}/models; 404 and 405 "
             "pass) and stop with exit 2 when one cannot answer (connection refused, DNS, timeout, 401, 403); "
             "--no-check-endpoints for a server that rejects that request")] = True,
    column_map: ColumnMapOption = None,
    dataset_format: DatasetFormatOption = DatasetFormat.AUTO,
    strict: StrictOption = False,
    home: Home = DEFAULT_HOME,
    store: Annotated[str | None, typer.Option(
        envvar="RAGCOURT_STORE",
        help="a postgresql://USER@HOST:PORT/DB URL for the record store, LLM cache and checkpoints (shared by "
             "processes on many machines; kept in HOME/store.url for later commands); default: `store:` in the "
             "config, else HOME/store.sqlite")] = None,
    otlp_endpoint: Annotated[str | None, typer.Option(
        help="send OpenTelemetry spans (the run, each sample, graph node and LLM call, with tokens) to this "
             "OTLP/HTTP collector, e.g. Phoenix http://127.0.0.1:6006 (needs ragcourt[otel]); default: "
             "`telemetry.otlp_endpoint` in the config, else $OTEL_EXPORTER_OTLP_ENDPOINT, else no spans")] = None,
    fail_under: Annotated[list[str] | None, typer.Option(
        help="repeatable METRIC=VALUE (e.g. element_coverage=0.6, c_prec@5=0.5; names as in the summary): exit 1 "
             "with one line per run mean below its minimum, or n/a; over the config's fail_under")] = None,
    allow_na: Annotated[bool, typer.Option(help="a gated metric that is n/a passes instead of failing")] = False,
    count_flagged: Annotated[bool, typer.Option(
        help="--fail-under counts the sample figures flagged as judged without a split that failed (by default "
             "they are left out of the gated mean, as that sample's n/a)")] = False,
    workers: Annotated[int | None, typer.Option(
        min=1, help="evaluate on N Dask worker processes of a local cluster on 127.0.0.1 (needs ragcourt[distributed] "
                    "and a PostgreSQL --store; the config's llm_concurrency is split across them)")] = None,
    scheduler: Annotated[str | None, typer.Option(
        help="evaluate on every worker of a running Dask cluster, tcp://HOST:PORT (as --workers)")] = None,
    chroma: Annotated[str | None, typer.Option(
        help="a Chroma server, http://HOST:PORT, holding the reference system's collection (kept in HOME/chroma.url "
             "for later commands; needed on workers); default: `chroma:` in the config, else HOME/chroma")] = None,
    lease_s: Annotated[float, typer.Option(
        min=0.1, help="with workers: how long a worker's claim on a sample lasts unrenewed (a dead worker's samples "
                      "wait this long before another takes them)")] = 30.0,
) -> None:
    """Evaluate a dataset; streams one line per finished question.

    The same command again resumes the run: finished samples come from the store, and those with work unscored
    for a transient reason (timeout, error) have only that work asked again. After an edit of the dataset the
    derived run id is another one, so the edited samples are evaluated afresh in a new run (unchanged work
    comes from the store and the LLM cache); `ragcourt rerun --changed RUN` evaluates only the changed ones.
    Before the first sample every configured LLM endpoint is asked once: one that cannot answer stops the run
    (exit 2, nothing evaluated) with a line naming the judge or role, the URL and the cause.
    With thresholds (`--fail-under`, the config's `fail_under`), the run exits 1 after its figures when a mean is
    below its minimum or n/a, one line per failed figure with its counts (a gate for CI).
    With `--workers N` or `--scheduler ADDRESS` the samples are evaluated by Dask workers sharing the run through
    the PostgreSQL store (one lease per sample: a worker that dies loses nothing); lines stream as they finish.
    """
    try:
        config = load_config(config_file) if config_file else EvalConfig()
        overrides: dict = {}
        if judge:
            overrides["judges"] = [{"model": j} for j in judge]
        if method:
            overrides["methods"] = list(method)
        if calibration_profile:
            overrides["calibration_profile"] = str(calibration_profile)
        if reconcile:
            overrides["reconcile"] = reconcile
        if otlp_endpoint:
            overrides["telemetry"] = {"otlp_endpoint": otlp_endpoint}
        if overrides:
            config = config.with_overrides(**overrides)
        check_model_specs(config, str(config_file) if config_file else "options", "--judge" if judge else None)
    except (ConfigError, ValueError) as error:
        fail(str(error))
    thresholds = thresholds_of(config, str(config_file) if config_file else "config", fail_under)
    samples = _samples(dataset, dataset_format, column_map, strict, limit)
    try:
        workspace = Workspace(home, store=store or config.store, chroma=chroma or config.chroma)
    except ValueError as error:
        fail(str(error))
    engine = _dask_engine(workspace, config, system, workers, scheduler, lease_s)
    make_system: Callable[[Models], RAGSystem]
    if system == "precomputed":
        make_system, collection_used = (lambda models: Precomputed(bounds=models.bounds_generator())), None
    elif system == "reference":
        if not workspace.open_vectors().has_collection(collection):
            fail(f"no chromadb collection '{collection}' in {workspace.vectors_location}: run `ragcourt index` first")
        make_system, collection_used = reference_system_of(workspace, collection), collection
    else:
        fail(f"unknown system '{system}' (use reference or precomputed)")
    run_id = run_id or derived_run_id(config, samples, system, digits=10)
    try:
        workspace.run_dir(run_id)
    except ValueError as error:
        fail(str(error))
    corpus_encoder = workspace.open_vectors().encoder_of(collection) if system == "reference" else None
    _warn_about_english_only_embeddings(samples, config, corpus_encoder)
    from ragcourt.observability.telemetry import Telemetry, TelemetryUnavailableError

    try:
        telemetry = Telemetry.configured(config.telemetry.otlp_endpoint)  # else the environment's endpoint
    except TelemetryUnavailableError as error:
        fail(str(error))
    try:
        summary = evaluate_and_print(workspace, config, make_system, samples, run_id, str(dataset), collection_used,
                                     check_endpoints=check_endpoints, telemetry=telemetry, engine=engine,
                                     resume_command=resume_command(sys.argv[1:], run_id))
    finally:
        telemetry.shutdown()  # sends the spans still batched
    console.print(escape(f"run {run_id}: {workspace.run_dir(run_id)}"))
    enforce_fail_under(workspace, summary, thresholds, allow_na, count_flagged)  # last: exit 1 when a figure fails


def resume_command(args: Sequence[str], run_id: str) -> str:
    """The command line that resumes the run: the one given (its options decide the run's configuration),
    naming the run, so that a dataset edited since is refused with advice instead of starting another run."""
    named = any(arg == "--run-id" or arg.startswith("--run-id=") for arg in args)
    return shlex.join(["ragcourt", *args, *([] if named else ["--run-id", run_id])])


def _dask_engine(workspace: Workspace, config: EvalConfig, system: str, workers: int | None, scheduler: str | None,
                 lease_s: float) -> Engine | None:
    """The run on Dask workers that --workers / --scheduler ask for (None for neither), refused up front when
    it cannot run: no PostgreSQL store, the reference system without a Chroma server, too few LLM slots."""
    if workers is None and scheduler is None:
        return None
    from ragcourt.cluster.dask_engine import DaskOptions, DaskRun, DistributedRunError, llm_shares

    try:
        options = DaskOptions(workers=workers, scheduler=scheduler, lease_s=lease_s)
        if workers is not None:
            llm_shares(config.llm_concurrency, workers)
    except DistributedRunError as error:
        fail(str(error))
    if workspace.store_url is None:
        fail("--workers and --scheduler need a PostgreSQL store (--store postgresql://..., `store:` in the config or "
             f"$RAGCOURT_STORE): the workers share the run through it, and {workspace.store_path} is a SQLite file "
             "on this machine")
    if system == "reference" and workspace.chroma_url is None:
        fail("the reference system on workers needs a Chroma server holding the collection (--chroma "
             f"http://HOST:PORT or `chroma:` in the config): the folder {workspace.chroma_path} is not shared")
    try:
        import distributed  # noqa: F401
    except ImportError:
        fail("--workers and --scheduler need Dask: pip install 'ragcourt[distributed]'")
    return lambda runner, models: DaskRun(runner, system, options, chroma_url=workspace.chroma_url,
                                          usage=models.usage).astream


def _samples(path: Path, dataset_format: DatasetFormat, column_map: list[str] | None, strict: bool,
             limit: int | None) -> SampleStream:
    """The dataset checked whole in a streaming pass (every problem with its file, line and field), to be read
    again as it is evaluated: its samples are never held together, so memory does not grow with its size."""
    try:
        return stream_samples(path, dataset_format, column_map, strict=strict, limit=limit)
    except (DatasetError, ValueError) as error:
        fail(str(error))
    except OSError as error:
        fail(f"{path}: {error.strerror}")
    raise AssertionError("unreachable")


def _warn_about_english_only_embeddings(samples: CountedSamples, config: EvalConfig,
                                        corpus_encoder: str | None) -> None:
    """MiniLM is English-only: on questions in another script its retrieval and the semantic judge's checks are near
    random, and nothing else would say so (a Chinese walkthrough got confident wrong verdicts, unanimous with
    lexical). e5 is multilingual, and an endpoint's model is the user's: neither is warned about."""
    users = [*dict.fromkeys(user for spec in config.judges if spec.model == BaselineModel.SEMANTIC
                            if (user := _minilm_part(EncoderChoice.parse(spec.encoder or LEGACY_ENCODER)))),
             *(["the reference system's retrieval"] if corpus_encoder == EncoderName.MINILM else [])]
    if not users:  # not a pass over the dataset for nothing
        return
    foreign = sum(has_non_latin_script(s.question) for s in samples)
    if foreign * 10 >= len(samples):
        console.print(f"[yellow]warning:[/yellow] {foreign} of {len(samples)} questions are in Chinese, Japanese or "
                      f"another non-Latin script; the offline MiniLM embedding (all-MiniLM-L6-v2) is English-only, so "
                      f"{' and '.join(users)} are close to random on them: set `encoder: e5` (multilingual) in the "
                      "config and index with `ragcourt index --encoder e5`, or use LLM judges")


def _minilm_part(choice: EncoderChoice) -> str | None:
    """What of a semantic judge embeds with MiniLM, for the warning."""
    if choice.relevance == choice.entailment == EncoderName.MINILM:
        return "the semantic judge"
    if choice.entailment == EncoderName.MINILM:
        return "the semantic judge's claim and element checks"
    return "the semantic judge's relevance checks" if choice.relevance == EncoderName.MINILM else None


def register(app: typer.Typer) -> None:
    app.command("run")(run)
