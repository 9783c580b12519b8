"""What the commands that evaluate share (`run`, `demo`, `rerun`, `noise`): reading samples, indexing a
corpus, building the system under test, and a run streamed one line per question, then its figures."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path

import typer
from rich.markup import escape

from ragcourt.analysis.summary import RunSummary, summarize
from ragcourt.cluster.dask_engine import DistributedRunError
from ragcourt.commands.output import (
    console,
    fail,
    print_element_diagnosis,
    print_method_tables,
    print_summary,
    print_usage,
    question_metrics,
)
from ragcourt.commands.progress import track_progress
from ragcourt.data.formats import DatasetFormat, parse_column_map, stream_dataset
from ragcourt.data.reading import CountedSamples, SampleStream
from ragcourt.llm.probe import EndpointUnavailableError
from ragcourt.observability.telemetry import NO_TELEMETRY, Telemetry
from ragcourt.report.method_charts import write_method_charts
from ragcourt.runs.models import Models, prepare_run
from ragcourt.runs.rescore import aweigh_run
from ragcourt.runs.runner import ResumePlan, RunLockedError, Runner, SamplesChangedError
from ragcourt.runs.workspace import DEFAULT_HOME, Workspace
from ragcourt.schema import Chunk, Sample, SampleDiagnostics, SampleStatus
from ragcourt.schema.config import LEGACY_ENCODER, ConfigError, EvalConfig, Reconcile, ReviewMode
from ragcourt.stores.records import RecordStore
from ragcourt.systems import Precomputed, RAGSystem, ReferenceRAG
from ragcourt.validity.profile import profile_notes

PRECOMPUTED, REFERENCE = "precomputed", "reference"
# How a run's samples are evaluated other than by its own runner (`run --workers`: cluster.dask_engine.DaskRun):
# given the runner and the run's models, a function with `Runner.astream`'s interface.
Engine = Callable[[Runner, Models], Callable[..., AsyncIterator[SampleDiagnostics]]]


MAX_WARNINGS_SHOWN = 5
INTERRUPTED_EXIT = 130  # what a shell reports for a command stopped by Ctrl-C (128 + SIGINT)


def stream_samples(path: Path, format: DatasetFormat = DatasetFormat.AUTO,
                   column_map: Sequence[str] | None = None, *, strict: bool = False,
                   limit: int | None = None) -> SampleStream:
    """The samples of a dataset file or saved Hugging Face dataset directory in any format data.formats reads,
    `column_map` as --map gives it, checked whole in one streaming pass and read again each time they are
    iterated (never held together); the first `limit` only when given. DatasetError when unreadable (or, with
    `strict`, when a row has a field no sample has), ValueError for a bad map. Each field no sample has is printed
    once as a warning otherwise."""
    stream = stream_dataset(path, format=format, column_map=parse_column_map(column_map), strict=strict,
                            limit=limit)
    warnings = stream.check().warnings
    for warning in warnings[:MAX_WARNINGS_SHOWN]:
        console.print(f"[yellow]warning:[/yellow] {escape(str(warning))}")
    if len(warnings) > MAX_WARNINGS_SHOWN:
        console.print(f"[yellow]warning:[/yellow] ... and {len(warnings) - MAX_WARNINGS_SHOWN} more fields no "
                      "sample has")
    return stream


def read_samples(path: Path, format: DatasetFormat = DatasetFormat.AUTO,
                 column_map: Sequence[str] | None = None, *, strict: bool = False) -> list[Sample]:
    """The samples of `stream_samples`, all at once (for the commands that take a dataset's samples together)."""
    return list(stream_samples(path, format, column_map, strict=strict))


def build_system(kind: str, workspace: Workspace, models: Models, collection: str | None) -> RAGSystem:
    """The system under test named `kind`: PRECOMPUTED (with the configured bounds generator), or REFERENCE
    (the workspace's chromadb `collection` and the configured answerer); fails when the collection is missing."""
    if kind == PRECOMPUTED:
        return Precomputed(bounds=models.bounds_generator())
    if collection is None or not workspace.open_vectors().has_collection(collection):
        fail(f"no chromadb collection '{collection}' in {workspace.chroma_path}: give --collection")
    assert collection is not None
    return ReferenceRAG(workspace.open_vectors(), collection, models.generator(),
                        retriever=models.config.reference_retriever)


def index_chunks(workspace: Workspace, collection: str, chunks: Sequence[Chunk],
                 encoder: str = LEGACY_ENCODER) -> float:
    """Index chunks with `encoder` unless the collection already holds them; returns seconds spent. A collection
    indexed with another encoder is refused (ValueError): its vectors and the new ones would not compare."""
    vectors = workspace.open_vectors(encoder)
    if vectors.has_collection(collection):
        found = vectors.encoder_of(collection)
        if found is not None and found != encoder:
            raise ValueError(f"collection '{collection}' was indexed with the {found} encoder, not {encoder}: index "
                             "into another --collection (or keep its encoder)")
        if vectors.count(collection) >= len(chunks):
            return 0.0
    started = time.perf_counter()
    with track_progress(f"indexing {collection} (chunks)", total=len(chunks)) as progress:
        for start in range(0, len(chunks), 128):
            batch = chunks[start:start + 128]
            vectors.index(collection, batch)
            progress.advance(len(batch))
    return time.perf_counter() - started


def reference_system_of(workspace: Workspace, collection: str) -> Callable[[Models], RAGSystem]:
    """The reference RAG on the workspace's chromadb `collection`, retrieving and answering as the run's configuration
    says (`reference_retriever`, `answerer`)."""
    return lambda models: ReferenceRAG(workspace.open_vectors(), collection, models.generator(),
                                       retriever=models.config.reference_retriever)


OTLP_HELP = ("send OpenTelemetry spans (the run, each sample, graph node and LLM call, with tokens) to this "
             "OTLP/HTTP collector, e.g. Phoenix http://127.0.0.1:6006 (needs ragcourt[otel]); default: "
             "`telemetry.otlp_endpoint` in the run's config, else $OTEL_EXPORTER_OTLP_ENDPOINT, else no spans")


def telemetry_of(otlp_endpoint: str | None, config: EvalConfig) -> Telemetry:
    """Where an evaluating command's spans go: `--otlp-endpoint` (checked as the config key
    telemetry.otlp_endpoint is), else the config's endpoint, else the environment's (observability.telemetry); fails
    with the reason for a bad URL or a missing extra. Call `shutdown()` on it when the command is done."""
    from ragcourt.observability.telemetry import TelemetryUnavailableError

    try:
        if otlp_endpoint:  # not into the config itself: a run's id and stored config leave the endpoint out
            config = config.with_overrides(telemetry={"otlp_endpoint": otlp_endpoint})
        return Telemetry.configured(config.telemetry.otlp_endpoint)
    except (ConfigError, ValueError, TelemetryUnavailableError) as error:
        fail(str(error))


def _line(d: SampleDiagnostics, stored: bool = False) -> str:
    if d.status is SampleStatus.FAILED:
        return f"[red]✗[/red] {escape(d.sample_id)}  failed: {escape(d.error or '')}"
    gaps = sorted({str(e.status) for e in d.elements if e.status != "answered"})
    extra = f"  gaps: {', '.join(gaps)}" if gaps else ""
    return (f"[green]✓[/green] {escape(d.sample_id[:12])}  {question_metrics(d)}  unsupported={len(d.unsupported_claims)}"
            f"  to_review={len(d.escalations)}  unscored={d.n_unscored}{extra}{'  (stored)' if stored else ''}")


def _resume_line(run_id: str, plan: ResumePlan, n_samples: int) -> str | None:
    if not plan.stored and not plan.reopened:
        return None
    parts = []
    if plan.stored:
        parts.append(f"{len(plan.stored)} of {n_samples} samples finished before come from the store (marked "
                     "'stored'; nothing of them is asked again)")
    if plan.reopened:
        parts.append(f"{len(plan.reopened)} finished samples with work unscored for a transient reason (timeout, "
                     "error) are evaluated again: only that work is asked again, the rest comes from the store")
    return f"resuming run {escape(run_id)}: {'; '.join(parts)}"


async def _run(runner: Runner, samples: CountedSamples, dataset: str, home: Path,
               stream: Callable[..., AsyncIterator[SampleDiagnostics]] | None = None) -> None:
    # Each finished sample is printed, counted and dropped: its diagnostics (a few KiB, mostly the alignment
    # graph) are in the store, so holding them grew a long run by that much per sample (issue 36).
    run_id = runner.run_id
    n_samples = len(samples)
    waiting = n_samples  # falls as samples finish: what is left is paused for an inline review
    stored: set[str] = set()
    with track_progress("evaluating (questions)", total=n_samples) as progress:

        def started(plan: ResumePlan) -> None:  # told once the run is locked and its samples are checked
            progress.print(follow_line(run_id, home, runner.paths.run_dir))
            stored.update(plan.stored)
            line = _resume_line(run_id, plan, n_samples)
            if line:
                progress.print(line)

        async for diagnostics in (stream or runner.astream)(samples, dataset=dataset, on_start=started):
            progress.print(_line(diagnostics, stored=diagnostics.sample_id in stored))
            progress.advance(from_store=diagnostics.sample_id in stored)
            waiting -= 1  # a run yields each sample once
    if waiting and runner.context.config.review_mode is ReviewMode.INLINE:
        console.print(f"[yellow]{waiting} samples are paused for an inline review[/yellow]: "
                      f"[bold]ragcourt review {escape(run_id)} --home {escape(str(home))}[/bold] decides their "
                      "escalated checks and finishes them")


def follow_line(run_id: str, home: Path, run_dir: Path) -> str:
    """The run's id as it starts, with the commands that follow it from another terminal."""
    where = f" --home {home}" if home != DEFAULT_HOME else ""
    return (f"run {escape(run_id)} ({escape(str(run_dir))}): follow it with [bold]ragcourt watch {escape(run_id)}"
            f"{escape(where)}[/bold] or [bold]ragcourt serve {escape(run_id)}{escape(where)}[/bold]")


def interrupted_line(store: RecordStore, run_id: str, samples: CountedSamples, resume_command: str) -> str:
    """What a Ctrl-C leaves: how many of the samples are stored finished, and the command that resumes."""
    finished = store.finished_sample_ids(run_id)
    stored = sum(sample.id in finished for sample in samples)
    return (f"interrupted: {stored} of {len(samples)} samples of run {run_id} are stored (a resume asks nothing "
            f"of them again); resume with: {resume_command}")


def evaluate_and_print(workspace: Workspace, config: EvalConfig, make_system: Callable[[Models], RAGSystem],
                       samples: CountedSamples, run_id: str, dataset: str, collection: str | None,
                       check_endpoints: bool = True, telemetry: Telemetry = NO_TELEMETRY,
                       engine: Engine | None = None, resume_command: str = "the same command") -> RunSummary:
    """Run the evaluation (resuming a run of the same id), one line per finished question, then print its
    summary, element diagnosis, method tables, charts written and LLM usage. Nothing is evaluated when an
    endpoint cannot answer (runs.models.prepare_run; `check_endpoints=False` skips asking the servers).
    `telemetry`: where the run's spans go (observability.telemetry; none by default). `engine`: the samples evaluated
    elsewhere (Dask workers) instead of by this process. On Ctrl-C it prints one line, the samples stored and
    `resume_command`, and exits 130 (the shell's code for an interrupted command)."""
    store = workspace.open_store()
    try:
        vectors = workspace.open_vectors() if collection else None
        try:
            models, context = asyncio.run(prepare_run(config, store, make_system, vectors, collection,
                                                      check=check_endpoints))
        except (ConfigError, EndpointUnavailableError) as error:
            fail(str(error))
        runner = Runner(context, run_id, workspace.run_dir(run_id), telemetry=telemetry)
        try:
            asyncio.run(_run(runner, samples, dataset, workspace.home, engine(runner, models) if engine else None))
            if config.reconcile is Reconcile.WEIGHTED:
                with console.status("weighted reconciliation: estimating the jury, deciding every binary check again"):
                    asyncio.run(aweigh_run(runner, samples))
        except (RunLockedError, SamplesChangedError, DistributedRunError) as error:
            fail(str(error))
        summary = summarize(store, run_id)
        print_summary(summary)
        for note in profile_notes(config):
            console.print(escape(note))
        print_element_diagnosis(store, run_id)
        print_method_tables(store, run_id, config)
        for chart, not_written in write_method_charts(store, run_id, config, workspace.run_dir(run_id)).items():
            console.print(f"chart {chart.name}: {escape(not_written) if not_written else f'written to {chart}'}")
        print_usage(models.usage.rows())
        return summary
    except KeyboardInterrupt:
        console.print(escape(interrupted_line(store, run_id, samples, resume_command)), soft_wrap=True)
        raise typer.Exit(INTERRUPTED_EXIT) from None
    finally:
        store.close()
