"""A LangChain chat model that answers by output schema name, in process, with no HTTP.

    model = ScriptedChatModel(builders={"Decision": lambda req: {"label": "yes"}})
    model = ScriptedChatModel(script=["{not json", {"label": "no"}])   # repair tests

Each call takes the next `script` item if any is left, else asks `builders[schema_name]`. A dict is
the structured output; a str is the raw output (tool-call arguments when a tool is bound, content
otherwise). The schema name is the bound tool's name, the response_format json_schema name, or in
JSON mode the title of the JSON schema found in a system message. `calls` and `requests` record
every call. Usage is counted like the fake server: message characters // 4, output characters // 4.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field, PrivateAttr

from fakes.schema_text import find_json_schema


@dataclass(frozen=True)
class ScriptedRequest:
    messages: list[BaseMessage]
    schema_name: str | None
    tool_name: str | None
    response_format: dict[str, Any] | None
    kwargs: dict[str, Any]


def _content_text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(p if isinstance(p, str) else str(p.get("text", "")) for p in content)


def _schema_name(messages: Sequence[BaseMessage], kwargs: dict[str, Any]) -> tuple[str | None, str | None]:
    tools = kwargs.get("tools") or []
    if tools:
        name = tools[0]["function"]["name"]
        return name, name
    response_format = kwargs.get("response_format") or {}
    if response_format.get("type") == "json_schema":
        return response_format.get("json_schema", {}).get("name"), None
    if response_format.get("type") == "json_object":
        for message in messages:
            if isinstance(message, SystemMessage):
                schema = find_json_schema(_content_text(message))
                if schema is not None:
                    return schema.get("title"), None
    return None, None


class ScriptedChatModel(BaseChatModel):
    builders: dict[str, Callable[[ScriptedRequest], dict[str, Any] | str]] = Field(default_factory=dict)
    script: list[dict[str, Any] | str] = Field(default_factory=list)
    requests: list[ScriptedRequest] = Field(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def calls(self) -> int:
        return len(self.requests)

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: str | dict[str, Any] | None = None, **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], tool_choice=tool_choice, **kwargs)

    def _answer(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> ChatResult:
        schema_name, tool_name = _schema_name(messages, kwargs)
        request = ScriptedRequest(
            messages=list(messages),
            schema_name=schema_name,
            tool_name=tool_name,
            response_format=kwargs.get("response_format"),
            kwargs=dict(kwargs),
        )
        with self._lock:
            self.requests.append(request)
            scripted = self.script.pop(0) if self.script else None
        if scripted is None:
            if schema_name not in self.builders:
                raise LookupError(
                    f"no builder for output schema {schema_name!r}; builders: {sorted(self.builders)}"
                )
            scripted = self.builders[schema_name](request)
        text = scripted if isinstance(scripted, str) else json.dumps(scripted)

        if tool_name is not None:
            call_id = f"call_{len(self.requests)}"
            try:
                args = json.loads(text)
            except json.JSONDecodeError as error:
                args = None
                problem = str(error)
            if isinstance(args, dict):
                message = AIMessage(content="", tool_calls=[{"name": tool_name, "args": args, "id": call_id}])
            else:
                message = AIMessage(
                    content="",
                    invalid_tool_calls=[
                        {
                            "type": "invalid_tool_call",
                            "name": tool_name,
                            "args": text,
                            "id": call_id,
                            "error": problem if args is None else "arguments are not a JSON object",
                        }
                    ],
                )
        else:
            message = AIMessage(content=text)
        prompt_tokens = sum(len(_content_text(m)) for m in messages) // 4
        completion_tokens = len(text) // 4
        message.usage_metadata = {
            "input_tokens": prompt_tokens,
            "output_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        message.response_metadata = {"finish_reason": "stop"}
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._answer(messages, kwargs)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._answer(messages, kwargs)
