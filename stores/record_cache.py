"""The LLM cache in the record store (SQLite file or PostgreSQL database): the `llm_cache` table, one reply per
cache key. In a PostgreSQL store every worker of a distributed run shares it, so a call one worker made
is free for all."""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict

from ragcourt.stores.dialect import ColumnKind, Dialect
from ragcourt.stores.group_commit import Statement
from ragcourt.stores.record_base import RecordStoreBase, utc_text
from ragcourt.stores.texts import packed, unpacked

CACHE_COLUMNS = ("key", "value", "created_at")
# The reply, zlib-compressed (about a third of its text); `value` is then ''. Rows written before the column
# existed keep their reply in `value` and read as they are.
BODY_COLUMN = "body"
_PUT_SQL = (
    "INSERT INTO llm_cache (key, value, body, created_at) VALUES (?, '', ?, ?) "
    "ON CONFLICT (key) DO UPDATE SET value = excluded.value, body = excluded.body, created_at = excluded.created_at"
)
CACHE_ROWS_SQL = "SELECT key, value, body FROM llm_cache"


def cache_body_sql(existing: set[str], dialect: Dialect) -> list[str]:
    """The statement adding the compressed body to an llm_cache table written before it had one."""
    if BODY_COLUMN in existing:
        return []
    return [f"ALTER TABLE llm_cache ADD COLUMN {dialect.column(BODY_COLUMN, ColumnKind.BLOB, not_null=False)}"]


def reply_of(value: str, body: bytes | memoryview | None) -> str:
    """The cached reply of a row: its compressed body, or the plain value of a row written before bodies."""
    return value if body is None else unpacked(body)


class CacheEntry(BaseModel):
    """One row of the LLM cache, as `to_frame(CacheEntry)` shows it."""

    model_config = ConfigDict(frozen=True)

    key: str
    value: str


def _cache_statements(key: str, value: str) -> list[Statement]:
    return [(_PUT_SQL, [(key, packed(value), utc_text(datetime.now(UTC)))])]


class RecordCache(RecordStoreBase):
    """The LLM cache methods of `RecordStore` (they satisfy llm.cache.LLMCache)."""

    def cache_get(self, key: str) -> str | None:
        rows = self._select(f"{CACHE_ROWS_SQL} WHERE key = ?", (key,))
        return reply_of(rows[0][1], rows[0][2]) if rows else None

    def cache_count(self) -> int:
        return int(self._select("SELECT COUNT(*) FROM llm_cache")[0][0])

    def cache_put(self, key: str, value: str) -> None:
        self._write(_cache_statements(key, value))

    async def acache_get(self, key: str) -> str | None:
        return await self.aread(self.cache_get, key)

    async def acache_put(self, key: str, value: str) -> None:
        await self._group.submit(_cache_statements(key, value))
