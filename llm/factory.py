"""Build a LangChain chat model (and the LLMClient around it) from a ModelSpec.

`openai:` specs build a ChatOpenAI; `local` specs build a llm.local.LocalChatModel (llama.cpp in this
process; the model file is loaded on the first call, not here).

The API key is the argument, else OPENAI_API_KEY read at call time, else (only for a base_url
endpoint, where local servers ignore it) the placeholder "not-needed". It is handed to ChatOpenAI,
which keeps it as a secret; it is never logged, stored, or part of a cache key.
"""

from __future__ import annotations

import os
from typing import Any

import openai
from langchain_core.language_models import BaseChatModel
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from ragcourt.llm.cache import LLMCache
from ragcourt.llm.client import LLMClient
from ragcourt.llm.limits import EndpointLimiter
from ragcourt.llm.local import LocalChatModel, bundled_model_path, local_model_file
from ragcourt.llm.retry import DEFAULT_RETRY, RetryPolicy
from ragcourt.llm.spec import ModelSpec, Provider
from ragcourt.llm.usage import UsageMeter

API_KEY_ENV = "OPENAI_API_KEY"
LOCAL_SERVER_PLACEHOLDER_KEY = "not-needed"
LOCAL_MAX_TOKENS = 768  # a local model's answer budget when none is given (the context guard keeps room for it)


class MissingAPIKeyError(ValueError):
    """api.openai.com is targeted and no key was given."""


def api_key_for(spec: ModelSpec, api_key: str | None) -> str:
    if api_key:
        return api_key
    from_env = os.environ.get(API_KEY_ENV)
    if from_env:
        return from_env
    if spec.base_url is not None:
        return LOCAL_SERVER_PLACEHOLDER_KEY
    raise MissingAPIKeyError(
        f"{spec.id} targets {spec.endpoint}, which needs an API key: pass api_key= or set {API_KEY_ENV}"
    )


def client_model_id(spec: ModelSpec) -> str:
    """The model id stored with every verdict and in every cache key. A bundled model's spec names its
    file, so a different bundled model (or another version of one) never reuses another's cached answers."""
    if spec.bundled is not None:
        return f"{Provider.LOCAL.value}:{bundled_model_path(spec.bundled).name}"
    return spec.id


def chat_params(
    *,
    temperature: float = 0.0,
    max_tokens: int | None = None,
    logprobs: bool = False,
    top_logprobs: int | None = None,
) -> dict[str, Any]:
    """The generation settings that change an answer: what an LLMClient puts in its cache key."""
    return {
        "temperature": temperature,
        "max_tokens": max_tokens,
        "logprobs": logprobs,
        "top_logprobs": top_logprobs if logprobs else None,
    }


def build_chat_model(
    spec: ModelSpec,
    *,
    api_key: str | None = None,
    timeout_s: float = 60.0,
    temperature: float = 0.0,
    max_tokens: int | None = None,
    logprobs: bool = False,
    top_logprobs: int | None = None,
    http_client: openai.DefaultAsyncHttpxClient | None = None,
) -> BaseChatModel:
    """A ChatOpenAI for the spec, without its own retries (llm.retry does those); for a local spec a
    LocalChatModel (timeout_s does not apply; logprobs, when wanted, are asked per call as for any model)."""
    if top_logprobs is not None and not logprobs:
        raise ValueError("top_logprobs needs logprobs=True")
    if spec.provider is Provider.LOCAL:
        return LocalChatModel(
            model_path=str(local_model_file(spec)),
            temperature=temperature,
            max_tokens=max_tokens or LOCAL_MAX_TOKENS,
        )
    return ChatOpenAI(
        model=spec.model,
        # Always explicit, so OPENAI_BASE_URL / OPENAI_API_BASE in the environment cannot redirect a spec.
        base_url=spec.endpoint,
        api_key=SecretStr(api_key_for(spec, api_key)),
        timeout=timeout_s,
        max_retries=0,
        # Never langchain-openai's default async pool: it is shared per base_url across event loops, so a
        # second asyncio.run against the same endpoint would fail "Event loop is closed". The caller's pool
        # (one per run and endpoint, see api.Models) or a new one.
        http_async_client=http_client or openai.DefaultAsyncHttpxClient(),
        temperature=temperature,
        max_completion_tokens=max_tokens,  # the field max_tokens, by its alias
        # None (not False) keeps the field out of the request for servers that reject it.
        logprobs=True if logprobs else None,
        top_logprobs=top_logprobs,
    )


def build_client(
    spec: ModelSpec,
    *,
    role: str = "judge",
    cache: LLMCache | None = None,
    limiter: EndpointLimiter | None = None,
    usage: UsageMeter | None = None,
    retry: RetryPolicy = DEFAULT_RETRY,
    api_key: str | None = None,
    timeout_s: float = 60.0,
    temperature: float = 0.0,
    max_tokens: int | None = None,
    logprobs: bool = False,
    top_logprobs: int | None = None,
    http_client: openai.DefaultAsyncHttpxClient | None = None,
) -> LLMClient:
    """An LLMClient whose model, cache-key params and structured method all come from one spec."""
    model = build_chat_model(
        spec,
        api_key=api_key,
        timeout_s=timeout_s,
        temperature=temperature,
        max_tokens=max_tokens,
        logprobs=logprobs,
        top_logprobs=top_logprobs,
        http_client=http_client,
    )
    params = chat_params(
        temperature=temperature, max_tokens=max_tokens, logprobs=logprobs, top_logprobs=top_logprobs
    )
    if isinstance(model, LocalChatModel):
        # What else changes a local model's answer: how much of the prompt the context guard keeps,
        # and the grammar's bounds.
        params |= {"max_tokens": model.max_tokens, "n_ctx": model.n_ctx,
                   "max_string_chars": model.max_string_chars, "max_list_items": model.max_list_items}
    return LLMClient(
        model,
        model_id=client_model_id(spec),
        role=role,
        method=spec.resolved_method,
        cache=cache,
        limiter=limiter,
        usage=usage,
        retry=retry,
        params=params,
    )
