"""Token, call and cost accounting per (model_id, role).

`calls` counts model responses obtained over HTTP, `cached_calls` responses served from the cache
(they cost nothing and add no tokens). Cost is None, never 0, when the model has no price.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from ragcourt.schema import TokenUsage

PriceTable = Mapping[str, tuple[float, float]]
"""model_id -> (USD per 1k prompt tokens, USD per 1k completion tokens)."""


class UsageTotals(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    model_id: str
    role: str
    prompt_tokens: int
    completion_tokens: int
    calls: int
    cached_calls: int
    cost_usd: float | None


class UsageMeter:
    """Safe to share between threads and tasks: every update holds one lock."""

    def __init__(self, prices: PriceTable | None = None):
        self._prices = dict(prices or {})
        self._lock = threading.Lock()
        self._totals: dict[tuple[str, str], TokenUsage] = {}

    def record(self, model_id: str, role: str, usage: TokenUsage) -> None:
        key = (model_id, role)
        with self._lock:
            self._totals[key] = self._totals.get(key, TokenUsage()) + usage

    def _cost(self, model_id: str, usage: TokenUsage) -> float | None:
        price = self._prices.get(model_id)
        if price is None:
            return None
        per_1k_prompt, per_1k_completion = price
        return (usage.prompt_tokens * per_1k_prompt + usage.completion_tokens * per_1k_completion) / 1000.0

    def snapshot(self) -> dict[tuple[str, str], UsageTotals]:
        """Totals so far, keyed by (model_id, role)."""
        with self._lock:
            totals = dict(self._totals)
        return {
            (model_id, role): UsageTotals(
                model_id=model_id,
                role=role,
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens,
                calls=usage.calls,
                cached_calls=usage.cached_calls,
                cost_usd=self._cost(model_id, usage),
            )
            for (model_id, role), usage in sorted(totals.items())
        }

    def rows(self) -> list[dict[str, Any]]:
        """One flat dict per (model_id, role): `pandas.DataFrame(meter.rows())`."""
        return [totals.model_dump() for totals in self.snapshot().values()]

    def total(self) -> TokenUsage:
        with self._lock:
            return sum(self._totals.values(), TokenUsage())
