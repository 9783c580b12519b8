"""LLMClient through the real ChatOpenAI against FakeOpenAIServer on 127.0.0.1: counts are the server's."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from fakes.openai_server import (
    CHAT_PATH,
    ChatRequest,
    FakeOpenAIServer,
    FaultPlan,
    Reply,
    connection_reset,
    delay,
    garbage_body,
    malformed_json,
    not_a_completion,
    status_429,
    status_500,
    truncated,
    truncated_body,
)
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_openai import ChatOpenAI
from langsmith import tracing_context
from pydantic import BaseModel

from ragcourt.llm import openai_wire
from ragcourt.llm.cache import LLMCache, MemoryCache
from ragcourt.llm.client import LLMClient
from ragcourt.llm.factory import build_client
from ragcourt.llm.limits import EndpointLimiter
from ragcourt.llm.openai_wire import is_direct
from ragcourt.llm.retry import RetryPolicy
from ragcourt.llm.sent_schema import sent_schema
from ragcourt.llm.spec import ModelSpec, StructuredMethod
from ragcourt.llm.usage import UsageMeter
from ragcourt.schema import TokenUsage, UnscoredReason, VerdictStatus

FAST_RETRY = RetryPolicy(max_attempts=4, base_delay_s=0.001, max_delay_s=0.01, jitter=0.0)
QUESTION = [HumanMessage(content="Is the sky blue?")]  # 16 characters: 4 prompt tokens at the server
ANSWER = {"label": "yes", "reason": "ok"}  # json.dumps: 32 characters, 8 completion tokens


class Decision(BaseModel):
    """Whether the statement holds."""

    label: str
    reason: str


def answer_yes(request: ChatRequest) -> dict[str, str]:
    return dict(ANSWER)


def client_for(
    server: FakeOpenAIServer,
    method: StructuredMethod = StructuredMethod.FUNCTION_CALLING,
    *,
    retry: RetryPolicy = FAST_RETRY,
    timeout_s: float = 10.0,
    **kwargs: object,
) -> LLMClient:
    spec = ModelSpec.parse(f"openai:fake-model@{server.base_url}", method=method)
    return build_client(spec, retry=retry, timeout_s=timeout_s, **kwargs)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- the three methods


async def test_function_calling_end_to_end(openai_server: FakeOpenAIServer) -> None:
    openai_server.builders["Decision"] = answer_yes
    result = await client_for(openai_server, StructuredMethod.FUNCTION_CALLING).structured_call(
        QUESTION, Decision
    )

    assert result.status is VerdictStatus.OK
    assert result.value == Decision(label="yes", reason="ok")
    assert result.raw_text == '{"label": "yes", "reason": "ok"}'
    assert (result.attempts, result.cached) == (1, False)
    body = openai_server.requests[0].body
    assert body is not None
    assert body["tools"][0]["function"]["name"] == "Decision"
    assert set(body["tools"][0]["function"]["parameters"]["properties"]) == {"label", "reason"}
    assert body["tool_choice"] == {"type": "function", "function": {"name": "Decision"}}
    assert "response_format" not in body
    assert openai_server.count(CHAT_PATH) == 1


async def test_json_schema_end_to_end(openai_server: FakeOpenAIServer) -> None:
    openai_server.builders["Decision"] = answer_yes
    result = await client_for(openai_server, StructuredMethod.JSON_SCHEMA).structured_call(QUESTION, Decision)

    assert result.status is VerdictStatus.OK
    assert result.value == Decision(label="yes", reason="ok")
    body = openai_server.requests[0].body
    assert body is not None
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["name"] == "Decision"
    # The compacted schema (sent_schema.compact_schema): the property titles pydantic adds are not sent.
    assert body["response_format"]["json_schema"]["schema"] == sent_schema(Decision)
    assert body["response_format"]["json_schema"]["schema"]["properties"] == {
        "label": {"type": "string"}, "reason": {"type": "string"}}
    assert "tools" not in body
    assert openai_server.count(CHAT_PATH) == 1


async def test_json_mode_end_to_end_puts_the_schema_in_the_system_message(
    openai_server: FakeOpenAIServer,
) -> None:
    openai_server.builders["Decision"] = answer_yes
    messages = [SystemMessage(content="You are a careful judge."), *QUESTION]
    result = await client_for(openai_server, StructuredMethod.JSON_MODE).structured_call(messages, Decision)

    assert result.status is VerdictStatus.OK
    assert result.value == Decision(label="yes", reason="ok")
    body = openai_server.requests[0].body
    assert body is not None
    assert body["response_format"] == {"type": "json_object"}
    system = body["messages"][0]
    assert system["role"] == "system"
    assert system["content"].startswith("You are a careful judge.\n\n")
    assert json.dumps(sent_schema(Decision), ensure_ascii=False, separators=(",", ":")) in system["content"]
    assert [m["role"] for m in body["messages"]] == ["system", "user"]  # merged, not a second system message


@pytest.mark.parametrize(
    ("method", "logprobs"),
    [(StructuredMethod.FUNCTION_CALLING, False), (StructuredMethod.JSON_SCHEMA, False),
     (StructuredMethod.JSON_MODE, False), (StructuredMethod.FUNCTION_CALLING, True)],
)
async def test_the_direct_path_sends_what_chatopenai_itself_sends(
    openai_server: FakeOpenAIServer, method: StructuredMethod, logprobs: bool
) -> None:
    """The client posts ChatOpenAI's own request body with the openai client it holds (no LangChain
    callback layer); the body must be byte for byte what ChatOpenAI.ainvoke sends for the same call."""
    openai_server.builders["Decision"] = answer_yes
    client = client_for(openai_server, method, max_tokens=64, temperature=0.0, logprobs=logprobs,
                        top_logprobs=2 if logprobs else None)
    messages = [SystemMessage(content="You are a careful judge."), *QUESTION]
    result = await client.structured_call(messages, Decision)
    assert result.status is VerdictStatus.OK

    sent = messages if method is not StructuredMethod.JSON_MODE else openai_server.requests[0].body["messages"]
    from_langchain = [SystemMessage(content=sent[0]["content"]), *QUESTION] if isinstance(sent[0], dict) else sent
    await client.model.bind(**client._request_kwargs(Decision)).ainvoke(from_langchain)

    direct, through_langchain = (r.body for r in openai_server.requests)
    through_langchain.pop("stream", None)
    assert direct == through_langchain
    assert direct["max_completion_tokens"] == 64
    assert ("logprobs" in direct) is logprobs


# --------------------------------------------------------------------------- cache


async def test_cache_answers_a_repeated_call_with_no_http_request(openai_server: FakeOpenAIServer) -> None:
    openai_server.builders["Decision"] = answer_yes
    cache = MemoryCache()
    client = client_for(openai_server, cache=cache)

    first = await client.structured_call(QUESTION, Decision)
    assert openai_server.count() == 1
    second = await client.structured_call(QUESTION, Decision)

    assert openai_server.count() == 1  # unchanged: no request reached the server
    assert (second.cached, second.attempts) == (True, 0)
    assert second.value == first.value == Decision(label="yes", reason="ok")
    assert second.raw_text == first.raw_text
    assert second.usage == TokenUsage(cached_calls=1)
    assert cache.hits == 1


class DictBackedStore:
    """What the SQLite record store does, reduced to the two async methods of the protocol."""

    def __init__(self) -> None:
        self.rows: dict[str, str] = {}
        self.gets = 0

    async def acache_get(self, key: str) -> str | None:
        self.gets += 1
        return self.rows.get(key)

    async def acache_put(self, key: str, value: str) -> None:
        self.rows[key] = value


async def test_any_object_with_async_cache_get_and_put_is_a_cache(openai_server: FakeOpenAIServer) -> None:
    openai_server.builders["Decision"] = answer_yes
    store = DictBackedStore()
    assert isinstance(store, LLMCache)
    client = client_for(openai_server, cache=store)

    await client.structured_call(QUESTION, Decision)
    again = await client.structured_call(QUESTION, Decision)

    assert openai_server.count() == 1
    assert again.cached and again.value == Decision(label="yes", reason="ok")
    assert list(store.rows) == [client.cache_key(QUESTION, Decision)]
    assert store.gets == 2


async def test_a_changed_message_misses_the_cache(openai_server: FakeOpenAIServer) -> None:
    openai_server.builders["Decision"] = answer_yes
    client = client_for(openai_server, cache=MemoryCache())
    await client.structured_call(QUESTION, Decision)
    await client.structured_call([HumanMessage(content="Is grass green?")], Decision)
    assert openai_server.count() == 2


async def test_parse_failure_after_repair_is_cached_and_not_repeated(openai_server: FakeOpenAIServer) -> None:
    openai_server.builders["Decision"] = answer_yes
    openai_server.faults.then(malformed_json(), malformed_json())
    client = client_for(openai_server, cache=MemoryCache())

    first = await client.structured_call(QUESTION, Decision)
    assert (first.reason, openai_server.count()) == (UnscoredReason.PARSE_FAILURE, 2)
    again = await client.structured_call(QUESTION, Decision)

    assert openai_server.count() == 2
    assert (again.status, again.reason, again.cached) == (
        VerdictStatus.UNSCORED,
        UnscoredReason.PARSE_FAILURE,
        True,
    )
    assert again.raw_text == first.raw_text == '{"broken": tru'
    assert again.usage == TokenUsage(cached_calls=2)


async def test_transport_errors_are_not_cached(openai_server: FakeOpenAIServer) -> None:
    openai_server.builders["Decision"] = answer_yes
    openai_server.faults.then(status_500(), status_500())
    client = client_for(
        openai_server, cache=MemoryCache(), retry=FAST_RETRY.model_copy(update={"max_attempts": 2})
    )

    failed = await client.structured_call(QUESTION, Decision)
    assert (failed.reason, openai_server.count()) == (UnscoredReason.ERROR, 2)
    recovered = await client.structured_call(QUESTION, Decision)

    assert recovered.status is VerdictStatus.OK
    assert (recovered.cached, recovered.attempts, openai_server.count()) == (False, 1, 3)


async def test_a_rerun_repeats_only_the_repair_call_that_failed(openai_server: FakeOpenAIServer) -> None:
    openai_server.builders["Decision"] = answer_yes
    openai_server.faults.then(malformed_json(), status_500(), status_500())
    client = client_for(
        openai_server, cache=MemoryCache(), retry=FAST_RETRY.model_copy(update={"max_attempts": 2})
    )

    interrupted = await client.structured_call(QUESTION, Decision)
    assert (interrupted.reason, interrupted.attempts, openai_server.count()) == (UnscoredReason.ERROR, 3, 3)
    rerun = await client.structured_call(QUESTION, Decision)

    # The malformed first answer comes from the cache; only the repair call goes over HTTP again.
    assert openai_server.count() == 4
    assert rerun.status is VerdictStatus.OK
    assert (rerun.cached, rerun.attempts) == (False, 1)
    assert (rerun.usage.calls, rerun.usage.cached_calls) == (1, 1)


# --------------------------------------------------------------------------- retries


async def test_429_with_retry_after_is_retried_after_the_asked_wait(openai_server: FakeOpenAIServer) -> None:
    openai_server.builders["Decision"] = answer_yes
    openai_server.faults.at(1, status_429(retry_after=0.2))
    client = client_for(openai_server)

    started = time.perf_counter()
    result = await client.structured_call(QUESTION, Decision)
    elapsed = time.perf_counter() - started

    assert result.status is VerdictStatus.OK
    assert (result.attempts, openai_server.count(CHAT_PATH)) == (2, 2)
    # Backoff alone would wait 1 ms; only honouring retry-after-ms explains 0.2 s.
    assert elapsed >= 0.2
    assert openai_server.requests[0].fault == status_429(retry_after=0.2)


async def test_500_then_success_is_retried(openai_server: FakeOpenAIServer) -> None:
    openai_server.builders["Decision"] = answer_yes
    openai_server.faults.at(1, status_500())
    result = await client_for(openai_server).structured_call(QUESTION, Decision)

    assert result.status is VerdictStatus.OK
    assert (result.attempts, openai_server.count(CHAT_PATH)) == (2, 2)


async def test_persistent_500_ends_unscored_error_after_max_attempts(openai_server: FakeOpenAIServer) -> None:
    openai_server.builders["Decision"] = answer_yes
    openai_server.faults = FaultPlan(seed=1, probability=1.0, mix=[status_500()])
    result = await client_for(
        openai_server, retry=FAST_RETRY.model_copy(update={"max_attempts": 3})
    ).structured_call(QUESTION, Decision)

    assert (result.status, result.reason) == (VerdictStatus.UNSCORED, UnscoredReason.ERROR)
    assert (result.attempts, openai_server.count(CHAT_PATH)) == (3, 3)
    assert result.detail is not None and "500" in result.detail and "3 attempt(s)" in result.detail
    assert result.value is None and result.raw_text is None


async def test_timeout_is_retried_then_succeeds(openai_server: FakeOpenAIServer) -> None:
    openai_server.builders["Decision"] = answer_yes
    openai_server.faults.at(1, delay(2.0))
    result = await client_for(openai_server, timeout_s=0.3).structured_call(QUESTION, Decision)

    assert result.status is VerdictStatus.OK
    assert (result.attempts, openai_server.count(CHAT_PATH)) == (2, 2)


async def test_timeouts_that_keep_happening_end_unscored_timeout(openai_server: FakeOpenAIServer) -> None:
    openai_server.builders["Decision"] = answer_yes
    openai_server.faults = FaultPlan(seed=7, probability=1.0, mix=[delay(2.0)])
    client = client_for(openai_server, timeout_s=0.3, retry=FAST_RETRY.model_copy(update={"max_attempts": 2}))
    result = await client.structured_call(QUESTION, Decision)

    assert (result.status, result.reason) == (VerdictStatus.UNSCORED, UnscoredReason.TIMEOUT)
    assert (result.attempts, openai_server.count(CHAT_PATH)) == (2, 2)
    assert result.detail is not None and "Timeout" in result.detail


async def test_a_4xx_other_than_429_is_not_retried(openai_server: FakeOpenAIServer) -> None:
    # No builder for "Decision": the server answers 400, which retrying cannot fix.
    result = await client_for(openai_server).structured_call(QUESTION, Decision)

    assert (result.status, result.reason) == (VerdictStatus.UNSCORED, UnscoredReason.ERROR)
    assert (result.attempts, openai_server.count(CHAT_PATH)) == (1, 1)
    assert result.detail is not None and "no builder for output schema 'Decision'" in result.detail
    assert len(openai_server.responder_errors) == 1


BODY_FAULTS = {
    "garbage under application/json": garbage_body(),
    "garbage under text/html": garbage_body("text/html"),
    "JSON cut in half": truncated_body(),
    "JSON that is no chat completion": not_a_completion(),
    "connection reset": connection_reset(),
}
# The LangChain path reads replies with langchain-openai's own code, which raises its own errors for a body
# of another content type or shape; what it hands over unread (not JSON at all) is retried there too.
LANGCHAIN_BODY_FAULTS = ("garbage under application/json", "JSON cut in half", "connection reset")


@pytest.mark.parametrize(("name", "langchain_path"), [
    *((name, False) for name in BODY_FAULTS), *((name, True) for name in LANGCHAIN_BODY_FAULTS)])
async def test_a_reply_body_that_is_not_the_apis_json_is_retried_like_a_5xx(
    openai_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch, name: str, langchain_path: bool
) -> None:
    """The server (or a proxy) failed, not the model: the same bounded retries as a 500, and the verdict is
    the second reply's. Not a parse failure, and not cached: the cache holds the good reply only."""
    if langchain_path:  # what tracing does to the path, without a tracer that would reach LangSmith's servers
        monkeypatch.setattr(openai_wire, "tracing_is_enabled", lambda: True)
    fault = BODY_FAULTS[name]
    cache = MemoryCache()
    client = client_for(openai_server, cache=cache)
    assert is_direct(client.model) is not langchain_path
    openai_server.builders["Decision"] = answer_yes
    openai_server.faults.then(fault)
    result = await client.structured_call(QUESTION, Decision)

    assert (result.status, result.value) == (VerdictStatus.OK, Decision(label="yes", reason="ok"))
    assert (result.attempts, openai_server.count(CHAT_PATH)) == (2, 2)
    assert cache.puts == 1


