"""Verdict figures as LangSmith feedback on the traced runs of a LangChain app (live.evaluator's samples).

A live sample's id is the LangChain run id of its request (the root run), which is also the LangSmith run
and trace id when LangSmith tracing is on. Once the sample is scored, each of its figures is posted on that
run as one feedback (`langsmith.Client.create_feedback`): key `ragcourt.<metric>` (ragcourt.verifiableness,
ragcourt.c_prec@5, ...), the figure as the score (an n/a figure has no score: its reason is the comment),
and a comment with the counts behind it: the units it is computed over, those unscored, the checks escalated
to a person (so the figure's honesty counts travel with it). Source type `model`, with the ragcourt run and sample ids.

The client is built at the composition root (LiveEvaluator.start): `from_environment` posts to
$LANGSMITH_ENDPOINT (LangSmith's own default when unset) with LangSmith's key variables, and only while
LangSmith tracing is on ($LANGSMITH_TRACING): without traces there is no run to put feedback on.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Mapping
from typing import Any

from ragcourt.schema import MetricValue, SampleDiagnostics, SampleStatus

logger = logging.getLogger("ragcourt.live")

FEEDBACK_PREFIX = "ragcourt."
ENDPOINT_ENVS = ("LANGSMITH_ENDPOINT", "LANGCHAIN_ENDPOINT")  # LangSmith's own names, the first one set wins


def feedback_comment(metric: MetricValue) -> str:
    """`n=3, unscored=1, escalated=0`: the units the figure is computed over, those left out for a missing
    verdict and its escalated checks (schema.MetricValue); after the reason for a figure that is n/a."""
    counts = f"n={metric.n}, unscored={metric.n_unscored}, escalated={metric.n_escalated}"
    return counts if metric.value is not None else f"n/a: {metric.na_reason}; {counts}"


def traced_run_id(sample_id: str) -> uuid.UUID | None:
    """The LangChain run a live sample came from; None for an id that is not a run id (LiveEvaluator.submit)."""
    try:
        return uuid.UUID(sample_id)
    except ValueError:
        return None


class LangSmithFeedback:
    """Posts a scored live sample's figures on its LangSmith run through `client` (a langsmith.Client).

    `project_name`: the project the app's runs are traced to, looked up once for its id (feedback names the
    run's project; without it LangSmith warns that run feedback must name one)."""

    def __init__(self, client: Any, *, project_name: str | None = None) -> None:
        self.client, self.project_name = client, project_name
        self._project_id: uuid.UUID | None = None

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> LangSmithFeedback | None:
        """Feedback to the endpoint of the environment while LangSmith tracing is on; None when it is off."""
        from langsmith import Client
        from langsmith.utils import get_tracer_project, tracing_is_enabled

        if not tracing_is_enabled():
            return None
        environ = os.environ if environ is None else environ
        endpoint = next((environ[name] for name in ENDPOINT_ENVS if environ.get(name)), None)
        return cls(Client(api_url=endpoint), project_name=get_tracer_project())

    def post(self, diagnostics: SampleDiagnostics) -> int:
        """Post the sample's figures on its run (blocking HTTP: call it off the event loop); how many were
        posted. A failed sample, or one that is no traced run, posts none. Raises what the client raises."""
        run_id = traced_run_id(diagnostics.sample_id)
        if run_id is None or diagnostics.status is not SampleStatus.OK:
            return 0
        session_id = self._session_id()
        for metric in diagnostics.metrics:
            self.client.create_feedback(
                run_id=run_id, trace_id=run_id, session_id=session_id, key=f"{FEEDBACK_PREFIX}{metric.name}",
                score=metric.value, comment=feedback_comment(metric), feedback_source_type="model",
                source_info={"ragcourt_run_id": diagnostics.run_id, "ragcourt_sample_id": diagnostics.sample_id},
                # posted as it is, never queued with traces, and without changing the run's retention
                extend_trace_retention=False,
            )
        return len(diagnostics.metrics)

    def _session_id(self) -> uuid.UUID | None:
        if self._project_id is None and self.project_name is not None:
            try:
                self._project_id = self.client.read_project(project_name=self.project_name).id
            except Exception as error:  # noqa: BLE001 - not there yet (traces are sent in the background): later
                logger.debug("LangSmith project %s not found yet: %s", self.project_name, error)
        return self._project_id
