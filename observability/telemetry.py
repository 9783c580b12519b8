"""OpenTelemetry spans of a run, exported over OTLP/HTTP to Phoenix, Langfuse or any OTel backend.

The spans: one `ragcourt.run` per run (Runner.astream), one `ragcourt.sample` per evaluated sample under it,
one per graph node under its sample (named as the node: retrieve_perturb, answer, decompose_inputs, judge,
reconcile, score...), and one per LLM call under the node that made it, with the GenAI semantic conventions
(`chat <model>`: gen_ai.operation.name, gen_ai.provider.name, gen_ai.request.model, gen_ai.usage.input_tokens
/ output_tokens; its duration is the call's latency, repair and retries included; an unscored call has error
status and error.type = the unscored reason; a cache hit is `ragcourt.llm.cache_hit` with no tokens). The
OpenInference names Phoenix reads (openinference.span.kind, llm.token_count.*) are set beside them.

Configured at the composition root (`ragcourt run --otlp-endpoint`, `telemetry: {otlp_endpoint: URL}` in the
configuration, else the standard OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT, read when
a run is built, never at import): `Telemetry.configured(...)`. Without an endpoint a run gets `NO_TELEMETRY`:
no span, no wrapper around the nodes, nothing of opentelemetry imported (it is the optional extra `otel`).
Headers (a Langfuse key) and the service name come from the exporter's own variables
(OTEL_EXPORTER_OTLP_HEADERS, OTEL_SERVICE_NAME).
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from langgraph.errors import GraphBubbleUp
from pydantic import BaseModel

from ragcourt.llm.client import CALL_OBSERVER
from ragcourt.llm.observer import model_identity
from ragcourt.schema import Sample, SampleDiagnostics

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.trace import Span

    from ragcourt.llm.client import LLMClient, StructuredResult

ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_ENDPOINT"  # the collector's base URL: /v1/traces is added, as the SDK does
TRACES_ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"  # the traces URL itself, taken as it is
SERVICE_NAME_ENV = "OTEL_SERVICE_NAME"
TRACES_PATH = "/v1/traces"
SERVICE_NAME = "ragcourt"
TRACER_NAME = "ragcourt"
INSTALL_HINT = "exporting spans needs the extra `otel`: pip install 'ragcourt[otel]'"


class TelemetryUnavailableError(RuntimeError):
    """An endpoint is configured but the OpenTelemetry packages are not installed."""


def traces_endpoint(configured: str | None, environ: Mapping[str, str]) -> str | None:
    """The OTLP/HTTP traces URL: `configured` (a collector's base URL, or its .../v1/traces), else the
    standard environment variables; None when nothing is configured."""
    if configured:
        return _with_traces_path(configured)
    if environ.get(TRACES_ENDPOINT_ENV):
        return environ[TRACES_ENDPOINT_ENV]
    if environ.get(ENDPOINT_ENV):
        return _with_traces_path(environ[ENDPOINT_ENV])
    return None


def _with_traces_path(base: str) -> str:
    base = base.rstrip("/")
    return base if base.endswith(TRACES_PATH) else base + TRACES_PATH


class SampleTrace:
    """What a sample's span is told when the graph returns: its figures and honesty counts."""

    def __init__(self, span: Span | None = None) -> None:
        self._span = span

    def record(self, diagnostics: SampleDiagnostics | None) -> None:
        if self._span is None:
            return
        if diagnostics is None:  # stopped at an inline-review interrupt: resumed later, in another span
            self._span.set_attribute("ragcourt.sample.interrupted", True)
            return
        self._span.set_attributes({
            "ragcourt.sample.status": str(diagnostics.status), "ragcourt.sample.n_checks": diagnostics.n_checks,
            "ragcourt.sample.n_unscored": diagnostics.n_unscored,
            "ragcourt.sample.n_escalated": len(diagnostics.escalations),
        })
        for metric in diagnostics.metrics:  # n/a figures are left out: an attribute is a number or absent
            if metric.value is not None:
                self._span.set_attribute(f"ragcourt.metric.{metric.name}", metric.value)


UNTRACED = SampleTrace()


class Telemetry:
    """The spans of runs, made by `provider` (None: no spans). Build it with `configured`, `otlp` or
    `exporting_to`; `shutdown()` sends what is buffered and stops a provider this object made."""

    def __init__(self, provider: TracerProvider | None = None, *, owned: bool = False) -> None:
        self._provider, self._owned = provider, owned
        self._runs: dict[str, Context] = {}  # run id -> the context of its open run span
        if provider is not None:
            from opentelemetry import trace

            self._trace = trace
            self._tracer = provider.get_tracer(TRACER_NAME)

    @property
    def enabled(self) -> bool:
        return self._provider is not None

    @classmethod
    def configured(cls, otlp_endpoint: str | None = None, environ: Mapping[str, str] | None = None) -> Telemetry:
        """OTLP export to `otlp_endpoint` or the endpoint of the environment; NO_TELEMETRY when neither is set."""
        endpoint = traces_endpoint(otlp_endpoint, os.environ if environ is None else environ)
        return cls.otlp(endpoint, environ) if endpoint else NO_TELEMETRY

    @classmethod
    def otlp(cls, endpoint: str, environ: Mapping[str, str] | None = None) -> Telemetry:
        """Spans batched to the OTLP/HTTP traces URL `endpoint` (protobuf, the exporter's standard one)."""
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
        except ImportError as error:
            raise TelemetryUnavailableError(f"{INSTALL_HINT} ({error})") from None
        provider = _provider(os.environ if environ is None else environ)
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
        return cls(provider, owned=True)

    @classmethod
    def exporting_to(cls, exporter: SpanExporter) -> Telemetry:
        """Every span handed to `exporter` as it ends (an InMemorySpanExporter, a console exporter...)."""
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor

        provider = _provider(os.environ)
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        return cls(provider, owned=True)

    def shutdown(self) -> None:
        if self._provider is not None and self._owned:
            self._provider.shutdown()  # flushes the batch first

    # ------------------------------------------------------------------ runs, samples, nodes

    @contextlib.contextmanager
    def run_span(self, run_id: str, *, dataset: str = "", system: str = "") -> Iterator[None]:
        """The run's span, parent of its samples' spans. Not made current: it is held across the yields of
        Runner.astream, whose consumer may resume it in another context."""
        if self._provider is None:
            yield
            return
        span = self._tracer.start_span("ragcourt.run", attributes={
            "ragcourt.run_id": run_id, "ragcourt.dataset": dataset, "ragcourt.system": system,
            "openinference.span.kind": "CHAIN",
        })
        self._runs[run_id] = self._trace.set_span_in_context(span)
        try:
            yield
        except Exception as error:
            _failed(span, error)
            raise
        finally:
            self._runs.pop(run_id, None)
            span.end()

    @contextlib.contextmanager
    def sample_span(self, run_id: str, sample: Sample) -> Iterator[SampleTrace]:
        """A sample's span, current while its graph runs (so nodes and LLM calls nest under it), under the
        open run span of `run_id` if any (a live sample has none: its span is a root)."""
        if self._provider is None:
            yield UNTRACED
            return
        with self._tracer.start_as_current_span("ragcourt.sample", context=self._runs.get(run_id), attributes={
            "ragcourt.run_id": run_id, "ragcourt.sample_id": sample.id, "openinference.span.kind": "CHAIN",
        }) as span:
            token = CALL_OBSERVER.set(self)
            try:
                yield SampleTrace(span)
            finally:
                CALL_OBSERVER.reset(token)

    @property
    def wrap_node(self) -> Callable[[str, Any], Any] | None:
        """For graphs.sample.build_sample_graph: a span around each node; None (nodes as they are) when off."""
        return None if self._provider is None else self._traced_node

    def _traced_node(self, name: str, node: Callable[..., Any]) -> Callable[..., Any]:
        tracer = self._tracer

        # wraps keeps the signature LangGraph reads to inject `runtime`, and the input type it infers.
        @functools.wraps(node)
        async def traced(*args: Any, **kwargs: Any) -> Any:
            with tracer.start_as_current_span(name, attributes={
                "ragcourt.node": name, "openinference.span.kind": "CHAIN",
            }, record_exception=False, set_status_on_exception=False) as span:
                try:
                    return await node(*args, **kwargs)
                except GraphBubbleUp:  # an inline-review interrupt (or a command): not a failure
                    span.set_attribute("ragcourt.node.interrupted", True)
                    raise
                except Exception as error:
                    _failed(span, error)
                    raise

        return traced

    # ------------------------------------------------------------------ LLM calls (llm.client.CallObserver)

    @contextlib.contextmanager
    def llm_call(self, client: LLMClient, schema: type[BaseModel]) -> Iterator[Callable[[StructuredResult[Any]], None]]:
        identity = model_identity(client.model_id)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat", "gen_ai.provider.name": identity.provider,
            "gen_ai.system": identity.provider,  # the name before semantic conventions 1.37, still read by many
            "gen_ai.request.model": identity.model, "gen_ai.output.type": "json",
            "ragcourt.llm.model_id": client.model_id, "ragcourt.llm.role": client.role,
            "ragcourt.llm.schema": schema.__name__, "ragcourt.llm.method": str(client.method),
            "openinference.span.kind": "LLM", "llm.model_name": identity.model,
        }
        if identity.server_address is not None:
            attributes["server.address"] = identity.server_address
        if identity.server_port is not None:
            attributes["server.port"] = identity.server_port
        for param, key in (("temperature", "gen_ai.request.temperature"), ("max_tokens", "gen_ai.request.max_tokens")):
            if client.params.get(param) is not None:
                attributes[key] = client.params[param]
        with self._tracer.start_as_current_span(f"chat {identity.model}", kind=self._trace.SpanKind.CLIENT,
                                                attributes=attributes) as span:
            yield functools.partial(self._llm_result, span)

    def _llm_result(self, span: Span, result: StructuredResult[Any]) -> None:
        usage = result.usage
        span.set_attributes({
            "gen_ai.usage.input_tokens": usage.prompt_tokens, "gen_ai.usage.output_tokens": usage.completion_tokens,
            "llm.token_count.prompt": usage.prompt_tokens, "llm.token_count.completion": usage.completion_tokens,
            "llm.token_count.total": usage.prompt_tokens + usage.completion_tokens,
            "ragcourt.llm.cache_hit": result.cached, "ragcourt.llm.calls": usage.calls,
            "ragcourt.llm.cached_calls": usage.cached_calls, "ragcourt.llm.attempts": result.attempts,
        })
        if not result.ok:
            reason = str(result.reason) if result.reason is not None else "unscored"
            span.set_attributes({"error.type": reason, "ragcourt.llm.unscored_reason": reason})
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, result.detail or reason))


NO_TELEMETRY = Telemetry()


def _provider(environ: Mapping[str, str]) -> TracerProvider:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider

    # OTEL_SERVICE_NAME, when set, names the service (Resource.create reads it); ragcourt otherwise.
    return TracerProvider(resource=Resource.create({} if environ.get(SERVICE_NAME_ENV) else {"service.name": SERVICE_NAME}))


def _failed(span: Span, error: BaseException) -> None:
    from opentelemetry.trace import Status, StatusCode

    span.record_exception(error)
    span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))
