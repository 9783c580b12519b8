"""Building an evaluation from a configuration, and the public Python API.

A workspace (default `./ragcourt-runs`) holds one record store for all its runs (so the LLM cache and
frozen element lists serve every later run), the chromadb folder, and one directory per run with its
diagnostics stream, the config used and, for inline review, the LangGraph checkpoints.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import openai
import pandas as pd

from ragcourt.config import ConfigError, EvalConfig
from ragcourt.datasets import load_samples
from ragcourt.decomposers import Decomposer, LLMDecomposer, SentenceDecomposer
from ragcourt.jury import BaselineJudge, BaselineRule, Judge, LLMJudge
from ragcourt.llm.factory import build_client
from ragcourt.llm.limits import LimiterRegistry
from ragcourt.llm.spec import ModelSpec, Provider
from ragcourt.llm.usage import UsageMeter
from ragcourt.runner import Runner
from ragcourt.schema import Sample, SampleDiagnostics, content_id
from ragcourt.state import EvalContext
from ragcourt.stores.embeddings import MiniLMEmbedding
from ragcourt.stores.records import RecordStore
from ragcourt.stores.vectors import VectorStore
from ragcourt.systems import ExtractiveGenerator, Generator, LangChainSystem, LLMGenerator, RAGSystem

DEFAULT_HOME = Path("ragcourt-runs")
HOTPOTQA_COLLECTION = "hotpotqa"  # where `ragcourt demo` indexes the bundled corpus; `run`'s default
NO_LLM = {"lexical", "semantic", "sentences", "extractive"}
LANGCHAIN_DEFAULT_K = 4  # VectorStoreRetriever's k when search_kwargs does not set it


@dataclass(frozen=True)
class Workspace:
    home: Path = DEFAULT_HOME

    @property
    def store_path(self) -> Path:
        return self.home / "store.sqlite"

    @property
    def chroma_path(self) -> Path:
        return self.home / "chroma"

    def run_dir(self, run_id: str) -> Path:
        if not run_id or run_id in (".", "..") or "/" in run_id or "\\" in run_id or "\0" in run_id:
            raise ValueError(f"run id {run_id!r} is not a plain name (no '/', '\\', '..' or NUL)")
        return self.home / "runs" / run_id

    def open_store(self) -> RecordStore:
        self.home.mkdir(parents=True, exist_ok=True)
        return RecordStore(self.store_path)

    def open_vectors(self) -> VectorStore:
        return VectorStore.persistent(self.chroma_path, MiniLMEmbedding())


def check_model_specs(config: EvalConfig, source: str = "<config>") -> None:
    """Raise ConfigError naming the key of a model spec that does not parse, or of repeated judge ids: what
    building the Models would fail on, found before a store is opened or anything is built."""
    named = [(f"judges.{i}.model", j.model) for i, j in enumerate(config.judges) if j.model not in NO_LLM]
    named += [(key, value) for key, value in (("decomposer", config.decomposer), ("answerer", config.answerer),
                                               ("bounds_generator", config.bounds_generator))
              if value is not None and value not in NO_LLM]
    for key, text in named:
        try:
            ModelSpec.parse(text)
        except ValueError as error:
            raise ConfigError(f"{source}: invalid configuration key '{key}': {error}") from None
    ids = [j.judge_id for j in config.judges]
    if len(set(ids)) != len(ids):
        raise ConfigError(f"{source}: invalid configuration key 'judges': judge ids must be unique, got {ids}; give "
                          "repeated models an 'id'")


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S")


@dataclass
class Models:
    """Builds every LLM client of a run with one cache, one usage meter and one limiter per endpoint."""

    config: EvalConfig
    store: RecordStore
    usage: UsageMeter = field(default_factory=UsageMeter)
    limiters: LimiterRegistry | None = None
    _embedding: MiniLMEmbedding | None = None
    # One connection pool per endpoint for the run's clients (judges, decomposer, answerer share it).
    _http_clients: dict[str, openai.DefaultAsyncHttpxClient] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.limiters = self.limiters or LimiterRegistry(default_max_concurrency=self.config.llm_concurrency)

    def client(self, spec_text: str, role: str, *, logprobs: bool = False) -> Any:
        spec = ModelSpec.parse(spec_text)
        assert self.limiters is not None
        # A local model runs one call at a time anyway (llama.cpp): queue the rest here, not in threads.
        in_flight = 1 if spec.provider is Provider.LOCAL else None
        http_client = None
        if spec.provider is not Provider.LOCAL:
            if spec.endpoint not in self._http_clients:  # made once: a pool's TLS set-up costs ~20 ms
                self._http_clients[spec.endpoint] = openai.DefaultAsyncHttpxClient()
            http_client = self._http_clients[spec.endpoint]
        return build_client(
            spec, role=role, cache=self.store,
            limiter=self.limiters.limiter_for(spec.endpoint, max_concurrency=in_flight),
            usage=self.usage, timeout_s=self.config.timeout_s, logprobs=logprobs,
            top_logprobs=5 if logprobs else None, http_client=http_client,
        )

    def embed(self, texts: list[str]) -> np.ndarray:
        if self._embedding is None:
            self._embedding = MiniLMEmbedding()
        return np.asarray(self._embedding(texts), dtype=np.float32)

    def judges(self) -> list[Judge]:
        out: list[Judge] = []
        for spec in self.config.judges:
            if spec.model in (BaselineRule.LEXICAL, BaselineRule.SEMANTIC):
                out.append(BaselineJudge(BaselineRule(spec.model), embed=self.embed, name=spec.id))
            else:
                out.append(LLMJudge(self.client(spec.model, "judge", logprobs=spec.logprobs), spec.judge_id))
        ids = [j.judge_id for j in out]
        if len(set(ids)) != len(ids):
            raise ValueError(f"judge ids must be unique, got {ids}; give repeated models an 'id'")
        for judge in out:
            if isinstance(judge, LLMJudge):
                self._check_judge_identity(judge)
        return out

    def _check_judge_identity(self, judge: LLMJudge) -> None:
        """Stored verdicts are reused by (check, judge id): under an id whose model changed they would be
        another model's answers. Refused, not silently reused or overwritten."""
        others = self.store.judge_model_ids(judge.judge_id) - {judge.client.model_id}
        if others:
            raise ConfigError(
                f"judge id '{judge.judge_id}' has verdicts from {', '.join(sorted(others))} in this workspace's "
                f"store and now names {judge.client.model_id}: its stored verdicts would be reused for another "
                "model. Give this judge a new 'id' in the configuration, or use another --home."
            )

    def decomposer(self) -> Decomposer:
        if self.config.decomposer == "sentences":
            return SentenceDecomposer()
        return LLMDecomposer(self.client(self.config.decomposer, "decomposer"))

    def generator(self) -> Generator:
        if self.config.answerer == "extractive":
            return ExtractiveGenerator()
        return LLMGenerator(self.client(self.config.answerer, "answerer"), name=self.config.answerer)

    def bounds_generator(self) -> Generator | None:
        """The generator of the closed-book and oracle answers of a precomputed system; None when unset."""
        spec = self.config.bounds_generator
        if spec is None:
            return None
        if spec == "extractive":
            return ExtractiveGenerator()
        return LLMGenerator(self.client(spec, "bounds"), name=spec)


