"""What evaluates a captured live request: the run's store, models, graph and runner, in whichever process
evaluates (the worker process of live.process, or the app's own one with `worker="thread"`)."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ragcourt.graphs.sample import build_sample_graph
from ragcourt.observability.langsmith_feedback import LangSmithFeedback
from ragcourt.observability.telemetry import Telemetry
from ragcourt.runs.models import Models, eval_context
from ragcourt.runs.runner import Runner
from ragcourt.runs.workspace import Workspace
from ragcourt.schema import Sample, SampleDiagnostics
from ragcourt.schema.config import EvalConfig
from ragcourt.schema.inputs import refusal
from ragcourt.systems import DocumentParts, Precomputed, chunks_from_parts

logger = logging.getLogger("ragcourt.live")


@dataclass(frozen=True)
class CapturedRequest:
    """One sampled request as the app's thread read it: plain values (systems.document_parts), so the app pays
    for no validation, hashing or model pickling; the Chunks are built where it is evaluated (`sample`)."""

    request_id: str
    question: str
    documents: tuple[DocumentParts, ...]
    answer: str

    def sample(self) -> Sample:
        return Sample(id=self.request_id, question=self.question, contexts=tuple(chunks_from_parts(self.documents)),
                      answer=self.answer, metadata={"source": "live"})

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled in the app's thread that finished the request (live.process): positional fields, no state dict.
        return (CapturedRequest, (self.request_id, self.question, self.documents, self.answer))


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
        try:  # a document the app returned may make no Chunk: validated here, not in the app's thread
            sample = captured.sample()
            await self.store.aput_samples(self.run_id, [sample])
        except ValidationError as error:  # refused as a file's row is, in the same words (schema.inputs)
            return await self.runner.record_failure(captured.request_id, captured.question,
                                                    ValueError(f"refused: {refusal(error)}"))
        except Exception as error:  # noqa: BLE001 - one request's failure is recorded; the worker goes on
            return await self.runner.record_failure(captured.request_id, captured.question, error)
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
