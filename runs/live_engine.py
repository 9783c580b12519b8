"""What evaluates a captured live request: the run's store, models, graph and runner, in whichever process
evaluates (the worker process of runs.live_process, or the app's own one with `worker="thread"`)."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragcourt.graphs.sample import build_sample_graph
from ragcourt.runs.langsmith_feedback import LangSmithFeedback
from ragcourt.runs.models import Models, eval_context
from ragcourt.runs.runner import Runner
from ragcourt.runs.telemetry import Telemetry
from ragcourt.runs.workspace import Workspace
from ragcourt.schema import Chunk, Sample, SampleDiagnostics, SampleStatus
from ragcourt.schema.config import EvalConfig
from ragcourt.systems import Precomputed

logger = logging.getLogger("ragcourt.live")


@dataclass(frozen=True)
class CapturedRequest:
    request_id: str
    question: str
    chunks: tuple[Chunk, ...]
    answer: str

    def sample(self) -> Sample:
        return Sample(id=self.request_id, question=self.question, contexts=self.chunks, answer=self.answer,
                      metadata={"source": "live"})

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled in the app's thread that finished the request (runs.live_process): the chunks as their field
        # values take a quarter of the time of pickling the pydantic models (about 16 vs 65 us with cold
        # caches, as they are between two requests); they were validated when they were captured.
        chunks = tuple((chunk.__dict__, chunk.model_fields_set) for chunk in self.chunks)
        return (captured_request, (self.request_id, self.question, chunks, self.answer))


def captured_request(request_id: str, question: str, chunks: tuple[tuple[dict[str, Any], set[str]], ...],
                     answer: str) -> CapturedRequest:
    """A CapturedRequest from the parts CapturedRequest.__reduce__ pickles."""
    rebuilt = tuple(Chunk.model_construct(fields, **values) for values, fields in chunks)
    return CapturedRequest(request_id=request_id, question=question, chunks=rebuilt, answer=answer)


class LiveEngine:
    """Opened once per live run in the evaluating process; `evaluate` never raises (a failure is a record)."""

    def __init__(self, *, home: Path, run_id: str, config: EvalConfig, app_name: str, telemetry: Telemetry,
                 feedback: LangSmithFeedback | None) -> None:
        workspace = Workspace(home)
        self.run_id, self.feedback = run_id, feedback
        self.store = workspace.open_store()
        try:
            models = Models(config, self.store)
            context = eval_context(config, Precomputed(name=app_name), self.store, models, None, None)
            self.graph: Any = build_sample_graph(wrap_node=telemetry.wrap_node)
            self.runner = Runner(context, run_id, workspace.run_dir(run_id), telemetry=telemetry)
            self.runner.register(dataset="live", system=app_name)
        except BaseException:
            self.store.close()
            raise

    async def evaluate(self, captured: CapturedRequest) -> SampleDiagnostics:
        sample = captured.sample()
        try:
            await self.store.aput_samples(self.run_id, [sample])
        except Exception as error:  # noqa: BLE001 - one request's failure is recorded; the worker goes on
            return SampleDiagnostics(run_id=self.run_id, sample_id=sample.id, question=sample.question,
                                     status=SampleStatus.FAILED, error=f"{type(error).__name__}: {error}")
        diagnostics = await self.runner.evaluate_one(self.graph, sample)
        assert diagnostics is not None, "live evaluation never interrupts (inline review is refused)"
        return diagnostics

    async def post_feedback(self, diagnostics: SampleDiagnostics) -> int | None:
        """Feedback items posted for `diagnostics`; None when LangSmith did not take them (logged)."""
        assert self.feedback is not None
        try:
            return await asyncio.to_thread(self.feedback.post, diagnostics)
        except Exception:  # noqa: BLE001 - LangSmith down or refusing: the evaluation stands, the miss is counted
            logger.exception("live evaluation: LangSmith feedback on run %s failed", diagnostics.sample_id)
            return None

    def close(self) -> None:
        self.store.close()