async def test_bodies_that_stay_broken_end_unscored_error_after_max_attempts(openai_server: FakeOpenAIServer) -> None:
    openai_server.builders["Decision"] = answer_yes
    openai_server.faults = FaultPlan(seed=5, probability=1.0, mix=[garbage_body(), truncated_body()])
    result = await client_for(
        openai_server, retry=FAST_RETRY.model_copy(update={"max_attempts": 3})
    ).structured_call(QUESTION, Decision)

    assert (result.status, result.reason) == (VerdictStatus.UNSCORED, UnscoredReason.ERROR)
    assert (result.attempts, openai_server.count(CHAT_PATH)) == (3, 3)
    assert result.detail is not None and result.detail.startswith("MalformedResponseError: the reply body is not JSON")
    assert result.detail.endswith("(after 3 attempt(s))")
    assert result.raw_text is None


# --------------------------------------------------------------------------- validation and repair


async def test_malformed_twice_makes_exactly_one_repair_call_then_parse_failure(
    openai_server: FakeOpenAIServer,
) -> None:
    openai_server.builders["Decision"] = answer_yes
    openai_server.faults = FaultPlan(seed=3, probability=1.0, mix=[malformed_json()])
    result = await client_for(openai_server).structured_call(QUESTION, Decision)

    assert (result.status, result.reason) == (VerdictStatus.UNSCORED, UnscoredReason.PARSE_FAILURE)
    assert openai_server.count(CHAT_PATH) == 2  # the call and one repair; validation errors are never retried
    assert result.attempts == 2
    assert result.raw_text == '{"broken": tru'
    assert result.detail is not None and result.detail.startswith("<root>: Invalid JSON")
    repair = openai_server.chat_requests()[1]
    assert [m["role"] for m in repair.messages] == ["user", "assistant", "user"]
    assert repair.messages[1]["content"] == '{"broken": tru'
    assert result.detail in repair.messages[2]["content"]


