from __future__ import annotations

import asyncio
import itertools
import threading
import time

import httpx
import httpx2
import openai
import pytest
from pydantic import BaseModel, ValidationError

from ragcourt.llm.limits import EndpointLimiter, LimiterRegistry
from ragcourt.llm.retry import (
    MalformedResponseError,
    RetryPolicy,
    call_with_retries,
    is_retryable,
    is_timeout,
    retry_after_s,
)
from ragcourt.llm.usage import UsageMeter
from ragcourt.schema import TokenUsage

_REQUEST = httpx2.Request("POST", "http://127.0.0.1:1/v1/chat/completions")


def status_error(status: int, headers: dict[str, str] | None = None) -> openai.APIStatusError:
    response = httpx2.Response(status, headers=headers or {}, request=_REQUEST)
    error_class = {
        429: openai.RateLimitError,
        500: openai.InternalServerError,
        400: openai.BadRequestError,
    }.get(status, openai.APIStatusError)
    return error_class(f"HTTP {status}", response=response, body=None)


def a_validation_error() -> ValidationError:
    class Schema(BaseModel):
        x: int

    try:
        Schema.model_validate({"x": "not a number"})
    except ValidationError as error:
        return error
    raise AssertionError("validation should have failed")


# --------------------------------------------------------------------------- retry


@pytest.mark.parametrize(
    ("error", "retryable", "timeout"),
    [
        (status_error(429), True, False),
        (status_error(500), True, False),
        (status_error(503), True, False),
        (status_error(400), False, False),
        (status_error(404), False, False),
        (status_error(422), False, False),
        (openai.APITimeoutError(request=_REQUEST), True, True),
        (openai.APIConnectionError(request=_REQUEST), True, False),
        (httpx.ConnectTimeout("slow"), True, True),
        (httpx.ConnectError("refused"), True, False),
        (httpx2.ReadTimeout("slow"), True, True),
        (TimeoutError(), True, True),
        (ConnectionResetError(), True, False),
        (MalformedResponseError("the reply body is not JSON"), True, False),
        (openai.APIResponseValidationError(httpx2.Response(200, request=_REQUEST), body="<html>"), True, False),
        (a_validation_error(), False, False),
        (ValueError("bad output"), False, False),
    ],
)
def test_only_transient_failures_are_retryable(error: BaseException, retryable: bool, timeout: bool) -> None:
    assert is_retryable(error) is retryable
    assert is_timeout(error) is timeout


