"""OpenTelemetry spans of a run (observability/telemetry.py), captured by the SDK's InMemorySpanExporter, and the OTLP/HTTP
exporter posting them to a receiver on 127.0.0.1 (tests/fakes/otlp_receiver.py).

The run: examples/multi_turn.jsonl (2 samples, precomputed answers) with a scripted LLM decomposer (the question
as its one sub-query, the answer as its one claim) and a scripted LLM judge (every item linked to every target,
every yes/no item yes), per-kind batching: per sample 2 decomposer calls and 4 judge calls (chunks x sub-queries,
claims x chunks, claims x sub-queries, sufficiency), each one model call (no reply needs a repair).
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.otlp_receiver import OTLPReceiver
from fakes.scripted_model import ScriptedChatModel, ScriptedRequest
from fixtures import REPO
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from pydantic import BaseModel

from ragcourt.data.loaders import load_samples
from ragcourt.judging import LLMJudge
from ragcourt.judging.decomposers import LLMDecomposer
from ragcourt.llm.client import LLMClient
from ragcourt.llm.usage import UsageMeter
from ragcourt.nodes.state import EvalContext
from ragcourt.observability.telemetry import NO_TELEMETRY, Telemetry, traces_endpoint
from ragcourt.runs.runner import Runner
from ragcourt.schema import Sample
from ragcourt.schema.config import Batching, EvalConfig, JudgeSpec, Method
from ragcourt.stores.records import RecordStore
from ragcourt.systems import Precomputed

EXAMPLE = REPO / "examples" / "multi_turn.jsonl"
JUDGE = "scripted-judge"
_BLOCK = re.compile(r"(?:\[(\w+)\] (?:\([^)]*\) )?)?<<<([A-Z_]+)-([0-9a-f]+)>>>\n(.*?)\n<<<END-\2-\3>>>", re.DOTALL)
# Each node once, but the judge once per kind it is sent (4), and planning and reconciling twice: the
# sufficiency checks are planned from the first round's reconciled links.
NODE_SPANS_PER_SAMPLE = {"retrieve_perturb": 1, "answer": 1, "decompose_inputs": 1, "decompose_answers": 1,
                         "plan_checks": 2, "judge": 4, "reconcile": 2, "score": 1}


def blocks(request: ScriptedRequest) -> list[tuple[str | None, str, str]]:
    prompt = str(request.messages[-1].content)
    return [(m.group(1), m.group(2), m.group(4)) for m in _BLOCK.finditer(prompt)]


def prompt_tokens(request: ScriptedRequest) -> int:
    """What the scripted model counts: the characters of every message // 4."""
    return sum(len(str(m.content)) for m in request.messages) // 4


def scripted_models() -> tuple[ScriptedChatModel, ScriptedChatModel]:
    def labelled(request: ScriptedRequest, label: str) -> list[str]:
        return [text for _, block_label, text in blocks(request) if block_label == label]

    def links(request: ScriptedRequest) -> dict:
        found = blocks(request)
        targets = [shown for shown, label, _ in found if label == "TARGET"]
        return {"judgements": [{"item_id": shown, "reasoning": "all", "ids": targets}
                               for shown, label, _ in found if label == "ITEM"]}

    def binary(request: ScriptedRequest) -> dict:
        return {"judgements": [{"item_id": shown, "reasoning": "all", "verdict": "yes"}
                               for shown, label, _ in blocks(request) if label == "ITEM"]}

    decomposer = ScriptedChatModel(builders={
        "QueryDecomposition": lambda r: {"query_type": "single_focus", "sub_queries": labelled(r, "QUESTION")},
        "ClaimList": lambda r: {"claims": labelled(r, "ANSWER")}})
    judge = ScriptedChatModel(builders={"LinkJudgements": links, "BinaryJudgements": binary})
    return decomposer, judge


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RecordStore]:
    with RecordStore(tmp_path / "store.sqlite") as opened:
        yield opened


def context_of(store: RecordStore, usage: UsageMeter) -> tuple[EvalContext, ScriptedChatModel, ScriptedChatModel]:
    decomposer_model, judge_model = scripted_models()
    config = EvalConfig(judges=(JudgeSpec(model=JUDGE),), methods=(Method.QCARE,), batching=Batching.PER_KIND)
    judge = LLMJudge(LLMClient(judge_model, model_id="scripted:judge", usage=usage, cache=store), judge_id=JUDGE)
    decomposer = LLMDecomposer(LLMClient(decomposer_model, model_id="scripted:decomposer", role="decomposer",
                                         usage=usage, cache=store))
    context = EvalContext(config=config, system=Precomputed(), judges=[judge], decomposer=decomposer, store=store)
    return context, decomposer_model, judge_model