async def test_malformed_then_valid_on_repair_is_ok(openai_server: FakeOpenAIServer) -> None:
    openai_server.builders["Decision"] = answer_yes
    openai_server.faults.at(1, malformed_json())
    result = await client_for(openai_server, StructuredMethod.JSON_SCHEMA).structured_call(QUESTION, Decision)

    assert result.status is VerdictStatus.OK
    assert result.value == Decision(label="yes", reason="ok")
    assert (result.attempts, openai_server.count(CHAT_PATH)) == (2, 2)
    assert openai_server.chat_requests()[1].messages[1]["content"] == "Sure! Here it is: {not json at all"


async def test_wrong_fields_are_repaired_with_the_validation_error_shown(
    openai_server: FakeOpenAIServer,
) -> None:
    answers = iter([{"label": "yes"}, dict(ANSWER)])
    openai_server.builders["Decision"] = lambda request: next(answers)
    result = await client_for(openai_server).structured_call(QUESTION, Decision)

    assert result.status is VerdictStatus.OK
    repair_prompt = openai_server.chat_requests()[1].messages[2]["content"]
    assert "reason: Field required" in repair_prompt


async def test_truncated_output_is_a_parse_problem_not_a_retry(openai_server: FakeOpenAIServer) -> None:
    openai_server.builders["Decision"] = answer_yes
    for method in (StructuredMethod.FUNCTION_CALLING, StructuredMethod.JSON_SCHEMA):
        before = openai_server.count()
        openai_server.faults.then(truncated(), truncated())
        result = await client_for(openai_server, method).structured_call(QUESTION, Decision)
        assert (result.reason, openai_server.count() - before) == (UnscoredReason.PARSE_FAILURE, 2), method
        assert result.raw_text == '{"label": "yes",'  # the first 16 of 32 characters
        assert result.detail is not None and "finish_reason=length" in result.detail


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize("method", [StructuredMethod.FUNCTION_CALLING, StructuredMethod.JSON_SCHEMA])
async def test_refusal_is_unscored_refusal_without_repair(
    openai_server: FakeOpenAIServer, method: StructuredMethod
) -> None:
    openai_server.builders["Decision"] = lambda request: Reply(refusal="I can't help with that.")
    result = await client_for(openai_server, method).structured_call(QUESTION, Decision)

    assert (result.status, result.reason) == (VerdictStatus.UNSCORED, UnscoredReason.REFUSAL)
    assert result.detail == "I can't help with that."
    assert openai_server.count(CHAT_PATH) == 1


