from __future__ import annotations

import pytest
from langchain_openai import ChatOpenAI
from pydantic import BaseModel

from ragcourt.llm.factory import MissingAPIKeyError, build_chat_model, build_client, chat_params
from ragcourt.llm.spec import ModelSpec, Provider, StructuredMethod


class Decision(BaseModel):
    label: str


def test_parse_openai_model_without_base_url() -> None:
    spec = ModelSpec.parse("openai:gpt-4o-mini")
    assert spec.provider is Provider.OPENAI
    assert spec.model == "gpt-4o-mini"
    assert spec.base_url is None
    assert spec.id == "openai:gpt-4o-mini"
    assert spec.endpoint == "https://api.openai.com/v1"
    assert spec.resolved_method is StructuredMethod.JSON_SCHEMA


def test_parse_model_at_base_url_normalises_trailing_slash() -> None:
    spec = ModelSpec.parse("openai:qwen2.5-7b@http://127.0.0.1:8000/v1/")
    assert spec.model == "qwen2.5-7b"
    assert spec.base_url == "http://127.0.0.1:8000/v1"
    assert spec.id == "openai:qwen2.5-7b@http://127.0.0.1:8000/v1"
    assert ModelSpec.parse(spec.id) == spec
    assert spec.resolved_method is StructuredMethod.FUNCTION_CALLING


def test_explicit_method_is_kept() -> None:
    spec = ModelSpec.parse("openai:qwen@http://127.0.0.1:8000/v1", method=StructuredMethod.JSON_MODE)
    assert spec.resolved_method is StructuredMethod.JSON_MODE
    assert spec.id == "openai:qwen@http://127.0.0.1:8000/v1"  # the method is not part of the model's id


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("gpt-4o-mini", "no 'provider:' prefix"),
        ("anthropic:claude", "unknown provider 'anthropic'"),
        ("openai:", "names no model"),
        ("openai:@http://127.0.0.1:8000/v1", "names no model"),
        ("openai:qwen@", "no base_url after it"),
        ("openai:qwen@127.0.0.1:8000", "not an http(s) URL"),
        ("openai:qwen@ftp://host/v1", "not an http(s) URL"),
        ("openai:my model", "whitespace"),
        ("openai:MODEL@URL", "model spec 'openai:MODEL@URL': base_url 'URL' is not an http(s) URL with a host; "),
        ("opnai:gpt-4o", "unknown provider 'opnai' (known: openai, local; did you mean 'openai'?)"),
        ("local:gema3-270m", "neither a .gguf file nor a bundled model (did you mean 'gemma3-270m'?)"),
    ],
)
def test_bad_spec_strings_name_the_problem_and_the_expected_forms(text: str, problem: str) -> None:
    """One line: the spec, what is wrong, the forms and valid examples; none of pydantic's wrapping (error
    count, type, input, a link to its docs)."""
    with pytest.raises(ValueError) as raised:
        ModelSpec.parse(text)
    message = str(raised.value)
    assert problem in message
    assert repr(text) in message or text in message
    assert "openai:<model>@http(s)://" in message
    assert message.endswith("e.g. openai:gpt-4o-mini, openai:qwen2.5-7b@http://127.0.0.1:8000/v1, local:gemma3-270m")
    assert "\n" not in message and "pydantic" not in message and "validation error" not in message


def test_base_url_endpoint_gets_placeholder_key_without_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = build_chat_model(ModelSpec.parse("openai:qwen@http://127.0.0.1:9/v1"), timeout_s=3.0)
    assert isinstance(model, ChatOpenAI)
    assert model.openai_api_key is not None
    assert model.openai_api_key.get_secret_value() == "not-needed"
    assert model.openai_api_base == "http://127.0.0.1:9/v1"
    assert model.max_retries == 0
    assert model.request_timeout == 3.0


def test_env_key_is_read_at_call_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    model = build_chat_model(ModelSpec.parse("openai:gpt-4o-mini"))
    assert isinstance(model, ChatOpenAI)
    assert model.openai_api_key is not None
    assert model.openai_api_key.get_secret_value() == "sk-from-env"
    assert model.openai_api_base == "https://api.openai.com/v1"


def test_argument_key_wins_over_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    model = build_chat_model(ModelSpec.parse("openai:gpt-4o-mini"), api_key="sk-argument")
    assert isinstance(model, ChatOpenAI)
    assert model.openai_api_key is not None
    assert model.openai_api_key.get_secret_value() == "sk-argument"


def test_openai_api_without_any_key_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(MissingAPIKeyError, match="api.openai.com.*OPENAI_API_KEY"):
        build_chat_model(ModelSpec.parse("openai:gpt-4o-mini"))


def test_logprob_settings_reach_the_model() -> None:
    spec = ModelSpec.parse("openai:qwen@http://127.0.0.1:9/v1")
    model = build_chat_model(spec, logprobs=True, top_logprobs=3, max_tokens=50)
    assert isinstance(model, ChatOpenAI)
    assert (model.logprobs, model.top_logprobs, model.max_tokens) == (True, 3, 50)
    with pytest.raises(ValueError, match="top_logprobs needs logprobs"):
        build_chat_model(spec, top_logprobs=3)


def test_build_client_wires_spec_method_and_params_and_keeps_the_key_out_of_the_cache_key() -> None:
    spec = ModelSpec.parse("openai:qwen@http://127.0.0.1:9/v1")
    first = build_client(
        spec, role="decomposer", api_key="key-one", temperature=0.0, logprobs=True, top_logprobs=2
    )
    second = build_client(
        spec, role="decomposer", api_key="key-two", temperature=0.0, logprobs=True, top_logprobs=2
    )
    assert first.model_id == spec.id
    assert first.role == "decomposer"
    assert first.method is StructuredMethod.FUNCTION_CALLING
    assert first.params == {"temperature": 0.0, "max_tokens": None, "logprobs": True, "top_logprobs": 2}
    assert first.params == chat_params(temperature=0.0, logprobs=True, top_logprobs=2)
    assert first.cache_key([], Decision) == second.cache_key([], Decision)
    hotter = build_client(spec, api_key="key-one", temperature=0.7)
    assert hotter.cache_key([], Decision) != first.cache_key([], Decision)
