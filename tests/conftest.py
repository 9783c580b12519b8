"""Root conftest: the network guard for every test, the shared LLM test doubles, and how the suite is spread
over pytest-xdist workers (fakes/parallel.py: how many, which tests stay together, the slow ones first).

`fakes` (tests/fakes/) is a plain package of test doubles; this file puts tests/ on sys.path so
any test imports it as `from fakes.openai_server import FakeOpenAIServer`, whatever pytest's
import mode. No test needs OPENAI_API_KEY: base_url endpoints get a placeholder key.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

_TESTS_DIR = str(Path(__file__).resolve().parent)
if _TESTS_DIR not in sys.path:
    sys.path.insert(0, _TESTS_DIR)

from fakes.network_guard import NetworkGuard
from fakes.openai_server import FakeOpenAIServer
from fakes.scripted_model import ScriptedChatModel

# postgres_url / postgres_store_url: a private PostgreSQL, started only for the tests that ask for it;
# fakes.parallel: the worker count behind `-n auto` (pyproject's addopts), the xdist groups, the slow ones first
pytest_plugins = ("fakes.postgres_fixtures", "fakes.parallel")


@pytest.fixture(autouse=True)
def network_guard(monkeypatch: pytest.MonkeyPatch) -> Iterator[NetworkGuard]:
    """Refuse every connect outside loopback; fail the test if one was tried, even if caught."""
    guard = NetworkGuard()
    guard.install(monkeypatch)
    yield guard
    if guard.violations:
        pytest.fail("\n".join(guard.violations), pytrace=False)


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAIServer]:
    """A started FakeOpenAIServer answering by schema name from `openai_server.builders`
    (fill it in the test); set `.faults` or `.responder` for other behaviour."""
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
def scripted_model() -> Callable[..., ScriptedChatModel]:
    """Factory: scripted_model(builders={...}, script=[...]) -> ScriptedChatModel."""

    def make(
        builders: dict[str, Callable[..., Any]] | None = None, script: list[Any] | None = None
    ) -> ScriptedChatModel:
        return ScriptedChatModel(builders=builders or {}, script=list(script or []))

    return make