@pytest.mark.parametrize("method", [StructuredMethod.FUNCTION_CALLING, StructuredMethod.JSON_SCHEMA])
async def test_empty_output_stopped_by_content_filter_is_a_refusal(
    openai_server: FakeOpenAIServer, method: StructuredMethod
) -> None:
    openai_server.builders["Decision"] = lambda request: Reply(output="", finish_reason="content_filter")
    result = await client_for(openai_server, method).structured_call(QUESTION, Decision)

    assert result.reason is UnscoredReason.REFUSAL
    assert result.detail is not None and "content_filter" in result.detail
    assert openai_server.count(CHAT_PATH) == 1


# --------------------------------------------------------------------------- logprobs and usage


def answer_with_logprobs(request: ChatRequest) -> Reply:
    return Reply(
        output=dict(ANSWER),
        logprobs=[("yes", -0.105, [("yes", -0.105), ("no", -2.303), ("maybe", -4.6)])],
    )


async def test_logprobs_are_requested_and_returned(openai_server: FakeOpenAIServer) -> None:
    openai_server.builders["Decision"] = answer_with_logprobs
    client = client_for(openai_server, StructuredMethod.JSON_SCHEMA, logprobs=True, top_logprobs=2)
    result = await client.structured_call(QUESTION, Decision)

    body = openai_server.requests[0].body
    assert body is not None and (body["logprobs"], body["top_logprobs"]) == (True, 2)
    assert result.logprobs is not None
    assert [(lp.token, lp.logprob, lp.top) for lp in result.logprobs] == [
        ("yes", -0.105, [("yes", -0.105), ("no", -2.303)])  # the server keeps the 2 asked for
    ]


