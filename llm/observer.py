"""A hook around every structured LLM call, for whoever traces a run (runs.telemetry sets it per sample).

`CALL_OBSERVER` is a context variable, so the observer set around one sample reaches every call made under
it (LangGraph's node tasks and asyncio.gather copy the context) and no other sample's. Unset (the default),
a call pays one `ContextVar.get` and nothing is imported. `model_identity` reads a client's model id back
into the provider, model name and server a trace names.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

from pydantic import BaseModel

from ragcourt.llm.spec import ModelSpec, Provider

if TYPE_CHECKING:
    from ragcourt.llm.client import LLMClient, StructuredResult

# GenAI semantic conventions' provider names; llama.cpp in process has none registered.
PROVIDER_NAMES = {Provider.OPENAI: "openai", Provider.LOCAL: "llama.cpp"}


class CallObserver(Protocol):
    def llm_call(
        self, client: LLMClient, schema: type[BaseModel]
    ) -> AbstractContextManager[Callable[[StructuredResult[Any]], None]]:
        """Entered for the whole call (repair and retries included); the callable it gives is handed the
        call's result before it exits. An exception leaving the call passes through it."""
        ...


CALL_OBSERVER: ContextVar[CallObserver | None] = ContextVar("ragcourt_llm_call_observer", default=None)


@dataclass(frozen=True)
class ModelIdentity:
    provider: str
    model: str
    server_address: str | None = None
    server_port: int | None = None


def model_identity(model_id: str) -> ModelIdentity:
    """Provider, model name and server of a client's model id (`openai:qwen@http://host:8000/v1` -> openai,
    qwen, host, 8000). An id that is not a spec (a test double's) is its own model, under the prefix before ':'."""
    try:
        spec = ModelSpec.parse(model_id)
    except ValueError:
        prefix, sep, rest = model_id.partition(":")
        return ModelIdentity(provider=prefix if sep else "unknown", model=rest if sep else model_id)
    if spec.provider is Provider.LOCAL:
        return ModelIdentity(provider=PROVIDER_NAMES[spec.provider], model=spec.model)
    parts = urlsplit(spec.endpoint)
    return ModelIdentity(provider=PROVIDER_NAMES[spec.provider], model=spec.model, server_address=parts.hostname,
                         server_port=parts.port or (443 if parts.scheme == "https" else 80))
