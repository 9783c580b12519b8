"""The test infrastructure itself: the network guard and the fake server's own endpoints."""

from __future__ import annotations

import contextlib
import json
import socket
import urllib.request

import pytest
from fakes.network_guard import NetworkBlockedError, NetworkGuard, is_loopback_host
from fakes.openai_server import (
    CHAT_PATH,
    EMBEDDINGS_PATH,
    MODELS_PATH,
    FakeOpenAIServer,
    FaultPlan,
    malformed_json,
    status_500,
)

# Taken at import, before any fixture patches socket: the guard tests below must never make a real
# connect to a non-loopback address, so they first check that the guard is in place.
_UNGUARDED = (socket.socket.connect, socket.socket.connect_ex, socket.create_connection)


def assert_guard_installed() -> None:
    guarded = (socket.socket.connect, socket.socket.connect_ex, socket.create_connection)
    assert all(now is not before for now, before in zip(guarded, _UNGUARDED, strict=True))


def test_the_guard_blocks_a_connect_to_a_private_address(network_guard: NetworkGuard) -> None:
    assert_guard_installed()
    with pytest.raises(NetworkBlockedError, match=r"network guard: .*10\.0\.0\.1"):
        socket.create_connection(("10.0.0.1", 80), timeout=0.1)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        with pytest.raises(NetworkBlockedError, match="tests may only reach 127.0.0.0/8"):
            sock.connect(("10.0.0.1", 443))
        with pytest.raises(NetworkBlockedError):
            sock.connect_ex(("192.0.2.1", 80))
    assert len(network_guard.acknowledge()) == 3  # taken, so teardown does not fail this test


def test_the_guard_blocks_even_when_the_caller_swallows_the_error(network_guard: NetworkGuard) -> None:
    assert_guard_installed()
    with contextlib.suppress(Exception):  # what careless code would do
        urllib.request.urlopen("http://10.0.0.1/", timeout=0.1)
    assert any("10.0.0.1" in v for v in network_guard.acknowledge())


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("127.0.0.1", True),
        ("127.3.4.5", True),
        ("::1", True),
        ("::ffff:127.0.0.1", True),
        ("localhost", True),
        ("10.0.0.1", False),
        ("192.168.1.1", False),
        ("8.8.8.8", False),
        ("api.openai.com", False),
        ("0.0.0.0", False),
    ],
)
def test_loopback_hosts(host: str, allowed: bool) -> None:
    assert is_loopback_host(host) is allowed


def test_the_guard_lets_loopback_through(openai_server: FakeOpenAIServer) -> None:
    with urllib.request.urlopen(f"{openai_server.base_url}/models", timeout=5) as response:
        listing = json.load(response)
    assert [m["id"] for m in listing["data"]] == ["fake-model"]
    assert openai_server.count(MODELS_PATH) == 1


def post(server: FakeOpenAIServer, path: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{server.port}{path}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def test_embeddings_are_deterministic_unit_vectors(openai_server: FakeOpenAIServer) -> None:
    status, first = post(
        openai_server, EMBEDDINGS_PATH, {"model": "e", "input": ["abcd", "efgh"], "dimensions": 4}
    )
    _, again = post(openai_server, EMBEDDINGS_PATH, {"model": "e", "input": "abcd", "dimensions": 4})
    assert status == 200
    vectors = [item["embedding"] for item in first["data"]]
    assert len(vectors) == 2 and all(len(v) == 4 for v in vectors)
    assert sum(x * x for x in vectors[0]) == pytest.approx(1.0)
    assert again["data"][0]["embedding"] == vectors[0]
    assert vectors[0] != vectors[1]
    assert first["usage"]["prompt_tokens"] == 2  # 4 // 4 + 4 // 4
    assert openai_server.count(EMBEDDINGS_PATH) == 2


def test_faults_by_number_queue_and_seeded_probability_are_all_logged() -> None:
    plan = FaultPlan(seed=42, probability=0.5, mix=[status_500()])
    plan.at(2, malformed_json())
    with FakeOpenAIServer(builders={"X": lambda request: {"a": 1}}, faults=plan) as server:
        body = {
            "model": "m",
            "messages": [{"role": "user", "content": "12345678"}],
            "tools": [
                {
                    "type": "function",
                    "function": {"name": "X", "parameters": {"type": "object", "properties": {}}},
                }
            ],
        }
        statuses = [post(server, CHAT_PATH, body)[0] for _ in range(6)]
        faults = [r.fault for r in server.requests]

    # The same seed draws the same faults; request 2 is the scheduled malformed one (HTTP 200).
    reference = FaultPlan(seed=42, probability=0.5, mix=[status_500()]).at(2, malformed_json())
    assert faults == [reference.fault_for(n) for n in range(1, 7)]
    assert faults[1] == malformed_json()
    assert statuses == [500 if f == status_500() else 200 for f in faults]
    assert server.count(CHAT_PATH) == 6


def test_tool_answers_and_usage_at_the_server(openai_server: FakeOpenAIServer) -> None:
    openai_server.builders["X"] = lambda request: {"answer": "ab"}
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "12345678"}],
        "tools": [
            {
                "type": "function",
                "function": {"name": "X", "parameters": {"type": "object", "properties": {}}},
            }
        ],
    }
    status, answer = post(openai_server, CHAT_PATH, body)
    assert status == 200
    call = answer["choices"][0]["message"]["tool_calls"][0]["function"]
    assert call == {"name": "X", "arguments": '{"answer": "ab"}'}
    # 8 prompt characters -> 2 tokens; 16 output characters -> 4 tokens
    assert answer["usage"] == {"prompt_tokens": 2, "completion_tokens": 4, "total_tokens": 6}
