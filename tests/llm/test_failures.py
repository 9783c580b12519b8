"""llm.failures.cause_of, and the cause leading an unscored call's detail: "connection refused" or "401
Unauthorized" instead of the openai SDK's bare "Connection error." (issue 20, item 9)."""

from __future__ import annotations

import socket

import httpx
import openai
from fakes.openai_server import CHAT_PATH, FakeOpenAIServer, FaultPlan, StatusFault
from fakes.status_server import closed_port
from langchain_core.messages import HumanMessage
from pydantic import BaseModel

from ragcourt.llm.factory import build_client
from ragcourt.llm.failures import cause_of
from ragcourt.llm.retry import RetryPolicy
from ragcourt.llm.spec import ModelSpec
from ragcourt.schema import UnscoredReason, VerdictStatus

FAST_RETRY = RetryPolicy(max_attempts=2, base_delay_s=0.001, max_delay_s=0.01, jitter=0.0)


class Decision(BaseModel):
    label: str


def raised_from(outer: BaseException, inner: BaseException) -> BaseException:
    outer.__cause__ = inner
    return outer


def test_the_cause_is_found_where_the_sdk_hides_it() -> None:
    request = httpx.Request("GET", "http://127.0.0.1:1/v1/models")
    refused = raised_from(openai.APIConnectionError(request=request),
                          raised_from(httpx.ConnectError("All connection attempts failed"),
                                      ConnectionRefusedError(111, "Connect call failed")))
    assert cause_of(refused) == "connection refused"
    unknown_host = raised_from(httpx.ConnectError("x"), socket.gaierror(-2, "Name or service not known"))
    assert cause_of(unknown_host) == "DNS lookup failed (Name or service not known)"
    assert cause_of(httpx.ReadTimeout("slow", request=request)) == "timed out"
    assert cause_of(ConnectionResetError(104, "reset")) == "connection reset"
    assert cause_of(ValueError("nothing known")) is None


async def test_an_unscored_call_to_a_closed_port_says_connection_refused() -> None:
    spec = ModelSpec.parse(f"openai:j@http://127.0.0.1:{closed_port()}/v1")
    result = await build_client(spec, retry=FAST_RETRY, timeout_s=2.0).structured_call(
        [HumanMessage(content="ok?")], Decision)
    assert (result.status, result.reason) == (VerdictStatus.UNSCORED, UnscoredReason.ERROR)
    assert result.detail == "connection refused: APIConnectionError: Connection error. (after 2 attempt(s))"


async def test_an_unscored_call_with_a_refused_key_says_401() -> None:
    with FakeOpenAIServer(faults=FaultPlan().at(1, StatusFault(401))) as server:
        spec = ModelSpec.parse(f"openai:j@{server.base_url}")
        result = await build_client(spec, retry=FAST_RETRY).structured_call([HumanMessage(content="ok?")], Decision)
        assert server.count(CHAT_PATH) == 1  # a 401 is not retried
    assert (result.status, result.reason) == (VerdictStatus.UNSCORED, UnscoredReason.ERROR)
    assert result.detail is not None
    assert result.detail.startswith("401 Unauthorized: AuthenticationError: Error code: 401")
    assert result.detail.endswith("(after 1 attempt(s))")
