"""Build a LangChain chat model (and the LLMClient around it) from a ModelSpec.

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
from ragcourt.llm.retry import DEFAULT_RETRY, RetryPolicy
from ragcourt.llm.spec import ModelSpec, Provider
from ragcourt.llm.usage import UsageMeter

API_KEY_ENV = "OPENAI_API_KEY"
LOCAL_SERVER_PLACEHOLDER_KEY = "not-needed"


class MissingAPIKeyError(ValueError):
    """api.openai.com is targeted and no key was given."""


def _api_key_for(spec: ModelSpec, api_key: str | None) -> str:
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
) -> BaseChatModel:
    """A ChatOpenAI for the spec, without its own retries (llm.retry does those)."""
    if spec.provider is not Provider.OPENAI:  # pragma: no cover - only one provider so far
        raise ValueError(f"no chat model builder for provider {spec.provider}")
    if top_logprobs is not None and not logprobs:
        raise ValueError("top_logprobs needs logprobs=True")
    return ChatOpenAI(
        model=spec.model,
        # Always explicit, so OPENAI_BASE_URL / OPENAI_API_BASE in the environment cannot redirect a spec.
        base_url=spec.endpoint,
        api_key=SecretStr(_api_key_for(spec, api_key)),
        timeout=timeout_s,
        max_retries=0,
        # Its own connection pool: langchain-openai's default async pool is shared per base_url across
        # event loops, so a second asyncio.run against the same endpoint would fail "Event loop is closed".
        http_async_client=openai.DefaultAsyncHttpxClient(),
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
    )
    return LLMClient(
        model,
        model_id=spec.id,
        role=role,
        method=spec.resolved_method,
        cache=cache,
        limiter=limiter,
        usage=usage,
        retry=retry,
        params=chat_params(
            temperature=temperature, max_tokens=max_tokens, logprobs=logprobs, top_logprobs=top_logprobs
        ),
    )
