"""The one place every LLM call goes through: structured output, cache, retries, limits, usage.

`LLMClient.structured_call(messages, schema)` asks the model for one instance of a pydantic schema
and always returns a `StructuredResult`, never raising for model or transport problems:

- OK with the validated value; or UNSCORED with a reason: PARSE_FAILURE (the output did not validate,
  even after one repair call that showed the model its validation error), REFUSAL, TIMEOUT (retries
  used up on timeouts), ERROR (any other transport or API failure, with the detail). A reply body that is
  not the API's JSON (garbage, cut short) is such a failure, retried like a 5xx; only a well-formed reply
  whose content fails the schema is a PARSE_FAILURE.
- The raw text of the model's output is always kept: tool-call arguments (re-serialised from the
  parsed arguments when they were valid JSON, verbatim when not) or message content.

Caching is per model call: the key covers model id, params, the conversation sent (role + content),
the output schema and the method. Every completed response is cached (valid, invalid, refused or cut
off: at temperature 0 they are what the model says), errors never are. So a re-run repeats no HTTP
call that already completed, including the first call of an interrupted repair.

Tracing: when a run traces (CALL_OBSERVER below, set by observability.telemetry), each structured call is one
span around the whole call, told its result; otherwise the hook costs one context-variable read.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable
from pydantic import BaseModel, ConfigDict, ValidationError

from ragcourt.llm import openai_wire
from ragcourt.llm.cache import LLMCache, cache_key
from ragcourt.llm.failures import cause_of
from ragcourt.llm.limits import EndpointLimiter
from ragcourt.llm.reply import ModelReply, TokenLogprob, filtered_refusal, token_logprobs
from ragcourt.llm.retry import (
    DEFAULT_RETRY,
    MalformedResponseError,
    RetryPolicy,
    call_with_retries,
    is_timeout,
)
from ragcourt.llm.sent_schema import openai_tool, sent_schema
from ragcourt.llm.spec import StructuredMethod
from ragcourt.llm.usage import UsageMeter
from ragcourt.schema import TokenUsage, UnscoredReason, VerdictStatus

T = TypeVar("T", bound=BaseModel)

JSON_MODE_INSTRUCTION = "Reply with one JSON object, and nothing else, that conforms to this JSON schema:"


class StructuredResult(BaseModel, Generic[T]):
    model_config = ConfigDict(frozen=True, extra="forbid")

    value: T | None
    status: VerdictStatus
    reason: UnscoredReason | None = None
    detail: str | None = None
    raw_text: str | None = None
    usage: TokenUsage
    latency_s: float
    cached: bool
    model_id: str
    logprobs: list[TokenLogprob] | None = None
    attempts: int

    @property
    def ok(self) -> bool:
        return self.status is VerdictStatus.OK


@dataclass(frozen=True)
class _Exchange:
    """One model call as the client saw it: a reply (from HTTP or the cache) or the error."""

    reply: ModelReply | None
    error: BaseException | None = None
    cached: bool = False
    attempts: int = 0


def output_schema_name(schema: type[BaseModel]) -> str:
    """The name the model sees for the schema: the tool name, or the json_schema name."""
    return str(openai_tool(schema)["function"]["name"])


def _text_of(content: str | list[Any]) -> str:
    if isinstance(content, str):
        return content
    parts = [
        block if isinstance(block, str) else str(block.get("text", ""))
        for block in content
        if isinstance(block, str) or block.get("type") in ("text", "output_text")
    ]
    return "".join(parts)


def _refusal_of(message: BaseMessage) -> str | None:
    refusal = message.additional_kwargs.get("refusal")
    if refusal:
        return str(refusal)
    if isinstance(message.content, list):
        for block in message.content:
            if isinstance(block, dict) and block.get("type") == "refusal" and block.get("refusal"):
                return str(block["refusal"])
    return None


def _raw_output(message: BaseMessage) -> str:
    if isinstance(message, AIMessage):
        if message.tool_calls:
            return json.dumps(message.tool_calls[0]["args"], ensure_ascii=False)
        if message.invalid_tool_calls:
            return message.invalid_tool_calls[0].get("args") or ""
    return _text_of(message.content)


def _reply_from_message(message: BaseMessage) -> ModelReply:
    finish_reason = message.response_metadata.get("finish_reason")
    raw_text = _raw_output(message)
    refusal = filtered_refusal(_refusal_of(message), finish_reason, raw_text)
    usage = getattr(message, "usage_metadata", None) or {}
    return ModelReply(
        raw_text=raw_text,
        refusal=refusal,
        finish_reason=finish_reason,
        prompt_tokens=usage.get("input_tokens", 0),
        completion_tokens=usage.get("output_tokens", 0),
        logprobs=token_logprobs(message.response_metadata.get("logprobs")),
    )


def _strip_code_fence(text: str) -> str:
    stripped = text.strip()
    if stripped.startswith("```") and stripped.endswith("```") and len(stripped) > 6:
        first_newline = stripped.find("\n")
        return stripped[first_newline + 1 : -3] if first_newline != -1 else stripped[3:-3]
    return stripped


def _describe(error: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(part) for part in issue['loc']) or '<root>'}: {issue['msg']}"
        for issue in error.errors(include_url=False)
    )


def _is_json_syntax(error: ValidationError) -> bool:
    return any(issue["type"] == "json_invalid" for issue in error.errors(include_url=False))


def _json_with_raw_control_characters(text: str) -> Any:
    """Small models write literal newlines and tabs inside JSON strings (invalid JSON, unambiguous meaning):
    read them as Python's json does with strict=False instead of spending a repair call. None if still invalid."""
    try:
        return json.loads(text, strict=False)
    except json.JSONDecodeError:
        return None


