"""What a trace of an LLM call names: `model_identity` reads a client's model id back into the provider, model
name and server (GenAI semantic conventions). The hook around every call is llm.client.CALL_OBSERVER.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from ragcourt.llm.spec import ModelSpec, Provider

# GenAI semantic conventions' provider names; llama.cpp in process has none registered.
PROVIDER_NAMES = {Provider.OPENAI: "openai", Provider.LOCAL: "llama.cpp"}


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
