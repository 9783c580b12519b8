"""Verdict figures as LangSmith feedback (observability/langsmith_feedback.py) on the traced runs of the example LangChain
app, posted by the live evaluator to a fake of the LangSmith API on 127.0.0.1 (never the network).

The app is traced to the fake by LangChain's own LangSmith tracer; the fake records every request, so each
feedback is checked against the root runs the tracer posted, and against the figures the evaluator produced.
"""

from __future__ import annotations

import json
import sys
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import langsmith.utils
import pytest
from fakes.openai_server import FakeOpenAIServer
from fixtures import REPO
from langchain_core.tracers import LangChainTracer
from langsmith import Client

sys.path.insert(0, str(REPO / "tests" / "scenarios" / "live"))
from live_helpers import example_app, example_store, first_context_sentence, judge_builders

from ragcourt.live.evaluator import LiveEvaluator, live_config
from ragcourt.observability.langsmith_feedback import LangSmithFeedback, feedback_comment
from ragcourt.schema import SampleDiagnostics, SampleStatus
from ragcourt.schema.config import Batching, JudgeSpec

PROJECT_ID, TENANT_ID = uuid.UUID(int=7), uuid.UUID(int=8)
QUESTIONS = ["How long is the warranty?", "How much water does the kettle hold?", "Can I return a kettle?"]


@dataclass
class FakeLangSmith:
    """POST /feedback and /runs* bodies recorded; GET /info and /sessions?name= answered; `feedback_status`
    is what /feedback answers."""

    feedback: list[dict] = field(default_factory=list)
    run_bodies: list[bytes] = field(default_factory=list)
    feedback_status: int = 200
    url: str = ""


@pytest.fixture
def langsmith_api() -> Iterator[FakeLangSmith]:
    fake = FakeLangSmith()

    class Handler(BaseHTTPRequestHandler):
        def reply(self, status: int, body: object) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            url = urlsplit(self.path)
            if url.path == "/sessions":
                name = parse_qs(url.query)["name"][0]
                self.reply(200, [{"id": str(PROJECT_ID), "name": name, "tenant_id": str(TENANT_ID),
                                  "reference_dataset_id": None}])
            else:
                self.reply(200, {})  # /info: a server without optional features

        def do_POST(self) -> None:  # noqa: N802
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path == "/feedback":
                if fake.feedback_status == 200:
                    fake.feedback.append(json.loads(body))
                self.reply(fake.feedback_status, {})
            else:
                fake.run_bodies.append(body)
                self.reply(202, {})

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()


def serve_traced(fake: FakeLangSmith, openai_server: FakeOpenAIServer, tmp_path,
                 ) -> tuple[list[SampleDiagnostics], LiveEvaluator, list[str]]:
    """The example app answers QUESTIONS traced to the fake LangSmith, the live evaluator attached (every
    request sampled); returns the diagnostics, the evaluator (closed) and the run ids the app returned."""
    openai_server.responder = first_context_sentence
    app = example_app.build_app(example_app.build_retriever(example_store()),
                                example_app.build_llm(openai_server.base_url, "fake-model"))
    client = Client(api_url=fake.url, api_key="test-key")
    tracer = LangChainTracer(client=client, project_name="kettle-app")
    results: list[SampleDiagnostics] = []
    with FakeOpenAIServer(builders=judge_builders("yes")) as judge:
        config = live_config(judges=(JudgeSpec(model=f"openai:fake-model@{judge.base_url}", id="judge"),),
                             batching=Batching.PER_KIND)  # the schemas the fake judge answers
        live = LiveEvaluator(home=tmp_path, run_id="live", config=config, sample_rate=1.0, on_result=results.append,
                             langsmith_feedback=LangSmithFeedback(client, project_name="kettle-app"))
        with live:
            for question in QUESTIONS:
                app.invoke(question, config={"callbacks": [tracer, live.handler]})
            assert live.flush(timeout=60)
    tracer.wait_for_futures()
    client.flush()
    return results, live, [d.sample_id for d in results]