async def test_logprobs_survive_the_cache(openai_server: FakeOpenAIServer) -> None:
    openai_server.builders["Decision"] = answer_with_logprobs
    client = client_for(openai_server, cache=MemoryCache(), logprobs=True, top_logprobs=1)
    first = await client.structured_call(QUESTION, Decision)
    again = await client.structured_call(QUESTION, Decision)
    assert again.cached and again.logprobs == first.logprobs
    assert first.logprobs is not None and first.logprobs[0].top == [("yes", -0.105)]


async def test_no_logprobs_unless_asked(openai_server: FakeOpenAIServer) -> None:
    openai_server.builders["Decision"] = answer_with_logprobs
    result = await client_for(openai_server).structured_call(QUESTION, Decision)
    body = openai_server.requests[0].body
    assert body is not None and "logprobs" not in body
    assert result.logprobs is None


async def test_usage_is_counted_per_role_with_cost(openai_server: FakeOpenAIServer) -> None:
    openai_server.builders["Decision"] = answer_yes
    cache = MemoryCache()
    spec = ModelSpec.parse(f"openai:fake-model@{openai_server.base_url}")
    meter = UsageMeter(prices={spec.id: (1.0, 2.0)})
    judge = build_client(spec, role="judge", usage=meter, cache=cache, retry=FAST_RETRY)
    decomposer = build_client(spec, role="decomposer", usage=meter, cache=cache, retry=FAST_RETRY)

    await judge.structured_call(QUESTION, Decision)  # 4 prompt + 8 completion tokens
    await judge.structured_call([HumanMessage(content="Is grass green?!")], Decision)  # 16 chars: 4 + 8
    await judge.structured_call(QUESTION, Decision)  # cached
    result = await decomposer.structured_call([HumanMessage(content="Split this answer please.")], Decision)

    assert result.usage == TokenUsage(prompt_tokens=6, completion_tokens=8, calls=1)  # 25 chars // 4 = 6
    totals = meter.snapshot()
    judge_totals = totals[(spec.id, "judge")]
    assert (judge_totals.prompt_tokens, judge_totals.completion_tokens) == (8, 16)
    assert (judge_totals.calls, judge_totals.cached_calls) == (2, 1)
    assert judge_totals.cost_usd == pytest.approx((8 * 1.0 + 16 * 2.0) / 1000)
    decomposer_totals = totals[(spec.id, "decomposer")]
    assert (
        decomposer_totals.prompt_tokens,
        decomposer_totals.completion_tokens,
        decomposer_totals.calls,
    ) == (6, 8, 1)
    assert decomposer_totals.cost_usd == pytest.approx((6 * 1.0 + 8 * 2.0) / 1000)
    assert openai_server.count() == 3


