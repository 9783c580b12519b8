"""Recompute a run's decisions and metrics from the store, e.g. after reviews: no LLM call, no system call.

The per-sample graph is replayed with the run's stored configuration: retrievals, answers, decompositions
and verdicts come back from the store, reconciliation picks up the latest reviews (a `reconcile: weighted`
run estimates its jury again first, the reviews clamped: validity.jury_weights), and the scorer writes
fresh diagnostics. A replay system refuses any call, and replay judges and decomposer give back only what
was stored, so nothing can silently reach a model.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ragcourt.judging.decomposers import Decomposer, Split
from ragcourt.nodes.state import EvalContext
from ragcourt.runs.models import Models, eval_context
from ragcourt.runs.runner import Runner
from ragcourt.schema import (
    Check,
    CheckKind,
    Chunk,
    Condition,
    DecompositionKind,
    Sample,
    SampleDiagnostics,
    Turn,
    UnscoredReason,
    Verdict,
    VerdictStatus,
)
from ragcourt.schema.config import EvalConfig, Reconcile
from ragcourt.stores.records import RecordStore
from ragcourt.systems import ConditionUnavailable, Generation
from ragcourt.validity.jury_weights import fit_jury


@dataclass
class ReplaySystem:
    """Stands where the system under test was: every stored output is reused, any new call is refused."""

    name: str

    async def retrieve(self, sample: Sample, k: int, score_threshold: float | None) -> list[Chunk]:
        raise ConditionUnavailable("replay: this retrieval was not stored in the original run")

    async def generate(self, sample: Sample, chunks: Sequence[Chunk], condition: Condition) -> Generation:
        raise ConditionUnavailable(f"replay: no stored answer for {condition.key}")


@dataclass
class ReplayJudge:
    """Stands where a judge was: gives back its stored verdicts, a transient failure included, and never asks
    a model (the judge node asks a judge again for timed-out checks; a replay must not)."""

    judge_id: str
    store: RecordStore

    async def judge(self, kind: CheckKind, checks: Sequence[Check]) -> list[Verdict]:
        stored = {v.check_id: v for v in await self.store.aget_verdicts([c.id for c in checks], self.judge_id)}
        return [stored.get(c.id) or Verdict.unscored(
            c.id, self.judge_id, UnscoredReason.ERROR, "replay: this judge gave no verdict in the original run",
        ) for c in checks]


@dataclass
class ReplayDecomposer:
    """Stands where the decomposer was: stored splits are found under its model and prompt hash; a split the
    original run could not make stays unmade."""

    original: Decomposer

    @property
    def model_id(self) -> str:
        return self.original.model_id

    def prompt_hash(self, kind: DecompositionKind) -> str:
        return self.original.prompt_hash(kind)

    async def split(self, kind: DecompositionKind, text: str, question: str, history: tuple[Turn, ...] = ()) -> Split:
        return Split(items=(), status=VerdictStatus.UNSCORED, unscored_reason=UnscoredReason.ERROR)


def replay_context(store: RecordStore, run_id: str) -> EvalContext:
    """The run's context with every model and system call replaced by the store's records."""
    run = store.get_run(run_id)
    if run is None:
        raise LookupError(f"no run '{run_id}' in the store")
    config = EvalConfig.of_stored_run(run.config)
    context = eval_context(config, ReplaySystem(run.system), store, Models(config, store), None, None)
    context.judges = [ReplayJudge(judge.judge_id, store) for judge in context.judges]
    context.decomposer = ReplayDecomposer(context.decomposer)
    if config.reconcile is Reconcile.WEIGHTED:  # the jury is estimated again, with the reviews so far clamped
        context.posteriors = fit_jury(store, run_id, config).posteriors
    return context


async def arescore_run(store: RecordStore, run_id: str, run_dir: Path) -> list[SampleDiagnostics]:
    context = replay_context(store, run_id)
    runner = Runner(context, run_id, run_dir)
    return [d async for d in runner.astream(store.get_samples(run_id), rescore=True)]


def rescore_run(store: RecordStore, run_id: str, run_dir: Path) -> list[SampleDiagnostics]:
    return asyncio.run(arescore_run(store, run_id, run_dir))


async def aweigh_run(runner: Runner, samples: Iterable[Sample]) -> list[SampleDiagnostics]:
    """The final step of a weighted run: fit the jury, then evaluate the samples again from the store with the
    posteriors in the context. Returns the re-decided diagnostics (in order of completion)."""
    store = runner.context.store
    weights = await asyncio.to_thread(fit_jury, store, runner.run_id, runner.context.config)
    runner.context.posteriors = weights.posteriors
    return [d async for d in runner.astream(samples, rescore=True)]
