"""Models: the jury's LLM judges carry their CuBE options (seed 000's score-only protocol, repeated scoring)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes.openai_server import FakeOpenAIServer
from fakes.status_server import closed_port

from ragcourt.judging import LLMJudge
from ragcourt.llm.probe import EndpointUnavailableError
from ragcourt.runs.models import Models, check_endpoints
from ragcourt.schema.config import DimensionProtocol, parse_config
from ragcourt.stores.records import RecordStore

URL = "http://127.0.0.1:9/v1"  # never called: building a client makes no request


def test_judge_options_reach_the_llm_judge(tmp_path: Path) -> None:
    config = parse_config({"judges": [{"model": f"openai:m@{URL}"},
                                      {"model": f"openai:m@{URL}", "protocol": "score_only", "repeats": 3}]})
    with RecordStore(tmp_path / "store.sqlite") as store:
        plain, repeated = Models(config, store).judges()
    assert isinstance(plain, LLMJudge) and isinstance(repeated, LLMJudge)
    assert (plain.judge_id, plain.dimension_protocol, plain.repeats) == (f"openai:m@{URL}",
                                                                          DimensionProtocol.REASONED, 1)
    assert plain.client.params["temperature"] == 0.0
    assert (repeated.judge_id, repeated.dimension_protocol, repeated.repeats) == (
        f"openai:m@{URL}+score_only+x3+t0.7", DimensionProtocol.SCORE_ONLY, 3)
    # the repetitions sample (at 0 they would repeat); the judge's other calls stay at 0
    assert repeated.repeat_client is not None and repeated.repeat_client.params["temperature"] == 0.7
    assert repeated.client.params["temperature"] == 0.0 and plain.repeat_client is None


async def test_each_endpoint_is_asked_once_naming_everyone_who_calls_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 20, item 9: a judge and the decomposer on one closed port are one line naming both; a judge on a
    live server, the rules (lexical, sentences) and an unset probe are not asked; no key for api.openai.com
    is said without a request."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    dead = f"http://127.0.0.1:{closed_port()}/v1"
    with FakeOpenAIServer() as live:
        config = parse_config({"judges": [{"model": f"openai:a@{dead}", "id": "a"}, {"model": "lexical"},
                                          {"model": f"openai:b@{live.base_url}", "id": "b"}],
                               "decomposer": f"openai:split@{dead}", "answerer": "openai:gpt-4o-mini"})
        with pytest.raises(EndpointUnavailableError) as raised:
            await check_endpoints(config)
        assert live.count() == 1  # its one GET /v1/models
    assert [(f.user, f.url, f.cause) for f in raised.value.failures] == [
        ("judge 'a' and decomposer", f"{dead}/models", "connection refused"),
        ("answerer", "https://api.openai.com/v1", "no API key: set OPENAI_API_KEY"),
    ]
    with pytest.raises(EndpointUnavailableError) as without_requests:  # reach=False: only what needs none
        await check_endpoints(config, reach=False)
    assert str(without_requests.value) == "answerer cannot use https://api.openai.com/v1: no API key: set OPENAI_API_KEY"
    await check_endpoints(parse_config({"judges": [{"model": "lexical"}]}))  # nothing to ask