# --------------------------------------------------------------------------- limits


async def test_the_endpoint_limiter_serialises_requests(openai_server: FakeOpenAIServer) -> None:
    openai_server.builders["Decision"] = answer_yes
    openai_server.faults = FaultPlan(seed=0, probability=1.0, mix=[delay(0.15)])
    client = client_for(openai_server, limiter=EndpointLimiter(max_concurrency=1))
    questions = [[HumanMessage(content=f"question {i}")] for i in range(3)]

    started = time.perf_counter()
    results = await asyncio.gather(*(client.structured_call(q, Decision) for q in questions))
    elapsed = time.perf_counter() - started

    assert all(r.status is VerdictStatus.OK for r in results)
    assert openai_server.count() == 3
    assert elapsed >= 3 * 0.15  # one at a time; in parallel the three would take about 0.15 s


def test_one_endpoint_works_across_event_loops(openai_server: FakeOpenAIServer) -> None:
    """The sync API runs asyncio.run per evaluation; a pool shared across loops would break the second."""
    openai_server.builders["Decision"] = answer_yes
    for question in ("first?", "second?"):
        result = asyncio.run(
            client_for(openai_server).structured_call([HumanMessage(content=question)], Decision)
        )
        assert (result.status, result.detail) == (VerdictStatus.OK, None)
    assert openai_server.count(CHAT_PATH) == 2


def test_only_a_plain_chat_completions_chatopenai_takes_the_direct_path() -> None:
    plain = {"model": "m", "api_key": "k", "base_url": "http://127.0.0.1:9/v1"}
    with tracing_context(enabled=False):
        assert is_direct(ChatOpenAI(**plain))
        assert not is_direct(ChatOpenAI(**plain, use_responses_api=True))
        assert not is_direct(ChatOpenAI(**plain, streaming=True))
    with tracing_context(enabled=True):  # someone traces (LANGSMITH_TRACING=true does the same): LangChain's path
        assert not is_direct(ChatOpenAI(**plain))
