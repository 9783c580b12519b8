"""The direct path to an OpenAI-compatible endpoint for a ChatOpenAI: its own request, its own client.

`request_body` is what ChatOpenAI itself would send for the messages and call arguments (model, generation
settings, model_kwargs / extra_body, message conversion: all its own). `post` sends it with the openai client
ChatOpenAI holds (timeouts, headers and error types are the SDK's). What is skipped is LangChain's callback
layer, its message objects for the reply and the thread hop it makes per call to build them; with LangSmith
tracing on, calls take the LangChain path so the traces keep them.

A reply body that is not a chat completion (not JSON, cut short, or JSON of another shape: the SDK hands
those back as a str, a list or an empty model rather than raising) raises `MalformedResponseError`, which
the client retries as a server fault; a completion whose content fails the output schema is the model's
answer and is returned as it is.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, TypeGuard

from langchain_core.messages import BaseMessage
from langchain_openai import ChatOpenAI
from langsmith.utils import tracing_is_enabled
from openai.types.chat import ChatCompletion

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


async def post(model: ChatOpenAI, body: dict[str, Any]) -> ChatCompletion:
    try:
        completion: object = await model.root_async_client.post(CHAT_COMPLETIONS_PATH, body=body,
                                                                cast_to=ChatCompletion)
    except json.JSONDecodeError as error:
        raise MalformedResponseError(f"the reply body is not JSON ({error})") from error
    if not _is_completion(completion):
        preview = repr(completion)
        preview = preview if len(preview) <= _PREVIEW_CHARS else f"{preview[:_PREVIEW_CHARS]}..."
        raise MalformedResponseError(f"the reply body is not a chat completion with a choice: {preview}")
    assert isinstance(completion, ChatCompletion)
    return completion


def _is_completion(reply: object) -> bool:
    """The SDK builds its models without validating them (`construct`): check the one part every reply has."""
    choices = getattr(reply, "choices", None) if isinstance(reply, ChatCompletion) else None
    return isinstance(choices, list) and bool(choices) and getattr(choices[0], "message", None) is not None


def _tool_arguments(text: str) -> str:
    """Valid JSON re-serialised (as the LangChain path stores it), anything else verbatim."""
    try:
        return json.dumps(json.loads(text), ensure_ascii=False)
    except ValueError:
        return text


def reply_from_completion(completion: ChatCompletion) -> ModelReply:
    choice = completion.choices[0] if completion.choices else None
    message = choice.message if choice is not None else None
    raw_text = ""
    if message is not None and message.tool_calls:
        function = getattr(message.tool_calls[0], "function", None)
        raw_text = _tool_arguments(function.arguments or "") if function is not None else ""
    elif message is not None:
        raw_text = message.content or ""
    finish_reason = choice.finish_reason if choice is not None else None
    usage = completion.usage
    return ModelReply(
        raw_text=raw_text,
        refusal=filtered_refusal(message.refusal if message is not None else None, finish_reason, raw_text),
        finish_reason=finish_reason,
        prompt_tokens=usage.prompt_tokens if usage else 0,
        completion_tokens=usage.completion_tokens if usage else 0,
        logprobs=token_logprobs(choice.logprobs.model_dump()) if choice is not None and choice.logprobs else None,
    )
