"""The direct path to an OpenAI-compatible endpoint for a ChatOpenAI: its own request, its own client.

`request_body` is what ChatOpenAI itself would send for the messages and call arguments (model, generation
settings, model_kwargs / extra_body, message conversion: all its own). `post` sends it with the openai client
ChatOpenAI holds (timeouts, headers and error types are the SDK's). What is skipped is LangChain's callback
layer, its message objects for the reply and the thread hop it makes per call to build them; with LangSmith
tracing on, calls take the LangChain path so the traces keep them.

A reply body that is not a chat completion (not JSON, cut short, or JSON of another shape) raises
`MalformedResponseError`, which the client retries as a server fault; a completion whose content fails the
output schema is the model's answer and is returned as it is.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, TypeGuard

from langchain_core.messages import BaseMessage
from langchain_openai import ChatOpenAI
from langsmith.utils import tracing_is_enabled

from ragcourt.llm.reply import ModelReply, filtered_refusal, token_logprobs
from ragcourt.llm.retry import MalformedResponseError

CHAT_COMPLETIONS_PATH = "/chat/completions"
_PREVIEW_CHARS = 80


def is_direct(model: object) -> TypeGuard[ChatOpenAI]:
    """A ChatOpenAI on the Chat Completions API, unstreamed, while nobody traces: what the direct path sends
    the same as it. One set up for the Responses API or streaming keeps the LangChain path, and so does every
    call while LangSmith tracing is on (read per call), so that traces show the judges' calls too."""
    return (isinstance(model, ChatOpenAI) and not model.use_responses_api and not model.streaming
            and not tracing_is_enabled())


def request_body(model: ChatOpenAI, messages: Sequence[BaseMessage], kwargs: dict[str, Any]) -> dict[str, Any]:
    body = model._get_request_payload(list(messages), **kwargs)
    body.pop("stream", None)  # absent means no streaming; some servers reject the field
    return body


async def post(model: ChatOpenAI, body: dict[str, Any]) -> dict[str, Any]:
    """The reply's JSON. The SDK hands back the body's bytes (`cast_to=bytes`): building its reply model
    cost more than reading the few fields used here."""
    content = await model.root_async_client.post(CHAT_COMPLETIONS_PATH, body=body, cast_to=bytes)
    try:
        completion: object = json.loads(content)
    except ValueError as error:
        raise MalformedResponseError(f"the reply body is not JSON ({error})") from error
    if not _is_completion(completion):
        preview = repr(completion)
        preview = preview if len(preview) <= _PREVIEW_CHARS else f"{preview[:_PREVIEW_CHARS]}..."
        raise MalformedResponseError(f"the reply body is not a chat completion with a choice: {preview}")
    return completion


def _is_completion(reply: object) -> TypeGuard[dict[str, Any]]:
    """The part every chat completion has: a first choice with a message."""
    choices = reply.get("choices") if isinstance(reply, dict) else None
    return (isinstance(choices, list) and bool(choices) and isinstance(choices[0], dict)
            and isinstance(choices[0].get("message"), dict))


def _tool_arguments(text: str) -> str:
    """Valid JSON re-serialised (as the LangChain path stores it), anything else verbatim."""
    try:
        return json.dumps(json.loads(text), ensure_ascii=False)
    except ValueError:
        return text


def reply_from_completion(completion: dict[str, Any]) -> ModelReply:
    """What `post` returned, as the client's reply: the first choice's tool call arguments or content."""
    choice = completion["choices"][0]
    message = choice["message"]
    tool_calls = message.get("tool_calls") or ()
    if tool_calls:
        function = tool_calls[0].get("function") if isinstance(tool_calls[0], dict) else None
        raw_text = _tool_arguments(function.get("arguments") or "") if isinstance(function, dict) else ""
    else:
        raw_text = message.get("content") or ""
    finish_reason = choice.get("finish_reason")
    usage = completion.get("usage") or {}
    return ModelReply(
        raw_text=raw_text,
        refusal=filtered_refusal(message.get("refusal"), finish_reason, raw_text),
        finish_reason=finish_reason,
        prompt_tokens=usage.get("prompt_tokens") or 0,
        completion_tokens=usage.get("completion_tokens") or 0,
        logprobs=token_logprobs(choice.get("logprobs")),
    )