def test_each_figure_of_a_live_request_is_feedback_on_its_traced_run(langsmith_api, openai_server, tmp_path) -> None:
    results, live, run_ids = serve_traced(langsmith_api, openai_server, tmp_path)
    assert len(results) == len(QUESTIONS) and all(d.status is SampleStatus.OK for d in results)
    traced = b"".join(langsmith_api.run_bodies)
    assert all(run_id.encode() in traced for run_id in run_ids)  # the ids are those of the app's traced runs

    expected = {(d.sample_id, f"ragcourt.{m.name}"): m for d in results for m in d.metrics}
    assert {m.name for d in results for m in d.metrics} == {
        "c_prec", "c_ndcg", "completeness", "conciseness", "verifiableness"}
    posted = {(body["run_id"], body["key"]): body for body in langsmith_api.feedback}
    assert len(langsmith_api.feedback) == len(posted) == len(expected) == 5 * len(QUESTIONS)
    assert posted.keys() == expected.keys()
    for key, body in posted.items():
        metric = expected[key]
        assert body.get("score") == metric.value and body["comment"] == feedback_comment(metric)
        assert body["trace_id"] == body["run_id"] and body["session_id"] == str(PROJECT_ID)
        assert body["feedback_source"]["type"] == "model"
        assert body["feedback_source"]["metadata"] == {"ragcourt_run_id": "live", "ragcourt_sample_id": key[0]}
    # the agreeable judge scores every check and none escalates: every figure has a value and zero counts
    assert all(body["score"] is not None and body["comment"].endswith(", unscored=0, escalated=0")
               for body in posted.values())
    counts = live.counts()
    assert (counts.feedback_posted, counts.feedback_errors, counts.evaluated) == (len(posted), 0, len(QUESTIONS))


def test_a_refused_feedback_is_counted_and_the_evaluation_stands(langsmith_api, openai_server, tmp_path) -> None:
    langsmith_api.feedback_status = 403
    results, live, _ = serve_traced(langsmith_api, openai_server, tmp_path)
    counts = live.counts()
    assert (counts.evaluated, counts.feedback_errors, counts.feedback_posted) == (len(QUESTIONS), len(QUESTIONS), 0)
    assert len(results) == len(QUESTIONS) and counts.accounted


def test_an_na_figure_is_feedback_without_a_score_and_with_its_reason() -> None:
    from ragcourt.schema import MetricValue

    metric = MetricValue(name="c_prec", value=None, na_reason="the retrieved chunks are unknown: no retriever run",
                         n=0)
    assert feedback_comment(metric) == (
        "n/a: the retrieved chunks are unknown: no retriever run; n=0, unscored=0, escalated=0")
    assert feedback_comment(MetricValue(name="completeness", value=0.5, n=4, n_unscored=1, n_escalated=2)) == (
        "n=4, unscored=1, escalated=2")


@pytest.fixture
def fresh_langsmith_env(monkeypatch) -> Iterator[pytest.MonkeyPatch]:
    """langsmith caches what it reads of the environment: cleared around the test that changes it."""
    for name in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGCHAIN_TRACING", "LANGSMITH_ENDPOINT",
                 "LANGCHAIN_ENDPOINT", "LANGSMITH_PROJECT", "LANGCHAIN_PROJECT"):
        monkeypatch.delenv(name, raising=False)
    langsmith.utils.get_env_var.cache_clear()
    langsmith.utils.get_tracer_project.cache_clear()
    yield monkeypatch
    monkeypatch.undo()
    langsmith.utils.get_env_var.cache_clear()
    langsmith.utils.get_tracer_project.cache_clear()


def test_feedback_goes_to_the_environments_endpoint_only_while_tracing_is_on(fresh_langsmith_env) -> None:
    assert LangSmithFeedback.from_environment() is None
    fresh_langsmith_env.setenv("LANGSMITH_TRACING", "true")
    fresh_langsmith_env.setenv("LANGSMITH_ENDPOINT", "http://127.0.0.1:9")
    fresh_langsmith_env.setenv("LANGSMITH_API_KEY", "test-key")
    fresh_langsmith_env.setenv("LANGSMITH_PROJECT", "kettle-app")
    langsmith.utils.get_env_var.cache_clear()
    langsmith.utils.get_tracer_project.cache_clear()
    feedback = LangSmithFeedback.from_environment()
    assert feedback is not None
    assert (feedback.client.api_url, feedback.project_name) == ("http://127.0.0.1:9", "kettle-app")