def _validate(reply: ModelReply, schema: type[T]) -> tuple[T | None, str | None]:
    """The validated value, or None and what was wrong, in words the model can act on."""
    if not reply.raw_text.strip():
        problem = "the output was empty"
    else:
        text = _strip_code_fence(reply.raw_text)
        try:
            return schema.model_validate_json(text), None
        except ValidationError as error:
            problem = _describe(error)
            lenient = _json_with_raw_control_characters(text) if _is_json_syntax(error) else None
            if lenient is not None:
                try:
                    return schema.model_validate(lenient), None
                except ValidationError as second:
                    problem = _describe(second)
    if reply.finish_reason == "length":
        problem = f"the output was cut off at the token limit (finish_reason=length): {problem}"
    return None, problem


def _repair_request(problem: str) -> HumanMessage:
    return HumanMessage(
        content=(
            "Your previous output could not be used: it does not match the required schema.\n"
            f"Validation errors: {problem}\n"
            "Reply again with the corrected output only: exactly one JSON object that conforms "
            "to the schema, with no other text."
        )
    )


def _with_json_mode_instruction(messages: list[BaseMessage], schema: type[BaseModel]) -> list[BaseMessage]:
    # Compact separators too: here the schema is message text, every space of it sent (a tool's or json_schema's
    # JSON is laid out by the HTTP client).
    schema_text = json.dumps(sent_schema(schema), ensure_ascii=False, separators=(",", ":"))
    instruction = f"{JSON_MODE_INSTRUCTION}\n{schema_text}"
    if messages and isinstance(messages[0], SystemMessage) and isinstance(messages[0].content, str):
        # Merge rather than add a second system message: some local chat templates allow only one.
        return [SystemMessage(content=f"{messages[0].content}\n\n{instruction}"), *messages[1:]]
    return [SystemMessage(content=instruction), *messages]


class CallObserver(Protocol):
    def llm_call(
        self, client: LLMClient, schema: type[BaseModel]
    ) -> AbstractContextManager[Callable[[StructuredResult[Any]], None]]:
        """Entered for the whole call (repair and retries included); the callable it gives is handed the
        call's result before it exits. An exception leaving the call passes through it."""
        ...


# A context variable: the observer set around one sample reaches every call made under it (LangGraph's node
# tasks and asyncio.gather copy the context) and no other sample's. Unset (the default), a call pays one
# `ContextVar.get` and nothing is imported.
CALL_OBSERVER: ContextVar[CallObserver | None] = ContextVar("ragcourt_llm_call_observer", default=None)


