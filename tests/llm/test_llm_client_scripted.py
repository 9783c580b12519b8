"""LLMClient with the in-process ScriptedChatModel: repair flows and programmer errors."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fakes.scripted_model import ScriptedChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from ragcourt.llm.cache import MemoryCache
from ragcourt.llm.client import LLMClient
from ragcourt.llm.spec import StructuredMethod
from ragcourt.schema import TokenUsage, UnscoredReason, VerdictStatus

MakeModel = Callable[..., ScriptedChatModel]
QUESTION = [HumanMessage(content="Is Paris in France?")]  # 19 characters: 4 prompt tokens


class Verdict(BaseModel):
    label: str = Field(pattern="^(yes|no)$")
    confidence: float = Field(ge=0.0, le=1.0)


def client(
    model: ScriptedChatModel, method: StructuredMethod = StructuredMethod.FUNCTION_CALLING
) -> LLMClient:
    return LLMClient(model, model_id="scripted:judge", method=method)


async def test_builders_answer_by_schema_name(scripted_model: MakeModel) -> None:
    model = scripted_model(builders={"Verdict": lambda request: {"label": "yes", "confidence": 0.9}})
    result = await client(model).structured_call(QUESTION, Verdict)

    assert result.value == Verdict(label="yes", confidence=0.9)
    assert model.calls == 1
    assert model.requests[0].tool_name == "Verdict"
    # '{"label": "yes", "confidence": 0.9}' is 35 characters: 8 completion tokens
    assert result.usage == TokenUsage(prompt_tokens=4, completion_tokens=8, calls=1)


@pytest.mark.parametrize("method", [m for m in StructuredMethod if m is not StructuredMethod.AUTO])
async def test_invalid_then_valid_output_is_repaired_once(
    scripted_model: MakeModel, method: StructuredMethod
) -> None:
    model = scripted_model(
        script=['{"label": "perhaps", "confidence": 0.5}', {"label": "no", "confidence": 0.5}]
    )
    result = await client(model, method).structured_call(QUESTION, Verdict)

    assert result.status is VerdictStatus.OK
    assert result.value == Verdict(label="no", confidence=0.5)
    assert (model.calls, result.attempts) == (2, 2)
    repair = model.requests[1].messages
    original = [m for m in repair if not isinstance(m, SystemMessage)]  # JSON mode adds the schema
    assert original[0] == QUESTION[0]
    assert (
        isinstance(original[1], AIMessage)
        and original[1].content == '{"label": "perhaps", "confidence": 0.5}'
    )
    assert isinstance(original[2], HumanMessage)
    assert "label: String should match pattern '^(yes|no)$'" in str(original[2].content)


async def test_two_invalid_outputs_end_parse_failure_with_the_last_raw_text(
    scripted_model: MakeModel,
) -> None:
    model = scripted_model(script=['{"label": "yes"}', '{"label": "yes", "confidence": 7}'])
    result = await client(model).structured_call(QUESTION, Verdict)

    assert (result.status, result.reason) == (VerdictStatus.UNSCORED, UnscoredReason.PARSE_FAILURE)
    assert result.value is None
    assert result.raw_text == '{"label": "yes", "confidence": 7}'
    assert result.detail == "confidence: Input should be less than or equal to 1"
    assert model.calls == 2


async def test_broken_tool_arguments_are_kept_verbatim(scripted_model: MakeModel) -> None:
    model = scripted_model(script=['{"label": "yes", "conf', '{"label": "yes", "conf'])
    result = await client(model).structured_call(QUESTION, Verdict)
    assert result.reason is UnscoredReason.PARSE_FAILURE
    assert result.raw_text == '{"label": "yes", "conf'


async def test_empty_output_is_a_parse_problem(scripted_model: MakeModel) -> None:
    model = scripted_model(script=["", ""])
    result = await client(model, StructuredMethod.JSON_SCHEMA).structured_call(QUESTION, Verdict)
    assert (result.reason, result.detail, model.calls) == (
        UnscoredReason.PARSE_FAILURE,
        "the output was empty",
        2,
    )


async def test_a_code_fenced_json_answer_is_accepted(scripted_model: MakeModel) -> None:
    model = scripted_model(script=['```json\n{"label": "yes", "confidence": 1.0}\n```'])
    result = await client(model, StructuredMethod.JSON_MODE).structured_call(QUESTION, Verdict)
    assert result.value == Verdict(label="yes", confidence=1.0)
    assert model.calls == 1


async def test_raw_newlines_inside_json_strings_are_read_without_a_repair(scripted_model: MakeModel) -> None:
    """SmolLM2 through llama.cpp's server wrote a rationale over two lines: invalid JSON, unambiguous."""
    model = scripted_model(script=['{"label": "yes",\n "why": "line one\nline two\tand a tab", "confidence": 1}',
                                   '{"label": "maybe", "confidence": 1}\n\n', '{"label": "no", "confidence": 0}'])
    result = await client(model, StructuredMethod.JSON_MODE).structured_call(QUESTION, Verdict)
    assert result.value == Verdict(label="yes", confidence=1.0) and model.calls == 1
    # leniency covers the syntax only: a wrong value is still repaired
    repaired = await client(model, StructuredMethod.JSON_MODE).structured_call(QUESTION, Verdict)
    assert repaired.value == Verdict(label="no", confidence=0.0) and model.calls == 3


