"""Models: the jury's LLM judges carry their CuBE options (seed 000's score-only protocol, repeated scoring)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes.openai_server import FakeOpenAIServer
from fakes.status_server import closed_port

from ragcourt.judging import LLMJudge
from ragcourt.llm.probe import EndpointUnavailableError
from ragcourt.runs.models import (
    Models,
    check_endpoints,
    check_judge_options,
    check_model_specs,
    judge_problem,
)
from ragcourt.schema.config import ConfigError, DimensionProtocol, parse_config
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


BUILT_IN = ("built-in judges: lexical, semantic, learned, local, local:smollm2-135m, local:gemma3-270m, or a model "
            "spec such as openai:gpt-4o-mini")


@pytest.mark.parametrize(("text", "hint"), [
    ("lexcal", "did you mean 'lexical'? "),
    ("Semantic", "did you mean 'semantic'? "),
    ("locl", "did you mean 'local'? "),
    ("local:gema3-270m", "did you mean 'local:gemma3-270m'? "),
    ("gpt-4o-mini", "did you mean 'openai:gpt-4o-mini' (a model spec starts with its provider)? "),
    ("sentences", "'sentences' is a rule of the decomposer or the answerer, not a judge; "),
    ("my judge", ""),
])
def test_a_name_that_is_no_judge_gets_the_nearest_built_in_one_and_the_list(text: str, hint: str) -> None:
    assert judge_problem(text) == f"unknown judge {text!r}: {hint}{BUILT_IN}"


def test_judges_and_specs_with_a_provider_are_judged_as_specs() -> None:
    for judge in ("lexical", "semantic", "learned", "local", "local:gemma3-270m", f"openai:m@{URL}"):
        assert judge_problem(judge) is None
    wrong = judge_problem("openai:MODEL@URL")
    assert wrong is not None and wrong.startswith("model spec 'openai:MODEL@URL': base_url 'URL' is not an http(s) URL")


def test_a_semantic_judge_may_name_its_encoder_and_a_wrong_encoder_is_said() -> None:
    for judge in ("semantic+minilm", "semantic+e5", "semantic+e5+minilm", f"semantic+openai:m@{URL}"):
        assert judge_problem(judge) is None
    assert judge_problem("semantic+e6") == ("unknown encoder 'e6' in judge 'semantic+e6': encoders are minilm, e5, "
                                            "e5+minilm or openai:MODEL@URL (e.g. semantic+e5)")


def test_a_judge_option_is_named_as_given_and_a_config_key_as_written() -> None:
    with pytest.raises(ConfigError) as option:
        check_judge_options(["lexical", "lexcal"])
    assert str(option.value) == f"--judge: unknown judge 'lexcal': did you mean 'lexical'? {BUILT_IN}"
    with pytest.raises(ConfigError) as key:
        check_model_specs(parse_config({"judges": [{"model": "lexical"}, {"model": "lexcal"}]}), "c.yaml")
    assert str(key.value) == ("c.yaml: invalid configuration key 'judges.1.model': unknown judge 'lexcal': did you "
                              f"mean 'lexical'? {BUILT_IN}")


def test_judges_from_an_option_are_named_by_it_in_every_refusal() -> None:
    learned = parse_config({"judges": [{"model": "learned"}]})
    with pytest.raises(ConfigError, match=r"^--judge: 'learned' applies the stacked models"):
        check_model_specs(learned, "options", "--judge")
    with pytest.raises(ConfigError, match=r"^c\.yaml: invalid configuration key 'judges\.0\.model': 'learned'"):
        check_model_specs(learned, "c.yaml")
    twice = parse_config({"judges": [{"model": "lexical"}, {"model": "lexical"}]})
    with pytest.raises(ConfigError, match=r"^--judge: judge ids must be unique, got \['lexical', 'lexical'\]; give "
                                          "each once$"):
        check_model_specs(twice, "options", "--judge")
