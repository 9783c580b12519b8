"""The public Python API: evaluate, aevaluate and astream a RAG system (or a LangChain app as it is) on a
dataset, EvalResult, and reference_system, the CLI's reference RAG.

Every run goes to a workspace (ragcourt.runs.workspace) and is built from its configuration as the CLI
builds it (ragcourt.runs.models).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from ragcourt.data.loaders import load_samples
from ragcourt.runs import background_loop
from ragcourt.runs.models import ConfiguredAnswerer, Models, prepare_run
from ragcourt.runs.runner import Runner
from ragcourt.runs.workspace import DEFAULT_HOME, HOTPOTQA_COLLECTION, PathInput, Workspace, derived_run_id
from ragcourt.schema import Sample, SampleDiagnostics
from ragcourt.schema.config import EvalConfig
from ragcourt.stores.vectors import VectorStore
from ragcourt.systems import Generator, LangChainSystem, RAGSystem, ReferenceRAG

LANGCHAIN_DEFAULT_K = 4  # VectorStoreRetriever's k when search_kwargs does not set it


@dataclass
class EvalResult:
    run_id: str
    run_dir: Path
    diagnostics: list[SampleDiagnostics]

    def to_frame(self) -> pd.DataFrame:
        """One row per sample, in the order of `diagnostics` (the dataset's order, from evaluate/aevaluate).

        Columns: sample_id, status, n_checks, n_unscored (unscored verdicts), n_escalated (escalated checks),
        then per metric `<metric>` (the value; None when n/a), `<metric>_na_reason`, and the metric's own
        counts `<metric>_n_unscored` and `<metric>_n_escalated` (the report's `<metric>_na_reason` naming).
        """
        rows = []
        for d in self.diagnostics:
            row: dict[str, Any] = {"sample_id": d.sample_id, "status": str(d.status), "n_checks": d.n_checks,
                                   "n_unscored": d.n_unscored, "n_escalated": len(d.escalations)}
            for m in d.metrics:
                row.update({m.name: m.value, f"{m.name}_na_reason": m.na_reason,
                            f"{m.name}_n_unscored": m.n_unscored, f"{m.name}_n_escalated": m.n_escalated})
            rows.append(row)
        return pd.DataFrame(rows) if rows else pd.DataFrame(columns=FRAME_COLUMNS)


FRAME_COLUMNS = ["sample_id", "status", "n_checks", "n_unscored", "n_escalated"]


def reference_system(collection: str = HOTPOTQA_COLLECTION, *, home: PathInput = DEFAULT_HOME,
                     generator: Generator | None = None) -> ReferenceRAG:
    """The CLI's reference RAG: the workspace's embedded chromadb collection (written by `ragcourt index` or
    `ragcourt demo`, offline MiniLM embeddings) and a generator: by default the configuration's `answerer`
    ('extractive' unless EvalConfig(answerer="openai:...") says otherwise), or the `generator` given."""
    workspace = Workspace(home)
    vectors = workspace.open_vectors() if workspace.chroma_path.is_dir() else None
    if vectors is None or not vectors.has_collection(collection):
        raise ValueError(f"no chromadb collection '{collection}' in {workspace.chroma_path}: index a corpus first "
                         f"(`ragcourt index CORPUS --collection {collection} --home {workspace.home}`, or "
                         "`ragcourt demo` for the bundled HotpotQA sample)")
    return ReferenceRAG(vectors, collection, generator or ConfiguredAnswerer())


DatasetInput = str | os.PathLike[str] | Sequence[Sample]


def langchain_config(retriever: Any) -> EvalConfig:
    """The app as it is: the normal condition retrieves with the retriever's own k and score threshold."""
    search_kwargs = getattr(retriever, "search_kwargs", None)
    if isinstance(search_kwargs, dict):
        threshold = search_kwargs.get("score_threshold")
        return EvalConfig(top_k=int(search_kwargs.get("k", LANGCHAIN_DEFAULT_K)),
                          score_threshold=float(threshold) if threshold is not None else None)
    own_k = getattr(retriever, "k", None)
    return EvalConfig(top_k=own_k) if isinstance(own_k, int) and own_k >= 1 else EvalConfig()


def _resolve(
    samples: Sequence[Sample] | None, system: RAGSystem | None, retriever: Any, chain: Any,
    dataset: DatasetInput | None, config: EvalConfig | None,
) -> tuple[Sequence[Sample], RAGSystem, str, EvalConfig]:
    """What to evaluate, from either (samples, system) or a LangChain app (retriever=, chain=) and
    dataset= (a JSONL / JSON / CSV path, or samples). A path `dataset` next to `samples` is only a label."""
    label = ""
    if samples is None:
        if dataset is None:
            raise TypeError("give samples= or dataset= (a .jsonl/.json/.csv path or a list of Samples)")
        if isinstance(dataset, str | os.PathLike):
            samples, label = load_samples(Path(dataset)).samples, os.fspath(dataset)
        else:
            samples = dataset
    elif isinstance(dataset, str | os.PathLike):
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
    samples: Sequence[Sample]
    system: RAGSystem
    label: str
    config: EvalConfig
    workspace: Workspace
    run_id: str
    vectors: VectorStore | None
    collection: str | None
    check_endpoints: bool = True


def _plan(samples: Sequence[Sample] | None, system: RAGSystem | None, retriever: Any, chain: Any,
          config: EvalConfig | None, home: PathInput, run_id: str | None, vectors: VectorStore | None,
          collection: str | None, dataset: DatasetInput | None, check_endpoints: bool = True) -> _Plan:
    samples, system, label, config = _resolve(samples, system, retriever, chain, dataset, config)
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
            if isinstance(system, ReferenceRAG) and isinstance(system.generator, ConfiguredAnswerer):
                return replace(system, generator=models.generator())
            return system

        _, context = await prepare_run(plan.config, store, system_of, plan.vectors, plan.collection,
                                       check=plan.check_endpoints)
        runner = Runner(context, plan.run_id, plan.workspace.run_dir(plan.run_id))
        async for diagnostics in runner.astream(plan.samples, dataset=plan.label, system=context.system.name):
            yield diagnostics
    finally:
        store.close()


async def astream(
    samples: Sequence[Sample] | None = None,
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
) -> AsyncIterator[SampleDiagnostics]:
    """Evaluate, yielding each question's diagnostics as it finishes (in order of completion).

    What: `samples` and a `system` (e.g. reference_system(...), Precomputed()), or a LangChain app as it is:
    any BaseRetriever as `retriever` and an answer chain taking {question, context} as `chain`, or one `chain`
    alone that returns a dict with "context" (Documents) and "answer" (see systems.LangChainSystem).
    `dataset` is a .jsonl/.json/.csv path (str or PathLike) or a list of Samples when `samples` is not given.
    Without `config`, a LangChain app is evaluated with its retriever's own k and score threshold. `home` is
    the workspace directory (str or PathLike). `run_id` defaults to one derived from the configuration, the
    system and the samples' contents: the same call again resumes the run (asking again only what failed for a
    transient reason), and after an edit of the samples it is a new run. An explicit `run_id` over samples the
    run holds with other contents raises SamplesChangedError (naming them) before anything is written.
    Before the first sample every LLM endpoint of `config` is asked once (GET {base_url}/models): one that
    cannot answer raises ragcourt.llm.probe.EndpointUnavailableError (one line per endpoint: who calls it, the
    URL, the cause); a missing API key or local model file raises it even with `check_endpoints=False`, which
    skips the request for a server that rejects it.
    """
    plan = _plan(samples, system, retriever, chain, config, home, run_id, vectors, collection, dataset,
                 check_endpoints)
    # On ragcourt's loop, as `evaluate`; closed with this generator, so a consumer that stops early has the
    # run stopped and its lock released when its `aclose()` returns.
    async with contextlib.aclosing(background_loop.stream(_stream(plan))) as streamed:
        async for diagnostics in streamed:
            yield diagnostics


async def aevaluate(
    samples: Sequence[Sample] | None = None,
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
) -> EvalResult:
    """All diagnostics of `astream` (same arguments), in the dataset's order."""
    plan = _plan(samples, system, retriever, chain, config, home, run_id, vectors, collection, dataset,
                 check_endpoints)
    position = {sample.id: i for i, sample in enumerate(plan.samples)}

    async def collect() -> list[SampleDiagnostics]:
        return [d async for d in _stream(plan)]

    # On ragcourt's loop, as `evaluate`: a ChatOpenAI shares one connection pool per base URL, bound to the
    # loop that first used it, so every ragcourt run must use the same loop whichever API started it.
    collected = await background_loop.run_async(collect())
    collected.sort(key=lambda d: position.get(d.sample_id, len(position)))
    return EvalResult(run_id=plan.run_id, run_dir=plan.workspace.run_dir(plan.run_id), diagnostics=collected)


def evaluate(samples: Sequence[Sample] | None = None, system: RAGSystem | None = None, **options: Any) -> EvalResult:
    """Synchronous `aevaluate` (same arguments):
    `ragcourt.evaluate(retriever=app_retriever, chain=answer_chain, dataset="questions.jsonl")`.

    Every call runs on one event loop that ragcourt keeps for the process (started on first use, in a daemon
    thread), so repeated calls can share clients bound to a loop (a ChatOpenAI's connection pool), and it
    works where a loop is already running (Jupyter, async code), blocking that loop until it returns; there,
    `await ragcourt.aevaluate(...)` does not block. Ctrl-C cancels the run.
    """
    return background_loop.run(aevaluate(samples, system, **options),
                               async_hint="use `await ragcourt.aevaluate(...)` instead")
