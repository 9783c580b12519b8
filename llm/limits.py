"""How hard one endpoint may be called: a concurrency bound plus a token-bucket rate limit.

One EndpointLimiter per endpoint (base URL), shared by every client of that endpoint, so three
judges on one local vLLM server share its slots. `LimiterRegistry` hands them out; the composition
root owns the registry (no module-level state). A limiter belongs to the event loop that first uses it.
"""

from __future__ import annotations

import asyncio
import time
from types import TracebackType
from typing import Self

from ragcourt.llm.spec import OPENAI_API_BASE_URL


class EndpointLimiter:
    """`async with limiter:` around each HTTP request (each retry is a new request)."""

    def __init__(self, max_concurrency: int, requests_per_second: float | None = None, *, burst: int = 1):
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
        if requests_per_second is not None and requests_per_second <= 0:
            raise ValueError(f"requests_per_second must be > 0 or None, got {requests_per_second}")
        if burst < 1:
            raise ValueError(f"burst must be >= 1, got {burst}")
        self.max_concurrency = max_concurrency
        self.requests_per_second = requests_per_second
        self.burst = burst
        self._slots = asyncio.Semaphore(max_concurrency)
        self._bucket_lock = asyncio.Lock()
        self._tokens = float(burst)
        self._refilled_at = time.monotonic()

    async def _take_token(self) -> None:
        if self.requests_per_second is None:
            return
        # The lock queues waiters in order, so a burst of callers is spread evenly, none starved.
        async with self._bucket_lock:
            now = time.monotonic()
            self._tokens = min(
                self.burst, self._tokens + (now - self._refilled_at) * self.requests_per_second
            )
            self._refilled_at = now
            if self._tokens < 1.0:
                await asyncio.sleep((1.0 - self._tokens) / self.requests_per_second)
                self._tokens = 1.0
                self._refilled_at = time.monotonic()
            self._tokens -= 1.0

    async def __aenter__(self) -> Self:
        await self._slots.acquire()
        try:
            await self._take_token()
        except BaseException:
            self._slots.release()
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._slots.release()


def _endpoint_key(base_url: str | None) -> str:
    return (base_url or OPENAI_API_BASE_URL).rstrip("/")


class LimiterRegistry:
    """One EndpointLimiter per endpoint; settings are fixed by the first request for an endpoint."""

    def __init__(self, *, default_max_concurrency: int = 8, default_requests_per_second: float | None = None):
        self.default_max_concurrency = default_max_concurrency
        self.default_requests_per_second = default_requests_per_second
        self._limiters: dict[str, EndpointLimiter] = {}

    def limiter_for(
        self,
        base_url: str | None,
        *,
        max_concurrency: int | None = None,
        requests_per_second: float | None = None,
    ) -> EndpointLimiter:
        """The endpoint's limiter (None means api.openai.com). Asking again with other explicit
        settings is a configuration error, not something to resolve silently."""
        key = _endpoint_key(base_url)
        existing = self._limiters.get(key)
        if existing is None:
            existing = EndpointLimiter(
                max_concurrency if max_concurrency is not None else self.default_max_concurrency,
                requests_per_second if requests_per_second is not None else self.default_requests_per_second,
            )
            self._limiters[key] = existing
            return existing
        if (max_concurrency is not None and max_concurrency != existing.max_concurrency) or (
            requests_per_second is not None and requests_per_second != existing.requests_per_second
        ):
            raise ValueError(
                f"endpoint {key} already has a limiter with max_concurrency={existing.max_concurrency}, "
                f"requests_per_second={existing.requests_per_second}; asked for "
                f"max_concurrency={max_concurrency}, requests_per_second={requests_per_second}"
            )
        return existing