@dataclass
class EvalResult:
    run_id: str
    run_dir: Path
    diagnostics: list[SampleDiagnostics]

    def to_frame(self) -> pd.DataFrame:
        """One row per sample, one column per metric (n/a as None)."""
        rows = []
        for d in self.diagnostics:
            row: dict[str, Any] = {"sample_id": d.sample_id, "status": str(d.status), "n_checks": d.n_checks,
                                   "n_unscored": d.n_unscored, "n_escalated": len(d.escalations)}
            row.update({m.name: m.value for m in d.metrics})
            rows.append(row)
        return pd.DataFrame(rows)


def _context(config: EvalConfig, system: RAGSystem, store: RecordStore, models: Models,
             vectors: VectorStore | None, collection: str | None) -> EvalContext:
    return EvalContext(config=config, system=system, judges=models.judges(), decomposer=models.decomposer(),
                       store=store, vectors=vectors, collection=collection, extras={"usage": models.usage})


DatasetInput = str | Path | Sequence[Sample]


def _langchain_config(retriever: Any) -> EvalConfig:
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
    dataset= (a JSONL / JSON / CSV path, or samples). A string `dataset` next to `samples` is only a label."""
    label = ""
    if samples is None:
        if dataset is None:
            raise TypeError("give samples= or dataset= (a .jsonl/.json/.csv path or a list of Samples)")
        if isinstance(dataset, str | Path):
            samples, label = load_samples(Path(dataset)).samples, str(dataset)
        else:
            samples = dataset
    elif isinstance(dataset, str | Path):
        label = str(dataset)
    if system is None:
        if chain is None:
            raise TypeError("give system= (a RAGSystem) or chain= (with retriever=) of a LangChain app")
        config = config or (_langchain_config(retriever) if retriever is not None else EvalConfig())
        system = LangChainSystem(retriever, chain, normal_k=config.top_k)
    elif retriever is not None or chain is not None:
        raise TypeError("give either system= or retriever=/chain=, not both")
    return samples, system, label, config or EvalConfig()


async def astream(
    samples: Sequence[Sample] | None = None,
    system: RAGSystem | None = None,
    *,
    retriever: Any = None,
    chain: Any = None,
    config: EvalConfig | None = None,
    home: Path = DEFAULT_HOME,
    run_id: str | None = None,
    vectors: VectorStore | None = None,
    collection: str | None = None,
    dataset: DatasetInput | None = None,
) -> AsyncIterator[SampleDiagnostics]:
    """Evaluate, yielding each question's diagnostics as it finishes (in order of completion).

    What: `samples` and a `system`, or a LangChain app as it is: any BaseRetriever as `retriever` and an
    answer chain taking {question, context} as `chain`, or one `chain` alone that returns a dict with
    "context" (Documents) and "answer" (see systems.LangChainSystem). `dataset` is a .jsonl/.json/.csv path
    or a list of Samples when `samples` is not given. Without `config`, a LangChain app is evaluated with
    its retriever's own k and score threshold.
    """
    samples, system, dataset, config = _resolve(samples, system, retriever, chain, dataset, config)
    workspace = Workspace(home)
    run_id = run_id or f"run-{content_id(config.model_dump(mode='json'), [s.id for s in samples], system.name)}"
    store = workspace.open_store()
    try:
        context = _context(config, system, store, Models(config, store), vectors, collection)
        runner = Runner(context, run_id, workspace.run_dir(run_id))
        async for diagnostics in runner.astream(samples, dataset=dataset, system=system.name):
            yield diagnostics
    finally:
        store.close()


async def aevaluate(
    samples: Sequence[Sample] | None = None, system: RAGSystem | None = None, **options: Any
) -> EvalResult:
    """All diagnostics of `astream` (same arguments: samples/system or retriever=/chain=/dataset=)."""
    collected = [d async for d in astream(samples, system, **options)]
    run_id = collected[0].run_id if collected else options.get("run_id", "")
    return EvalResult(run_id=run_id, run_dir=Workspace(options.get("home", DEFAULT_HOME)).run_dir(run_id),
                      diagnostics=collected)


def evaluate(samples: Sequence[Sample] | None = None, system: RAGSystem | None = None, **options: Any) -> EvalResult:
    """Synchronous `aevaluate`, for scripts and notebooks without a running event loop:
    `ragcourt.evaluate(retriever=app_retriever, chain=answer_chain, dataset="questions.jsonl")`."""
    return asyncio.run(aevaluate(samples, system, **options))
