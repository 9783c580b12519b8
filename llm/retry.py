"""Retries with exponential backoff, only for failures that a later try can fix.

Retried: HTTP 429 (waiting what `retry-after-ms` / `retry-after` asks), HTTP 5xx, timeouts and
connection errors, as raised by the openai SDK, by httpx / httpx2, by langchain-core's model errors,
or as builtin TimeoutError / ConnectionError; and a reply whose body is not the JSON the API promises
(`MalformedResponseError`: garbage, a body cut short, JSON that is no chat completion), which is the
server's fault as much as a 5xx is. Never retried: other 4xx, and anything about the model's output
inside a well-formed reply (validation is the client's repair step, not a retry).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import httpx
import openai
from langchain_core.exceptions import ModelError, ModelTimeoutError
from pydantic import BaseModel, ConfigDict, Field

try:  # the openai SDK moved to httpx2; accept either transport's errors
    import httpx2

    _TRANSPORT_ERRORS: tuple[type[BaseException], ...] = (httpx.TransportError, httpx2.TransportError)
    _TRANSPORT_TIMEOUTS: tuple[type[BaseException], ...] = (httpx.TimeoutException, httpx2.TimeoutException)
except ImportError:  # pragma: no cover - depends on the installed openai SDK
    _TRANSPORT_ERRORS = (httpx.TransportError,)
    _TRANSPORT_TIMEOUTS = (httpx.TimeoutException,)

R = TypeVar("R")


class MalformedResponseError(Exception):
    """The HTTP reply's body is not the JSON the API promises: not JSON at all, cut short, or JSON that is no
    chat completion. The server (or a proxy before it) failed, not the model: retried as a 5xx is."""


def _status_code(error: BaseException) -> int | None:
    if isinstance(error, openai.APIStatusError):
        return error.status_code
    return None


def is_timeout(error: BaseException) -> bool:
    return isinstance(error, (openai.APITimeoutError, ModelTimeoutError, TimeoutError, *_TRANSPORT_TIMEOUTS))


def is_retryable(error: BaseException) -> bool:
    status = _status_code(error)
    if status is not None:
        return status == 429 or status >= 500
    if isinstance(error, ModelError):
        return error.is_retryable
    transient = (MalformedResponseError, openai.APIResponseValidationError, openai.APIConnectionError,
                 ConnectionError, *_TRANSPORT_ERRORS)
    return isinstance(error, transient) or is_timeout(error)


def retry_after_s(error: BaseException) -> float | None:
    """The wait a 429/503 response asks for, in seconds, if it says."""
    response = getattr(error, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    for header, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(header)
        if value is None:
            continue
        try:
            seconds = float(value) / divisor
        except ValueError:
            continue  # an HTTP date: rare for APIs, fall back to backoff
        if seconds >= 0:
            return seconds
    return None


class RetryPolicy(BaseModel):
    """max_attempts counts every try, the first included. jitter is a fraction: each backoff is
    multiplied by a uniform factor in [1 - jitter, 1 + jitter] so clients do not retry in step."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_attempts: int = Field(default=4, ge=1)
    base_delay_s: float = Field(default=0.5, ge=0.0)
    max_delay_s: float = Field(default=20.0, ge=0.0)
    jitter: float = Field(default=0.2, ge=0.0, le=1.0)
    max_retry_after_s: float = Field(default=60.0, ge=0.0)

    def delay_s(self, attempt: int, error: BaseException) -> float:
        """Wait before try number attempt+1, after try number `attempt` failed with `error`.

        A server's retry-after wins over the backoff (up to max_retry_after_s, so a bogus header
        cannot stall a run); the backoff is capped at max_delay_s.
        """
        asked = retry_after_s(error)
        if asked is not None:
            return min(asked, self.max_retry_after_s)
        backoff = self.base_delay_s * 2 ** (attempt - 1)
        if self.jitter:
            backoff *= random.uniform(1.0 - self.jitter, 1.0 + self.jitter)
        return min(backoff, self.max_delay_s)


DEFAULT_RETRY = RetryPolicy()


@dataclass(frozen=True)
class Attempted(Generic[R]):
    """What came of a call under a retry policy: its value or its last error, and how many tries."""

    value: R | None
    error: BaseException | None
    attempts: int


async def call_with_retries(policy: RetryPolicy, call: Callable[[], Awaitable[R]]) -> Attempted[R]:
    """Run `call` until it succeeds, fails in a way retrying cannot fix, or tries run out.

    Never raises for the call's exceptions (they come back in `error`); cancellation propagates.
    """
    attempt = 0
    while True:
        attempt += 1
        try:
            return Attempted(value=await call(), error=None, attempts=attempt)
        except Exception as error:  # noqa: BLE001 - classified below, returned to the caller
            if not is_retryable(error) or attempt >= policy.max_attempts:
                return Attempted(value=None, error=error, attempts=attempt)
            await asyncio.sleep(policy.delay_s(attempt, error))
