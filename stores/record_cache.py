"""The LLM cache in the record store (SQLite file or PostgreSQL database): the `llm_cache` table, one reply per
cache key. In a PostgreSQL store every worker of a distributed run shares it, so a call one worker made
is free for all."""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict

from ragcourt.stores.group_commit import Statement
from ragcourt.stores.record_base import RecordStoreBase, utc_text

CACHE_COLUMNS = ("key", "value", "created_at")
_PUT_SQL = (
    "INSERT INTO llm_cache (key, value, created_at) VALUES (?, ?, ?) "
    "ON CONFLICT (key) DO UPDATE SET value = excluded.value, created_at = excluded.created_at"
)


class CacheEntry(BaseModel):
    """One row of the LLM cache, as `to_frame(CacheEntry)` shows it."""

    model_config = ConfigDict(frozen=True)

    key: str
    value: str


def _cache_statements(key: str, value: str) -> list[Statement]:
    return [(_PUT_SQL, [(key, value, utc_text(datetime.now(UTC)))])]


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
        return await self.aread(self.cache_get, key)

    async def acache_put(self, key: str, value: str) -> None:
        await self._group.submit(_cache_statements(key, value))
