"""The LLM cache in the record store's file: the `llm_cache` table, one reply per cache key."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict

from ragcourt.stores.group_commit import Statement
from ragcourt.stores.record_base import RecordStoreBase, utc_text

CACHE_TABLE_SQL = "CREATE TABLE IF NOT EXISTS llm_cache (key PRIMARY KEY, value NOT NULL, created_at NOT NULL)"


class CacheEntry(BaseModel):
    """One row of the LLM cache, as `to_frame(CacheEntry)` shows it."""

    model_config = ConfigDict(frozen=True)

    key: str
    value: str


def _cache_statements(key: str, value: str) -> list[Statement]:
    sql = "INSERT OR REPLACE INTO llm_cache (key, value, created_at) VALUES (?, ?, ?)"
    return [(sql, [(key, value, utc_text(datetime.now(UTC)))])]


class RecordCache(RecordStoreBase):
    """The LLM cache methods of `RecordStore` (they satisfy llm.cache.LLMCache)."""

    def cache_get(self, key: str) -> str | None:
        rows = self._select("SELECT value FROM llm_cache WHERE key = ?", (key,))
        return rows[0][0] if rows else None

    def cache_count(self) -> int:
        return int(self._select("SELECT COUNT(*) FROM llm_cache")[0][0])

    def cache_put(self, key: str, value: str) -> None:
        self._write(_cache_statements(key, value))

    async def acache_get(self, key: str) -> str | None:
        return await asyncio.to_thread(self.cache_get, key)

    async def acache_put(self, key: str, value: str) -> None:
        await self._group.submit(_cache_statements(key, value))