async def run_samples(store: RecordStore, run_dir: Path, telemetry: Telemetry) -> tuple[list, UsageMeter, list]:
    usage = UsageMeter()
    context, decomposer_model, judge_model = context_of(store, usage)
    runner = Runner(context, "run-otel", run_dir, telemetry=telemetry)
    diagnostics = [d async for d in runner.astream(list(load_samples(EXAMPLE).samples))]
    return diagnostics, usage, [*decomposer_model.requests, *judge_model.requests]


def figures(diagnostics: list) -> dict:
    return {d.sample_id: {m.name: m.value for m in d.metrics} for d in diagnostics}


async def test_a_run_of_two_samples_gives_one_span_per_sample_and_node_and_llm_call(store, tmp_path) -> None:
    exporter = InMemorySpanExporter()
    telemetry = Telemetry.exporting_to(exporter)
    diagnostics, usage, requests = await run_samples(store, tmp_path / "run", telemetry)
    spans = exporter.get_finished_spans()
    by_id = {span.context.span_id: span for span in spans}

    def parent(span):
        return by_id[span.parent.span_id] if span.parent is not None else None

    (run,) = [s for s in spans if s.name == "ragcourt.run"]
    assert run.parent is None and run.attributes["ragcourt.run_id"] == "run-otel"
    samples = {s.attributes["ragcourt.sample_id"]: s for s in spans if s.name == "ragcourt.sample"}
    assert sorted(samples) == ["mt1", "mt2"] and all(parent(s) is run for s in samples.values())
    assert all(s.context.trace_id == run.context.trace_id for s in spans)  # one trace for the run

    nodes = [s for s in spans if "ragcourt.node" in s.attributes]
    for sample_id, sample_span in samples.items():
        mine = [s for s in nodes if parent(s) is sample_span]
        names = Counter(s.name for s in mine)
        assert names == NODE_SPANS_PER_SAMPLE, sample_id
        assert sample_span.attributes["ragcourt.sample.status"] == "ok"
        assert sample_span.attributes["ragcourt.sample.n_unscored"] == 0
    assert len(nodes) == 2 * sum(NODE_SPANS_PER_SAMPLE.values())

    llm = [s for s in spans if s.attributes.get("gen_ai.operation.name") == "chat"]
    assert len(llm) == len(requests) == 2 * (2 + 4)
    for span in llm:
        role = span.attributes["ragcourt.llm.role"]
        assert parent(span).name in ({"decompose_inputs", "decompose_answers"} if role == "decomposer" else {"judge"})
        assert span.kind is SpanKind.CLIENT and span.status.status_code is StatusCode.UNSET
        assert span.name == f"chat {span.attributes['gen_ai.request.model']}"
        assert (span.attributes["gen_ai.provider.name"], span.attributes["gen_ai.request.model"]) == (
            "scripted", "judge" if role == "judge" else "decomposer")
        assert span.attributes["ragcourt.llm.cache_hit"] is False and span.attributes["ragcourt.llm.calls"] == 1
        assert span.end_time > span.start_time  # the call's latency is the span's duration
    # the tokens of each call, as the scripted model counted them for the messages it was sent
    assert sorted(s.attributes["gen_ai.usage.input_tokens"] for s in llm) == sorted(map(prompt_tokens, requests))
    total = usage.total()
    assert sum(s.attributes["gen_ai.usage.output_tokens"] for s in llm) == total.completion_tokens > 0
    assert sum(s.attributes["gen_ai.usage.input_tokens"] for s in llm) == total.prompt_tokens > 0

    # the figures are the run's own, with or without spans
    with RecordStore(tmp_path / "untraced.sqlite") as other:
        untraced, _, _ = await run_samples(other, tmp_path / "untraced", NO_TELEMETRY)
    assert figures(diagnostics) == figures(untraced)
    for d in diagnostics:
        for metric in d.metrics:
            if metric.value is not None:
                assert samples[d.sample_id].attributes[f"ragcourt.metric.{metric.name}"] == metric.value


class Verdict(BaseModel):
    label: str


