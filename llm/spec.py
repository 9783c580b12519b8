"""Which model to call, written as one string.

Forms accepted by `ModelSpec.parse`:

    openai:<model>                  the OpenAI API (api.openai.com)
    openai:<model>@<base_url>       any OpenAI-compatible server (vLLM, llama.cpp server, Ollama, ...)

e.g. ``openai:gpt-4o-mini`` or ``openai:qwen2.5-7b@http://127.0.0.1:8000/v1``.

How structured output is asked for (`StructuredMethod.AUTO` resolves by endpoint):

    | endpoint                        | AUTO resolves to  | why                                              |
    |---------------------------------|-------------------|--------------------------------------------------|
    | api.openai.com (no base_url)    | JSON_SCHEMA       | native structured outputs, raw JSON in content   |
    | any other base_url              | FUNCTION_CALLING  | the one method vLLM, llama.cpp server and Ollama |
    |                                 |                   | all honour (forced tool call)                    |

JSON_MODE (``response_format={"type": "json_object"}`` plus the JSON schema in a system message)
is never chosen automatically; ask for it when a server supports neither of the others.
"""

from __future__ import annotations

from enum import StrEnum
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, field_validator

OPENAI_API_BASE_URL = "https://api.openai.com/v1"

_EXPECTED_FORMS = "expected 'openai:<model>' or 'openai:<model>@http(s)://host[:port]/path'"


class Provider(StrEnum):
    OPENAI = "openai"


class StructuredMethod(StrEnum):
    AUTO = "auto"
    JSON_SCHEMA = "json_schema"
    FUNCTION_CALLING = "function_calling"
    JSON_MODE = "json_mode"


class ModelSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    provider: Provider
    model: str
    base_url: str | None = None
    method: StructuredMethod = StructuredMethod.AUTO

    @field_validator("model")
    @classmethod
    def _model_is_a_name(cls, model: str) -> str:
        if not model or model != model.strip() or any(c.isspace() for c in model):
            raise ValueError(f"model name {model!r} is empty or contains whitespace; {_EXPECTED_FORMS}")
        return model

    @field_validator("base_url")
    @classmethod
    def _base_url_is_http(cls, base_url: str | None) -> str | None:
        if base_url is None:
            return None
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"base_url {base_url!r} is not an http(s) URL with a host; {_EXPECTED_FORMS}")
        # One spelling per endpoint, so ids, cache keys and limiter keys agree.
        return base_url.rstrip("/")

    @classmethod
    def parse(cls, text: str, *, method: StructuredMethod = StructuredMethod.AUTO) -> ModelSpec:
        """Parse 'provider:model[@base_url]'; raise ValueError naming what is wrong."""
        provider_name, sep, rest = text.strip().partition(":")
        if not sep:
            raise ValueError(f"model spec {text!r} has no 'provider:' prefix; {_EXPECTED_FORMS}")
        try:
            provider = Provider(provider_name.lower())
        except ValueError:
            known = ", ".join(p.value for p in Provider)
            raise ValueError(
                f"model spec {text!r} names unknown provider {provider_name!r} (known: {known}); "
                f"{_EXPECTED_FORMS}"
            ) from None
        model, at, base_url = rest.partition("@")
        if at and not base_url:
            raise ValueError(f"model spec {text!r} has '@' but no base_url after it; {_EXPECTED_FORMS}")
        if not model:
            raise ValueError(f"model spec {text!r} names no model; {_EXPECTED_FORMS}")
        try:
            return cls(provider=provider, model=model, base_url=base_url or None, method=method)
        except ValueError as error:  # pydantic's ValidationError is a ValueError; say which string
            raise ValueError(f"model spec {text!r}: {error}") from None

    @property
    def id(self) -> str:
        """The canonical spec string; parse(spec.id) == spec (method aside)."""
        return f"{self.provider}:{self.model}" + (f"@{self.base_url}" if self.base_url else "")

    @property
    def endpoint(self) -> str:
        """The base URL actually called: the one a rate limiter and concurrency bound belong to."""
        return self.base_url or OPENAI_API_BASE_URL

    @property
    def resolved_method(self) -> StructuredMethod:
        """`method` with AUTO resolved per the table in the module docstring."""
        if self.method is not StructuredMethod.AUTO:
            return self.method
        return StructuredMethod.JSON_SCHEMA if self.base_url is None else StructuredMethod.FUNCTION_CALLING

    def __str__(self) -> str:
        return self.id
