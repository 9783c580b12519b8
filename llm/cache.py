"""The cache every LLM call goes through: content-addressed keys, opaque string values.

The record store implements `LLMCache` (the two async methods below: its writes share transactions with the
run's other writes), on SQLite or PostgreSQL, where every worker of a shared run reads what any one cached;
`MemoryCache` is the in-process one for tests and one-off scripts.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any, Protocol, runtime_checkable

from langchain_core.messages import BaseMessage
from pydantic import BaseModel

# Bump when the key material or the stored value format changes, so old entries are not misread.
CACHE_FORMAT_VERSION = 2  # 2: the key hashes the output schema as sent


@runtime_checkable
class LLMCache(Protocol):
    async def acache_get(self, key: str) -> str | None: ...

    async def acache_put(self, key: str, value: str) -> None: ...


class MemoryCache:
    """A dict behind a lock; counts hits and puts so tests can see what happened."""

    def __init__(self) -> None:
        self._entries: dict[str, str] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self.puts = 0

    def cache_get(self, key: str) -> str | None:
        with self._lock:
            value = self._entries.get(key)
            if value is not None:
                self.hits += 1
            return value

    def cache_put(self, key: str, value: str) -> None:
        with self._lock:
            self._entries[key] = value
            self.puts += 1

    async def acache_get(self, key: str) -> str | None:
        return self.cache_get(key)

    async def acache_put(self, key: str, value: str) -> None:
        self.cache_put(key, value)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


@cache
def schema_json(schema: type[BaseModel]) -> dict[str, Any]:
    """The schema's JSON schema, made once per class: generating it costs more than the rest of a call's
    client-side work (measured in bench/cost_speed.py). Callers must not mutate it."""
    return schema.model_json_schema()


def _message_material(message: BaseMessage) -> dict[str, Any]:
    return {"role": message.type, "content": message.content}


def cache_key(
    *,
    model_id: str,
    params: Mapping[str, Any],
    messages: Sequence[BaseMessage],
    schema: Mapping[str, Any],
    method: str,
) -> str:
    """sha256 hex of everything that decides a model's answer. Never an API key. `schema`: the output schema as
    the request carries it (its name and the JSON schema sent), so a change in how it is sent asks again."""
    material = {
        "version": CACHE_FORMAT_VERSION,
        "model_id": model_id,
        "params": dict(params),
        "messages": [_message_material(m) for m in messages],
        "schema": dict(schema),
        "method": method,
    }
    blob = json.dumps(material, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()
