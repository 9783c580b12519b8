"""One completed model response, reduced to what a result needs (also the cached value)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class TokenLogprob(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    token: str
    logprob: float
    top: list[tuple[str, float]] = []


class ModelReply(BaseModel):
    """One completed model response, reduced to what a result needs; also the cached value."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    raw_text: str
    refusal: str | None = None
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    logprobs: list[TokenLogprob] | None = None


def token_logprobs(payload: Any) -> list[TokenLogprob] | None:
    if not isinstance(payload, dict) or not payload.get("content"):
        return None
    return [
        TokenLogprob(
            token=entry["token"],
            logprob=entry["logprob"],
            top=[(alt["token"], alt["logprob"]) for alt in entry.get("top_logprobs") or []],
        )
        for entry in payload["content"]
    ]


CONTENT_FILTERED = "no output: the provider's content filter stopped it (finish_reason=content_filter)"


def filtered_refusal(refusal: str | None, finish_reason: str | None, raw_text: str) -> str | None:
    """The model's refusal, or the content filter's when it stopped an empty output."""
    if refusal is None and finish_reason == "content_filter" and not raw_text.strip():
        return CONTENT_FILTERED
    return refusal
