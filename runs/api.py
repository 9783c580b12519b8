"""The public Python API: evaluate, aevaluate and astream a RAG system (or a LangChain app as it is) on a
dataset, EvalResult, and reference_system, the CLI's reference RAG.

Every run goes to a workspace (ragcourt.runs.workspace) and is built from its configuration as the CLI
builds it (ragcourt.runs.models).
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import os
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import ValidationError

from ragcourt.analysis.summary import RunSummary, summarize
from ragcourt.data.formats import DatasetFormat, read_dataset, stream_dataset
from ragcourt.data.reading import CountedSamples, SampleStream
from ragcourt.observability.telemetry import Telemetry
from ragcourt.runs import background_loop
from ragcourt.runs.models import ConfiguredAnswerer, Models, prepare_run
from ragcourt.runs.rescore import aweigh_run
from ragcourt.runs.runner import Runner
from ragcourt.runs.workspace import DEFAULT_HOME, HOTPOTQA_COLLECTION, PathInput, Workspace, derived_run_id
from ragcourt.schema import NORMAL, Sample, SampleDiagnostics, VerdictStatus
from ragcourt.schema.config import EvalConfig, Reconcile
from ragcourt.schema.inputs import refusal
from ragcourt.stores.records import RecordStore
from ragcourt.stores.vectors import VectorStore
from ragcourt.systems import Generator, LangChainSystem, RAGSystem, ReferenceRAG

LANGCHAIN_DEFAULT_K = 4  # VectorStoreRetriever's k when search_kwargs does not set it


@dataclass(frozen=True)
class SampleInputs:
    """What one sample was evaluated on: its question and reference, the system's answer under the normal
    condition (None when it gave none) and the chunks it answered from, in rank order."""

    question: str
    answer: str | None
    reference_answer: str | None
    contexts: tuple[str, ...]


@dataclass
class EvalResult:
    run_id: str
    run_dir: Path
    diagnostics: list[SampleDiagnostics]
    inputs: dict[str, SampleInputs] = field(default_factory=dict)  # by sample id
    headline: RunSummary | None = None  # the run's figures when evaluate returned

    def to_frame(self) -> pd.DataFrame:
        """One row per sample, in the order of `diagnostics` (the dataset's order, from evaluate/aevaluate).

        Columns: sample_id, then the inputs (question, answer, reference_answer, contexts: a list of the chunk
        texts the system answered from, in rank order), status, n_checks, n_unscored (unscored verdicts),
        n_escalated (escalated checks), then per metric `<metric>` (the value; None when n/a),
        `<metric>_na_reason`, and the metric's own counts `<metric>_n_unscored` and `<metric>_n_escalated`
        (the report's `<metric>_na_reason` naming).
        """
        rows = []
        for d in self.diagnostics:
            given = self.inputs.get(d.sample_id)
            row: dict[str, Any] = {
                "sample_id": d.sample_id, "question": given.question if given else d.question,
                "answer": given.answer if given else None,
                "reference_answer": given.reference_answer if given else None,
                "contexts": list(given.contexts) if given else [],
                "status": str(d.status), "n_checks": d.n_checks, "n_unscored": d.n_unscored,
                "n_escalated": len(d.escalations),
            }
            for m in d.metrics:
                row.update({m.name: m.value, f"{m.name}_na_reason": m.na_reason,
                            f"{m.name}_n_unscored": m.n_unscored, f"{m.name}_n_escalated": m.n_escalated})
            rows.append(row)
        return pd.DataFrame(rows) if rows else pd.DataFrame(columns=FRAME_COLUMNS)

    def summary(self) -> pd.DataFrame:
        """The run's headline table, as `ragcourt run` and `ragcourt summary` print it: one row per metric
        (metric, mean, samples, n/a, unscored checks, escalated checks). The run's counts are in `.attrs`
        (run_id, n_samples, n_failed, n_checks, n_unscored verdicts, n_escalated, n_pending review, n_failed_splits,
        n_flagged_figures and n_flagged_samples: figures judged without a split that failed, n_empty_answers:
        samples the system answered with nothing)."""
        if self.headline is None:
            raise ValueError(f"run {self.run_id}: no headline figures in this result (evaluate and aevaluate "
                             "give them); `ragcourt summary` prints them from the store")
        return headline_frame(self.headline)

    def _repr_html_(self) -> str:  # Jupyter shows a result as its headline table
        frame = self.summary() if self.headline is not None else None
        title = html.escape(self._title())
        return f"<p><b>{title}</b></p>" + (frame.to_html(index=False, na_rep="n/a") if frame is not None else "")

    def __rich__(self) -> Any:  # rich's console and Jupyter renderer show the same table
        from rich.table import Table

        table = Table(title=self._title())
        frame = self.summary() if self.headline is not None else pd.DataFrame(columns=HEADLINE_COLUMNS)
        for column in frame.columns:
            table.add_column(str(column))
        for values in frame.itertuples(index=False):
            table.add_row(*("n/a" if v is None or v != v else f"{v:.3f}" if isinstance(v, float) else str(v)
                            for v in values))
        return table

    def __repr__(self) -> str:  # the diagnostics are the bulk of a result: never printed whole
        return f"EvalResult(run_id={self.run_id!r}, samples={len(self.diagnostics)}, run_dir={str(self.run_dir)!r})"

    def _title(self) -> str:
        h = self.headline
        if h is None:
            return f"run {self.run_id}: {len(self.diagnostics)} samples"
        return h.header()


FRAME_COLUMNS = ["sample_id", "question", "answer", "reference_answer", "contexts", "status", "n_checks",
                 "n_unscored", "n_escalated"]
HEADLINE_COLUMNS = ["metric", "mean", "samples", "n/a", "unscored checks", "escalated checks"]


def headline_frame(summary: RunSummary) -> pd.DataFrame:
    """A run's headline table as a DataFrame (the columns of HEADLINE_COLUMNS, the run's counts in .attrs)."""
    frame = pd.DataFrame([[row.name, row.mean, row.n_samples, row.n_na, row.n_unscored, row.n_escalated]
                          for row in summary.metrics], columns=HEADLINE_COLUMNS)
    frame.attrs.update(run_id=summary.run_id, n_samples=summary.n_samples, n_failed=summary.n_failed,
                       n_checks=summary.n_checks, n_unscored=summary.n_unscored, n_escalated=summary.n_escalated,
                       n_pending=summary.n_pending, n_failed_splits=summary.n_failed_splits,
                       n_flagged_figures=summary.n_flagged_figures, n_flagged_samples=summary.n_flagged_samples,
                       n_empty_answers=summary.n_empty_answers)
    return frame


def run_inputs(store: RecordStore, run_id: str, samples: Iterable[Sample]) -> dict[str, SampleInputs]:
    """Each sample's inputs as the run saw them: the normal condition's stored answer and retrieval (a sample
    without a stored retrieval keeps its own contexts, a precomputed system's)."""
    answers = {a.sample_id: a for a in store.get_answers(run_id) if a.condition == NORMAL}
    retrievals = {r.sample_id: r for r in store.get_retrievals(run_id) if r.condition == NORMAL}
    out = {}
    for sample in samples:
        answer, retrieval = answers.get(sample.id), retrievals.get(sample.id)
        chunks = retrieval.chunks if retrieval is not None else sample.contexts or ()
        given = answer.text if answer is not None and answer.status is VerdictStatus.OK else sample.answer
        out[sample.id] = SampleInputs(question=sample.question, answer=given,
                                      reference_answer=sample.reference_answer,
                                      contexts=tuple(chunk.text for chunk in chunks))
    return out


def reference_system(collection: str = HOTPOTQA_COLLECTION, *, home: PathInput = DEFAULT_HOME,
                     generator: Generator | None = None) -> ReferenceRAG:
    """The CLI's reference RAG: the workspace's embedded chromadb collection (written by `ragcourt index` or
    `ragcourt demo`, offline MiniLM embeddings), retrieving as the configuration's `reference_retriever` says
    (BM25 with the cuer method, else dense), and a generator: by default the configuration's `answerer`
    ('extractive' unless EvalConfig(answerer="openai:...") says otherwise), or the `generator` given."""
    workspace = Workspace(home)
    vectors = workspace.open_vectors() if workspace.chroma_path.is_dir() else None
    if vectors is None or not vectors.has_collection(collection):
        raise ValueError(f"no chromadb collection '{collection}' in {workspace.chroma_path}: index a corpus first "
                         f"(`ragcourt index CORPUS --collection {collection} --home {workspace.home}`, or "
                         "`ragcourt demo` for the bundled HotpotQA sample)")
    return ReferenceRAG(vectors, collection, generator or ConfiguredAnswerer())


DatasetInput = str | os.PathLike[str] | Iterable[Sample] | Any  # Any: a datasets.Dataset or a RAGAS EvaluationDataset


def langchain_config(retriever: Any) -> EvalConfig:
    """The app as it is: the normal condition retrieves with the retriever's own k and score threshold."""
    search_kwargs = getattr(retriever, "search_kwargs", None)
    if isinstance(search_kwargs, dict):
        threshold = search_kwargs.get("score_threshold")
        return EvalConfig(top_k=int(search_kwargs.get("k", LANGCHAIN_DEFAULT_K)),
                          score_threshold=float(threshold) if threshold is not None else None)
    own_k = getattr(retriever, "k", None)
    return EvalConfig(top_k=own_k) if isinstance(own_k, int) and own_k >= 1 else EvalConfig()


def _samples_of(dataset: DatasetInput, dataset_format: DatasetFormat,
                column_map: Mapping[str, str] | None) -> tuple[CountedSamples, str]:
    """(samples, label) of a dataset= argument: a path or a data object read by data.formats, or Samples. A path
    is checked whole in a streaming pass and read again as it is evaluated (data.formats.stream_dataset)."""
    if isinstance(dataset, str | os.PathLike):
        stream = stream_dataset(dataset, format=dataset_format, column_map=column_map)
        stream.check()  # every problem before anything is evaluated
        return stream, os.fspath(dataset)
    if isinstance(dataset, list | tuple) and all(isinstance(s, Sample) for s in dataset):
        return checked_samples(dataset), ""
    kind = type(dataset)
    return (read_dataset(dataset, format=dataset_format, column_map=column_map).samples,
            f"{kind.__module__.split('.')[0]}.{kind.__name__}")


def checked_samples(samples: Iterable[Sample]) -> CountedSamples:
    """Samples given as objects, held to the rules a dataset file's rows are: each validated again (one made by
    `model_copy(update=...)` or `model_construct` skipped its validators), refused in the loaders' words with
    `samples[i]` where a file's error names its line, and each id given once. A SampleStream (data.formats.
    stream_dataset) is checked by its own pass and streams as it is; any other iterable is read into a list."""
    if isinstance(samples, SampleStream):
        samples.check()
        return samples
    out: list[Sample] = []
    first_at: dict[str, int] = {}
    for index, sample in enumerate(samples):
        try:
            out.append(Sample.model_validate(sample.model_dump()))
        except ValidationError as error:
            raise ValueError(f"samples[{index}]: {refusal(error)}") from None
        if sample.id in first_at:
            raise ValueError(f"samples[{index}]: field 'id': duplicate id '{sample.id}' (first at "
                             f"samples[{first_at[sample.id]}], again at samples[{index}])")
        first_at[sample.id] = index
    return out


def _resolve(
    samples: Iterable[Sample] | None, system: RAGSystem | None, retriever: Any, chain: Any,
    dataset: DatasetInput | None, config: EvalConfig | None,
    dataset_format: DatasetFormat = DatasetFormat.AUTO, column_map: Mapping[str, str] | None = None,
) -> tuple[CountedSamples, RAGSystem, str, EvalConfig]:
    """What to evaluate, from either (samples, system) or a LangChain app (retriever=, chain=) and
    dataset= (a path or data object data.formats reads, or samples). A path `dataset` next to `samples` is only
    a label."""
    label = ""
    if samples is None:
        if dataset is None:
            raise TypeError("give samples= or dataset= (a dataset path, a datasets.Dataset, a RAGAS "
                            "EvaluationDataset or a list of Samples)")
        samples, label = _samples_of(dataset, dataset_format, column_map)
    else:
        samples = checked_samples(samples)
        if isinstance(dataset, str | os.PathLike):
            label = os.fspath(dataset)
    if not samples:
        raise ValueError(f"the dataset has no samples{f' ({label})' if label else ''}: nothing to evaluate")
    if system is None:
        if chain is None:
            raise TypeError("give system= (a RAGSystem) or chain= (with retriever=) of a LangChain app")
        config = config or (langchain_config(retriever) if retriever is not None else EvalConfig())
        system = LangChainSystem(retriever, chain, normal_k=config.top_k)
    elif retriever is not None or chain is not None:
        raise TypeError("give either system= or retriever=/chain=, not both")
    return samples, system, label, config or EvalConfig()


@dataclass(frozen=True)
class _Plan:
    samples: CountedSamples
    system: RAGSystem
    label: str
    config: EvalConfig
    workspace: Workspace
    run_id: str
    vectors: VectorStore | None
    collection: str | None
    check_endpoints: bool = True


def _plan(samples: Iterable[Sample] | None, system: RAGSystem | None, retriever: Any, chain: Any,
          config: EvalConfig | None, home: PathInput, run_id: str | None, vectors: VectorStore | None,
          collection: str | None, dataset: DatasetInput | None, check_endpoints: bool = True,
          dataset_format: DatasetFormat = DatasetFormat.AUTO, column_map: Mapping[str, str] | None = None) -> _Plan:
    samples, system, label, config = _resolve(samples, system, retriever, chain, dataset, config, dataset_format,
                                              column_map)
    workspace = Workspace(home)
    run_id = run_id or derived_run_id(config, samples, system.name)
    workspace.run_dir(run_id)  # a run id that is not a plain name is refused before anything is opened
    if vectors is None and collection is None and isinstance(system, ReferenceRAG):
        vectors, collection = system.vectors, system.collection  # its collection gives distractors, as in the CLI
    return _Plan(samples, system, label, config, workspace, run_id, vectors, collection, check_endpoints)


async def _stream(plan: _Plan) -> AsyncGenerator[SampleDiagnostics, None]:
    store = plan.workspace.open_store()
    try:
        def system_of(models: Models) -> RAGSystem:
            system = plan.system
            if isinstance(system, ReferenceRAG) and system.retriever is None:
                system = replace(system, retriever=plan.config.reference_retriever)
            if isinstance(system, ReferenceRAG) and isinstance(system.generator, ConfiguredAnswerer):
                return replace(system, generator=models.generator())
            return system

        _, context = await prepare_run(plan.config, store, system_of, plan.vectors, plan.collection,
                                       check=plan.check_endpoints)
        telemetry = Telemetry.configured(plan.config.telemetry.otlp_endpoint)  # else the environment's endpoint
        try:
            runner = Runner(context, plan.run_id, plan.workspace.run_dir(plan.run_id), telemetry=telemetry)
            async for diagnostics in runner.astream(plan.samples, dataset=plan.label, system=context.system.name):
                yield diagnostics
            if plan.config.reconcile is Reconcile.WEIGHTED:  # the final step: every sample again, decided by the
                for diagnostics in await aweigh_run(runner, plan.samples):  # jury's estimates (validity.jury_weights)
                    yield diagnostics
        finally:
            telemetry.shutdown()  # sends the spans still batched
    finally:
        store.close()


async def astream(
    samples: Iterable[Sample] | None = None,
    system: RAGSystem | None = None,
    *,
    retriever: Any = None,
    chain: Any = None,
    config: EvalConfig | None = None,
    home: PathInput = DEFAULT_HOME,
    run_id: str | None = None,
    vectors: VectorStore | None = None,
    collection: str | None = None,
    dataset: DatasetInput | None = None,
    check_endpoints: bool = True,
    column_map: Mapping[str, str] | None = None,
    dataset_format: DatasetFormat | str = DatasetFormat.AUTO,
) -> AsyncIterator[SampleDiagnostics]:
    """Evaluate, yielding each question's diagnostics as it finishes (in order of completion).

    What: `samples` and a `system` (e.g. reference_system(...), Precomputed()), or a LangChain app as it is:
    any BaseRetriever as `retriever` and an answer chain taking {question, context} as `chain`, or one `chain`
    alone that returns a dict with "context" (Documents) and "answer" (see systems.LangChainSystem).
    `dataset` is given when `samples` is not: a list of Samples, a path (str or PathLike) of a .jsonl / .json /
    .csv / .parquet file or a saved Hugging Face dataset directory, a `datasets.Dataset`, or a RAGAS
    `EvaluationDataset`; RAGAS and LangSmith shapes are detected from the first row (`dataset_format` names
    one: auto, ragcourt, ragas, langsmith, hotpotqa), and `column_map` maps our fields to your columns
    ({"question": "query", "reference_answer": "gt_answer"}; see ragcourt.data.formats). A dataset path is
    checked whole in one streaming pass and read again as it is evaluated, so memory does not grow with its size;
    so is `samples` given as `ragcourt.data.stream_dataset(path)` (any other iterable is read into a list).
    Without `config`, a LangChain app is evaluated with its retriever's own k and score threshold. `home` is
    the workspace directory (str or PathLike). `run_id` defaults to one derived from the configuration, the
    system and the samples' contents: the same call again resumes the run (asking again only what failed for a
    transient reason), and after an edit of the samples it is a new run. An explicit `run_id` over samples the
    run holds with other contents raises SamplesChangedError (naming them) before anything is written.
    Before the first sample every LLM endpoint of `config` is asked once (GET {base_url}/models): one that
    cannot answer raises ragcourt.llm.probe.EndpointUnavailableError (one line per endpoint: who calls it, the
    URL, the cause); a missing API key or local model file raises it even with `check_endpoints=False`, which
    skips the request for a server that rejects it. OpenTelemetry spans of the run go to
    `config.telemetry.otlp_endpoint`, else $OTEL_EXPORTER_OTLP_ENDPOINT, when one is set (observability.telemetry).
    With `reconcile: weighted`, every sample's diagnostics come again after the last one, decided by the jury's
    estimates (validity.jury_weights): those are the run's figures.
    """
    plan = _plan(samples, system, retriever, chain, config, home, run_id, vectors, collection, dataset,
                 check_endpoints, DatasetFormat(dataset_format), column_map)
    # On ragcourt's loop, as `evaluate`; closed with this generator, so a consumer that stops early has the
    # run stopped and its lock released when its `aclose()` returns.
    async with contextlib.aclosing(background_loop.stream(_stream(plan))) as streamed:
        async for diagnostics in streamed:
            yield diagnostics


async def aevaluate(
    samples: Iterable[Sample] | None = None,
    system: RAGSystem | None = None,
    *,
    retriever: Any = None,
    chain: Any = None,
    config: EvalConfig | None = None,
    home: PathInput = DEFAULT_HOME,
    run_id: str | None = None,
    vectors: VectorStore | None = None,
    collection: str | None = None,
    dataset: DatasetInput | None = None,
    check_endpoints: bool = True,
    column_map: Mapping[str, str] | None = None,
    dataset_format: DatasetFormat | str = DatasetFormat.AUTO,
) -> EvalResult:
    """All diagnostics of `astream` (same arguments), in the dataset's order, with each sample's inputs
    (`to_frame`) and the run's headline figures (`summary`)."""
    plan = _plan(samples, system, retriever, chain, config, home, run_id, vectors, collection, dataset,
                 check_endpoints, DatasetFormat(dataset_format), column_map)
    position = {sample.id: i for i, sample in enumerate(plan.samples)}

    async def collect() -> list[SampleDiagnostics]:
        return [d async for d in _stream(plan)]

    # On ragcourt's loop, as `evaluate`: a ChatOpenAI shares one connection pool per base URL, bound to the
    # loop that first used it, so every ragcourt run must use the same loop whichever API started it.
    # a weighted run yields each sample twice (first pass, then re-decided): the last one stands
    collected = list({d.sample_id: d for d in await background_loop.run_async(collect())}.values())
    collected.sort(key=lambda d: position.get(d.sample_id, len(position)))
    inputs, headline = await asyncio.to_thread(_inputs_and_headline, plan)
    return EvalResult(run_id=plan.run_id, run_dir=plan.workspace.run_dir(plan.run_id), diagnostics=collected,
                      inputs=inputs, headline=headline)


def _inputs_and_headline(plan: _Plan) -> tuple[dict[str, SampleInputs], RunSummary]:
    store = plan.workspace.open_store()
    try:
        return run_inputs(store, plan.run_id, plan.samples), summarize(store, plan.run_id)
    finally:
        store.close()


def evaluate(samples: Iterable[Sample] | None = None, system: RAGSystem | None = None, **options: Any) -> EvalResult:
    """Synchronous `aevaluate` (same arguments):
    `ragcourt.evaluate(retriever=app_retriever, chain=answer_chain, dataset="questions.jsonl")`.

    Every call runs on one event loop that ragcourt keeps for the process (started on first use, in a daemon
    thread), so repeated calls can share clients bound to a loop (a ChatOpenAI's connection pool), and it
    works where a loop is already running (Jupyter, async code), blocking that loop until it returns; there,
    `await ragcourt.aevaluate(...)` does not block. Ctrl-C cancels the run.
    """
    return background_loop.run(aevaluate(samples, system, **options),
                               async_hint="use `await ragcourt.aevaluate(...)` instead")