async def test_json_mode_prepends_a_system_message_when_there_is_none(scripted_model: MakeModel) -> None:
    model = scripted_model(builders={"Verdict": lambda request: {"label": "no", "confidence": 0.0}})
    result = await client(model, StructuredMethod.JSON_MODE).structured_call(QUESTION, Verdict)

    assert result.value == Verdict(label="no", confidence=0.0)
    sent = model.requests[0]
    assert sent.schema_name == "Verdict"  # found from the schema's title in the system message
    assert sent.response_format == {"type": "json_object"}
    assert isinstance(sent.messages[0], SystemMessage) and sent.messages[1] == QUESTION[0]


async def test_a_corrupt_cache_entry_is_a_miss_and_is_replaced(scripted_model: MakeModel) -> None:
    model = scripted_model(builders={"Verdict": lambda request: {"label": "yes", "confidence": 0.5}})
    cache = MemoryCache()
    llm = LLMClient(model, model_id="scripted:judge", cache=cache)
    key = llm.cache_key(QUESTION, Verdict)
    cache.cache_put(key, "not what the client stores")

    result = await llm.structured_call(QUESTION, Verdict)
    assert (result.status, result.cached, model.calls) == (VerdictStatus.OK, False, 1)
    again = await llm.structured_call(QUESTION, Verdict)
    assert (again.cached, model.calls) == (True, 1)


async def test_cache_key_covers_model_params_schema_and_method(scripted_model: MakeModel) -> None:
    model = scripted_model()

    class Other(BaseModel):
        label: str

    base = LLMClient(model, model_id="m", params={"temperature": 0.0})
    key = base.cache_key(QUESTION, Verdict)
    assert len(key) == 64 and key == base.cache_key(list(QUESTION), Verdict)
    assert key != LLMClient(model, model_id="m2", params={"temperature": 0.0}).cache_key(QUESTION, Verdict)
    assert key != LLMClient(model, model_id="m", params={"temperature": 0.5}).cache_key(QUESTION, Verdict)
    assert key != base.cache_key(QUESTION, Other)
    assert key != LLMClient(
        model, model_id="m", params={"temperature": 0.0}, method=StructuredMethod.JSON_SCHEMA
    ).cache_key(QUESTION, Verdict)
    assert key != base.cache_key([SystemMessage(content="Is Paris in France?")], Verdict)  # role counts


async def test_programmer_errors_raise(scripted_model: MakeModel) -> None:
    model = scripted_model()
    with pytest.raises(ValueError, match="resolve AUTO"):
        LLMClient(model, model_id="m", method=StructuredMethod.AUTO)
    with pytest.raises(TypeError, match="pydantic model class"):
        await LLMClient(model, model_id="m").structured_call(QUESTION, dict)  # type: ignore[type-var]


class ProviderToolsModel(ScriptedChatModel):
    """A LangChain chat model of another provider: its bind_tools turns OpenAI tools into its own format."""

    bound: list[tuple[list[str], object, dict]] = Field(default_factory=list)

    def bind_tools(self, tools, *, tool_choice=None, **kwargs):  # type: ignore[no-untyped-def]
        self.bound.append(([t["function"]["name"] for t in tools], tool_choice, kwargs))
        return super().bind_tools(tools, tool_choice=tool_choice, **kwargs)


async def test_other_chat_models_get_tools_through_their_own_bind_tools() -> None:
    """Only ChatOpenAI takes the direct request path; any other model is bound the LangChain way, so a
    provider's own tool format (Anthropic's, Bedrock's...) is what it receives."""
    model = ProviderToolsModel(builders={"Verdict": lambda request: {"label": "no", "confidence": 0.2}})
    result = await LLMClient(model, model_id="provider:judge", params={"logprobs": True, "top_logprobs": 3}
                             ).structured_call(QUESTION, Verdict)
    assert result.value == Verdict(label="no", confidence=0.2)
    assert model.bound == [(["Verdict"], "Verdict", {"logprobs": True, "top_logprobs": 3})]