def test_retry_after_headers_ms_first_then_seconds() -> None:
    assert retry_after_s(status_error(429, {"retry-after-ms": "250", "retry-after": "9"})) == 0.25
    assert retry_after_s(status_error(429, {"retry-after": "2"})) == 2.0
    assert retry_after_s(status_error(429, {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"})) is None
    assert retry_after_s(status_error(429)) is None
    assert retry_after_s(ValueError("no response")) is None


def test_backoff_doubles_up_to_the_cap_and_retry_after_wins() -> None:
    policy = RetryPolicy(base_delay_s=0.5, max_delay_s=3.0, jitter=0.0, max_retry_after_s=10.0)
    assert [policy.delay_s(n, status_error(500)) for n in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, 3.0]
    assert policy.delay_s(1, status_error(429, {"retry-after": "7"})) == 7.0  # above max_delay_s: honoured
    assert policy.delay_s(1, status_error(429, {"retry-after": "60"})) == 10.0


def test_jitter_stays_within_its_fraction() -> None:
    policy = RetryPolicy(base_delay_s=1.0, max_delay_s=100.0, jitter=0.25)
    delays = {policy.delay_s(3, status_error(500)) for _ in range(200)}
    assert all(3.0 <= d <= 5.0 for d in delays)  # 4.0 * [0.75, 1.25]
    assert len(delays) > 1


async def test_call_with_retries_counts_attempts_and_stops_on_permanent_errors() -> None:
    policy = RetryPolicy(max_attempts=4, base_delay_s=0.0, jitter=0.0)
    outcomes: list[BaseException | str] = [status_error(503), status_error(429), "done"]

    async def flaky() -> str:
        outcome = outcomes.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    succeeded = await call_with_retries(policy, flaky)
    assert (succeeded.value, succeeded.error, succeeded.attempts) == ("done", None, 3)

    calls = 0

    async def bad_request() -> str:
        nonlocal calls
        calls += 1
        raise status_error(400)

    failed = await call_with_retries(policy, bad_request)
    assert (failed.value, failed.attempts, calls) == (None, 1, 1)
    assert isinstance(failed.error, openai.BadRequestError)

    async def always_500() -> str:
        raise status_error(500)

    exhausted = await call_with_retries(policy, always_500)
    assert exhausted.attempts == 4 and isinstance(exhausted.error, openai.InternalServerError)


# --------------------------------------------------------------------------- limits


async def test_limiter_bounds_concurrency() -> None:
    limiter = EndpointLimiter(max_concurrency=2)
    in_flight = 0
    most = 0

    async def work() -> None:
        nonlocal in_flight, most
        async with limiter:
            in_flight += 1
            most = max(most, in_flight)
            await asyncio.sleep(0.02)
            in_flight -= 1

    await asyncio.gather(*(work() for _ in range(6)))
    assert most == 2


async def test_limiter_spaces_requests_at_the_rate() -> None:
    limiter = EndpointLimiter(max_concurrency=10, requests_per_second=20.0)
    started = time.monotonic()
    stamps: list[float] = []

    async def request() -> None:
        async with limiter:
            stamps.append(time.monotonic() - started)

    await asyncio.gather(*(request() for _ in range(5)))
    # burst 1: the first goes at once, the next four 1/20 s apart -> the last at >= 0.2 s
    assert stamps[0] < 0.04
    assert stamps[-1] >= 0.2 - 0.005
    assert all(later - earlier >= 0.05 - 0.005 for earlier, later in itertools.pairwise(stamps))


def test_registry_shares_one_limiter_per_endpoint() -> None:
    registry = LimiterRegistry(default_max_concurrency=4)
    local = registry.limiter_for("http://127.0.0.1:8000/v1")
    assert registry.limiter_for("http://127.0.0.1:8000/v1/") is local
    assert local.max_concurrency == 4 and local.requests_per_second is None
    assert registry.limiter_for(None) is registry.limiter_for("https://api.openai.com/v1")
    assert registry.limiter_for("http://127.0.0.1:9000/v1") is not local
    assert registry.limiter_for("http://127.0.0.1:8000/v1", max_concurrency=4) is local
    with pytest.raises(ValueError, match="already has a limiter with max_concurrency=4"):
        registry.limiter_for("http://127.0.0.1:8000/v1", max_concurrency=2)


def test_limiter_rejects_nonsense_settings() -> None:
    with pytest.raises(ValueError, match="max_concurrency"):
        EndpointLimiter(max_concurrency=0)
    with pytest.raises(ValueError, match="requests_per_second"):
        EndpointLimiter(max_concurrency=1, requests_per_second=0)


# --------------------------------------------------------------------------- usage


def test_usage_meter_sums_per_model_and_role_with_cost() -> None:
    meter = UsageMeter(prices={"openai:gpt-4o-mini": (0.15, 0.6)})
    meter.record(
        "openai:gpt-4o-mini", "judge", TokenUsage(prompt_tokens=1000, completion_tokens=200, calls=1)
    )
    meter.record(
        "openai:gpt-4o-mini", "judge", TokenUsage(prompt_tokens=3000, completion_tokens=800, calls=1)
    )
    meter.record("openai:gpt-4o-mini", "judge", TokenUsage(cached_calls=1))
    meter.record("openai:local@http://127.0.0.1:8000/v1", "decomposer", TokenUsage(prompt_tokens=10, calls=1))

    snapshot = meter.snapshot()
    judge = snapshot[("openai:gpt-4o-mini", "judge")]
    assert (judge.prompt_tokens, judge.completion_tokens, judge.calls, judge.cached_calls) == (
        4000,
        1000,
        2,
        1,
    )
    assert judge.cost_usd == pytest.approx(4 * 0.15 + 1 * 0.6)  # 0.6 + 0.6 = 1.2 USD
    local = snapshot[("openai:local@http://127.0.0.1:8000/v1", "decomposer")]
    assert local.cost_usd is None  # no price: unknown, not free
    assert meter.total() == TokenUsage(prompt_tokens=4010, completion_tokens=1000, calls=3, cached_calls=1)
    rows = meter.rows()
    assert [(r["model_id"], r["role"]) for r in rows] == [
        ("openai:gpt-4o-mini", "judge"),
        ("openai:local@http://127.0.0.1:8000/v1", "decomposer"),
    ]
    assert set(rows[0]) == {
        "model_id",
        "role",
        "prompt_tokens",
        "completion_tokens",
        "calls",
        "cached_calls",
        "cost_usd",
    }


def test_usage_meter_is_thread_safe() -> None:
    meter = UsageMeter()

    def record_many() -> None:
        for _ in range(2000):
            meter.record("m", "judge", TokenUsage(prompt_tokens=1, calls=1))

    threads = [threading.Thread(target=record_many) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert meter.total() == TokenUsage(prompt_tokens=8000, calls=8000)