class LLMClient:
    def __init__(
        self,
        model: BaseChatModel,
        *,
        model_id: str,
        role: str = "judge",
        method: StructuredMethod = StructuredMethod.FUNCTION_CALLING,
        cache: LLMCache | None = None,
        limiter: EndpointLimiter | None = None,
        usage: UsageMeter | None = None,
        retry: RetryPolicy = DEFAULT_RETRY,
        params: dict[str, Any] | None = None,
    ):
        if method is StructuredMethod.AUTO:
            raise ValueError("LLMClient needs a concrete method: resolve AUTO with ModelSpec.resolved_method")
        self.model = model
        self.model_id = model_id
        self.role = role
        self.method = method
        self.params = dict(params or {})
        self._cache = cache
        self._limiter = limiter
        self._usage = usage
        self._retry = retry

    def cache_key(self, messages: Sequence[BaseMessage], schema: type[BaseModel]) -> str:
        sent = {"name": output_schema_name(schema), "schema": sent_schema(schema)}
        return cache_key(model_id=self.model_id, params=self.params, messages=messages, schema=sent, method=self.method)

    async def structured_call(self, messages: Sequence[BaseMessage], schema: type[T]) -> StructuredResult[T]:
        if not (isinstance(schema, type) and issubclass(schema, BaseModel)):
            raise TypeError(f"schema must be a pydantic model class, got {schema!r}")
        observer = CALL_OBSERVER.get()
        if observer is None:  # nobody traces: no span, nothing imported
            return await self._structured_call(messages, schema)
        with observer.llm_call(self, schema) as record:
            result = await self._structured_call(messages, schema)
            record(result)
        return result

    async def _structured_call(self, messages: Sequence[BaseMessage], schema: type[T]) -> StructuredResult[T]:
        started = time.perf_counter()
        conversation = list(messages)
        exchanges = [await self._exchange(conversation, schema)]
        reply = exchanges[-1].reply
        if reply is None or reply.refusal is not None:
            return self._finish(schema, exchanges, started, value=None, problem=None)
        value, problem = _validate(reply, schema)
        if value is None:
            assert problem is not None
            repair = [*conversation, AIMessage(content=reply.raw_text), _repair_request(problem)]
            exchanges.append(await self._exchange(repair, schema))
            reply = exchanges[-1].reply
            if reply is not None and reply.refusal is None:
                value, problem = _validate(reply, schema)
        return self._finish(schema, exchanges, started, value=value, problem=problem)

    # ------------------------------------------------------------------ one model call

    async def _exchange(self, conversation: list[BaseMessage], schema: type[BaseModel]) -> _Exchange:
        key = self.cache_key(conversation, schema)
        if self._cache is not None:
            stored = await self._cache.acache_get(key)
            if stored is not None:
                try:
                    return _Exchange(reply=ModelReply.model_validate_json(stored), cached=True)
                except ValidationError:
                    pass  # an entry from another format: call again, the put below replaces it
        attempted = await call_with_retries(self._retry, lambda: self._send(conversation, schema))
        if attempted.value is None:
            return _Exchange(reply=None, error=attempted.error, attempts=attempted.attempts)
        if self._cache is not None:
            await self._cache.acache_put(key, attempted.value.model_dump_json())
        return _Exchange(reply=attempted.value, attempts=attempted.attempts)

    def _request_kwargs(self, schema: type[BaseModel]) -> dict[str, Any]:
        """What the request adds for the schema and method, in the Chat Completions API's own terms."""
        name = output_schema_name(schema)
        kwargs: dict[str, Any]
        if self.method is StructuredMethod.FUNCTION_CALLING:
            kwargs = {"tools": [openai_tool(schema)], "tool_choice": {"type": "function", "function": {"name": name}}}
        elif self.method is StructuredMethod.JSON_SCHEMA:
            kwargs = {"response_format": {
                "type": "json_schema", "json_schema": {"name": name, "schema": sent_schema(schema), "strict": False},
            }}
        else:
            kwargs = {"response_format": {"type": "json_object"}}
        if self.params.get("logprobs"):
            top = self.params.get("top_logprobs")
            kwargs |= {"logprobs": True, **({"top_logprobs": top} if top else {})}
        return kwargs

    async def _send(self, conversation: list[BaseMessage], schema: type[BaseModel]) -> ModelReply:
        sent = (
            _with_json_mode_instruction(conversation, schema)
            if self.method is StructuredMethod.JSON_MODE
            else conversation
        )
        kwargs = self._request_kwargs(schema)
        if openai_wire.is_direct(self.model):
            # The request ChatOpenAI would send, posted by the openai client it holds: the endpoint slot is
            # held for the HTTP exchange only, without LangChain's callback layer and its thread hop per call
            # (measured in docs/BENCHMARKS.md). Errors are the openai SDK's own, so retries classify them as before.
            body = openai_wire.request_body(self.model, sent, kwargs)
            async with self._limiter if self._limiter is not None else contextlib.nullcontext():
                completion = await openai_wire.post(self.model, body)
            return openai_wire.reply_from_completion(completion)
        runnable = self._bound_model(schema, kwargs)
        async with self._limiter if self._limiter is not None else contextlib.nullcontext():
            try:
                message = await runnable.ainvoke(sent)
            except json.JSONDecodeError as error:  # the provider's client could not read the reply's body
                raise MalformedResponseError(f"the reply body is not JSON ({error})") from error
        return _reply_from_message(message)

    def _bound_model(self, schema: type[BaseModel], kwargs: dict[str, Any]) -> Runnable[Any, BaseMessage]:
        """Any other LangChain chat model: tools through its own bind_tools, which turns the OpenAI tool into
        the provider's format (a plain bind would hand it OpenAI's)."""
        if self.method is StructuredMethod.FUNCTION_CALLING:
            rest = {key: value for key, value in kwargs.items() if key not in ("tools", "tool_choice")}
            return self.model.bind_tools(kwargs["tools"], tool_choice=output_schema_name(schema), **rest)
        return self.model.bind(**kwargs)

    # ------------------------------------------------------------------ the result

    def _finish(
        self,
        schema: type[T],
        exchanges: list[_Exchange],
        started: float,
        *,
        value: T | None,
        problem: str | None,
    ) -> StructuredResult[T]:
        usage = TokenUsage()
        for exchange in exchanges:
            if exchange.reply is None:
                continue
            if exchange.cached:
                usage += TokenUsage(cached_calls=1)
            else:
                usage += TokenUsage(
                    prompt_tokens=exchange.reply.prompt_tokens,
                    completion_tokens=exchange.reply.completion_tokens,
                    calls=1,
                )
        if self._usage is not None:
            self._usage.record(self.model_id, self.role, usage)

        last = exchanges[-1]
        reply = last.reply
        status, reason, detail = VerdictStatus.OK, None, None
        if reply is None:
            assert last.error is not None
            status = VerdictStatus.UNSCORED
            reason = UnscoredReason.TIMEOUT if is_timeout(last.error) else UnscoredReason.ERROR
            # The cause first: "Connection error." alone does not say the server is down or the key refused.
            cause = cause_of(last.error)
            detail = (f"{f'{cause}: ' if cause else ''}{type(last.error).__name__}: {last.error} "
                      f"(after {last.attempts} attempt(s))")
        elif reply.refusal is not None:
            status, reason, detail = VerdictStatus.UNSCORED, UnscoredReason.REFUSAL, reply.refusal
        elif value is None:
            status, reason, detail = VerdictStatus.UNSCORED, UnscoredReason.PARSE_FAILURE, problem

        raw_text = next((e.reply.raw_text for e in reversed(exchanges) if e.reply is not None), None)
        if reply is not None and reply.refusal is not None and not raw_text:
            raw_text = reply.refusal
        # Unparametrized: StructuredResult[schema] costs a class lookup per call, and the value is validated
        # against its schema already.
        return StructuredResult(
            value=value,
            status=status,
            reason=reason,
            detail=detail,
            raw_text=raw_text,
            usage=usage,
            latency_s=time.perf_counter() - started,
            cached=all(e.cached for e in exchanges),
            model_id=self.model_id,
            logprobs=reply.logprobs if reply is not None else None,
            attempts=sum(e.attempts for e in exchanges),
        )
