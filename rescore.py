"""Recompute a run's decisions and metrics from the store, e.g. after reviews: no LLM call, no system call.

The per-sample graph is replayed with the run's stored configuration: retrievals, answers, decompositions
and verdicts come back from the store, reconciliation picks up the latest reviews, and the scorer writes
fresh diagnostics. A replay system refuses any call, so nothing can silently reach a model.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ragcourt.api import Models, _context
from ragcourt.config import EvalConfig
from ragcourt.runner import Runner
from ragcourt.schema import Chunk, Condition, Sample, SampleDiagnostics
from ragcourt.stores.records import RecordStore
from ragcourt.systems import ConditionUnavailable, Generation


@dataclass
class ReplaySystem:
    """Stands where the system under test was: every stored output is reused, any new call is refused."""

    name: str

    async def retrieve(self, sample: Sample, k: int, score_threshold: float | None) -> list[Chunk]:
        raise ConditionUnavailable("replay: this retrieval was not stored in the original run")

    async def generate(self, sample: Sample, chunks: Sequence[Chunk], condition: Condition) -> Generation:
        raise ConditionUnavailable(f"replay: no stored answer for {condition.key}")


async def arescore_run(store: RecordStore, run_id: str, run_dir: Path) -> list[SampleDiagnostics]:
    run = store.get_run(run_id)
    if run is None:
        raise LookupError(f"no run '{run_id}' in the store")
    config = EvalConfig.model_validate(run.config)
    context = _context(config, ReplaySystem(run.system), store, Models(config, store), None, None)
    runner = Runner(context, run_id, run_dir)
    return [d async for d in runner.astream(store.get_samples(run_id), rescore=True)]


def rescore_run(store: RecordStore, run_id: str, run_dir: Path) -> list[SampleDiagnostics]:
    return asyncio.run(arescore_run(store, run_id, run_dir))