async def test_an_llm_span_marks_cache_hits_and_failures(store) -> None:
    exporter = InMemorySpanExporter()
    telemetry = Telemetry.exporting_to(exporter)
    model = ScriptedChatModel(builders={"Verdict": lambda _: {"label": "yes"}}, script=[{"label": "yes"}])
    client = LLMClient(model, model_id="openai:qwen2.5-7b@http://127.0.0.1:8000/v1", cache=store)
    broken = LLMClient(ScriptedChatModel(script=["{not json", "still not json"]), model_id="scripted:broken")
    sample = Sample(id="q1", question="Is it?")
    with telemetry.sample_span("run-x", sample):
        first = await client.structured_call([], Verdict)
        second = await client.structured_call([], Verdict)
        failed = await broken.structured_call([], Verdict)
    assert (first.cached, second.cached, failed.ok) == (False, True, False)
    fresh, hit, parse = [s for s in exporter.get_finished_spans() if s.name.startswith("chat ")]
    assert (fresh.attributes["gen_ai.provider.name"], fresh.attributes["gen_ai.request.model"],
            fresh.attributes["server.address"], fresh.attributes["server.port"]) == ("openai", "qwen2.5-7b",
                                                                                    "127.0.0.1", 8000)
    assert fresh.attributes["gen_ai.usage.output_tokens"] == len(json.dumps({"label": "yes"})) // 4
    assert hit.attributes["ragcourt.llm.cache_hit"] is True
    assert (hit.attributes["gen_ai.usage.input_tokens"], hit.attributes["gen_ai.usage.output_tokens"]) == (0, 0)
    assert parse.status.status_code is StatusCode.ERROR and parse.attributes["error.type"] == "parse_failure"
    assert parse.attributes["ragcourt.llm.calls"] == 2  # the call and its repair, in one span
    (sample_span,) = [s for s in exporter.get_finished_spans() if s.name == "ragcourt.sample"]
    assert sample_span.parent is None  # no open run span (a live sample): a root
    assert {s.parent.span_id for s in (fresh, hit, parse)} == {sample_span.context.span_id}

    exporter.clear()  # outside a sample span nobody observes the call
    await client.structured_call([], Verdict)
    assert exporter.get_finished_spans() == ()


def test_the_endpoint_comes_from_the_option_then_the_environment() -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/"}
    assert traces_endpoint(None, {}) is None
    assert traces_endpoint(None, env) == "http://collector:4318/v1/traces"
    assert traces_endpoint("http://127.0.0.1:6006", env) == "http://127.0.0.1:6006/v1/traces"
    assert traces_endpoint("http://127.0.0.1:6006/v1/traces", env) == "http://127.0.0.1:6006/v1/traces"
    traces = {**env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://other:4318/custom"}
    assert traces_endpoint(None, traces) == "http://other:4318/custom"  # taken as it is, as the SDK does
    off = Telemetry.configured(None, {})
    assert off is NO_TELEMETRY and not off.enabled and off.wrap_node is None


def test_without_an_endpoint_ragcourt_imports_nothing_of_opentelemetry() -> None:
    """langsmith (under langchain-core) and chromadb import parts of opentelemetry themselves: what is checked is
    that the telemetry module, and a run's spans when none is configured, add none to theirs."""
    code = """
import sys
def otel(): return {m for m in sys.modules if m.startswith("opentelemetry")}
import langgraph.errors, ragcourt.llm.observer, ragcourt.schema
before = otel()
import ragcourt.observability.telemetry as t
from ragcourt.schema import Sample
off = t.Telemetry.configured(None, {})
with off.run_span("r"), off.sample_span("r", Sample(id="s", question="q")) as trace:
    trace.record(None)
print(sorted(otel() - before), off.wrap_node)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO.parent)
    assert out.stdout.strip() == "[] None"


@pytest.fixture
def receiver() -> Iterator[OTLPReceiver]:
    with OTLPReceiver() as started:
        yield started


async def test_the_otlp_exporter_posts_the_runs_spans_to_the_configured_endpoint(store, tmp_path, receiver) -> None:
    telemetry = Telemetry.configured(None, {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url})
    await run_samples(store, tmp_path / "run", telemetry)
    await asyncio.to_thread(telemetry.shutdown)  # flushes the batch
    assert receiver.posted
    assert {(p.path, p.content_type) for p in receiver.posted} == {("/v1/traces", "application/x-protobuf")}
    names = Counter(span.name for span in receiver.spans())
    assert (names["ragcourt.run"], names["ragcourt.sample"], names["judge"], names["chat judge"]) == (1, 2, 8, 8)
    resource = receiver.requests()[0].resource_spans[0].resource
    assert {a.key: a.value.string_value for a in resource.attributes}["service.name"] == "ragcourt"
