"""llm.probe: one GET {base_url}/models per endpoint before a run, against real servers on 127.0.0.1 (a closed
port, FakeOpenAIServer, a server answering one status, one that never answers), and the checks that need no
request (api.openai.com's key, a local model's file)."""

from __future__ import annotations

import socket

import pytest
from fakes.openai_server import MODELS_PATH, FakeOpenAIServer
from fakes.status_server import answering, closed_port

from ragcourt.llm import local
from ragcourt.llm.probe import EndpointFailure, EndpointUnavailableError, probe, static_failure
from ragcourt.llm.spec import ModelSpec


async def test_a_closed_port_is_connection_refused() -> None:
    port = closed_port()
    found = await probe(ModelSpec.parse(f"openai:j@http://127.0.0.1:{port}/v1"), timeout_s=2.0)
    assert found == (f"http://127.0.0.1:{port}/v1/models", "connection refused")


async def test_the_fake_server_answers_its_models_list() -> None:
    with FakeOpenAIServer() as server:
        assert await probe(ModelSpec.parse(f"openai:fake-model@{server.base_url}")) is None
        assert server.count(MODELS_PATH) == 1 and server.count() == 1  # one GET, no chat call


@pytest.mark.parametrize(("status", "expected"), [
    (401, "401 Unauthorized"), (403, "403 Forbidden"),
    (404, None), (405, None),  # no /models route: the server answered, which is all the probe asks
    (200, None),
])
async def test_only_a_refused_key_fails_among_answers(status: int, expected: str | None) -> None:
    with answering(status) as (url, asked):
        found = await probe(ModelSpec.parse(f"openai:m@{url}"))
    assert asked == ["/v1/models"]
    assert found == (None if expected is None else (f"{url}/models", expected))


async def test_a_server_that_never_answers_times_out() -> None:
    with socket.socket() as listening:  # accepts connections (the kernel's backlog) and never replies
        listening.bind(("127.0.0.1", 0))
        listening.listen(1)
        port = listening.getsockname()[1]
        found = await probe(ModelSpec.parse(f"openai:m@http://127.0.0.1:{port}/v1"), timeout_s=0.2)
    assert found == (f"http://127.0.0.1:{port}/v1/models", "timed out")


async def test_api_openai_com_without_a_key_is_refused_without_a_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    spec = ModelSpec.parse("openai:gpt-4o-mini")
    expected = ("https://api.openai.com/v1", "no API key: set OPENAI_API_KEY")
    assert static_failure(spec) == expected
    assert await probe(spec) == expected  # the network guard fails the test had it connected


async def test_a_local_model_is_checked_by_its_file(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setattr(local, "llama_cpp_available", lambda: True)
    missing = tmp_path / "nope.gguf"
    spec = ModelSpec.parse(f"local:{missing}")
    assert await probe(spec) == (spec.id, f"{spec.id}: no model file at {missing}")
    missing.write_bytes(b"GGUF")
    assert await probe(spec) is None
    monkeypatch.setattr(local, "llama_cpp_available", lambda: False)
    found = await probe(spec)
    assert found is not None and found[1].startswith("local models need llama-cpp-python")


def test_the_error_is_one_line_per_endpoint() -> None:
    error = EndpointUnavailableError((
        EndpointFailure("judge 'j' and decomposer", "http://127.0.0.1:1/v1/models", "connection refused"),
        EndpointFailure("answerer", "https://api.openai.com/v1", "no API key: set OPENAI_API_KEY"),
    ))
    assert str(error).splitlines() == [
        "judge 'j' and decomposer cannot use http://127.0.0.1:1/v1/models: connection refused",
        "answerer cannot use https://api.openai.com/v1: no API key: set OPENAI_API_KEY",
    ]
