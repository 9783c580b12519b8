"""What a new user meets before anything is evaluated, through the command line: each is one line (`error: ...`),
never a traceback, with exit code 2 (the command could not run). A record store that does not answer (a closed
loopback port) is named with its password masked; a judge that names none gets the nearest built-in judge and
the list, under the option the user wrote; a model spec copied with its placeholders says what is wrong and
shows valid ones.
"""

from __future__ import annotations

import pytest
from click.testing import Result
from fakes.status_server import closed_port
from fixtures import REPO
from typer.testing import CliRunner

from ragcourt.cli import app

EXAMPLE = REPO / "examples" / "multi_turn.jsonl"
BUILT_IN = ("built-in judges: lexical, semantic, learned, local, local:smollm2-135m, local:gemma3-270m, or a model "
            "spec such as openai:gpt-4o-mini")


def only_line(result: Result, code: int = 2) -> str:
    """The one line a refused command printed, after checking its exit code (an exception escaping the command
    exits 1, its traceback printed by typer)."""
    assert result.exit_code == code, result.output
    lines = result.output.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    return lines[0]


@pytest.fixture
def dead_postgres() -> str:
    pytest.importorskip("psycopg")
    return f"127.0.0.1:{closed_port()}"


def test_a_store_that_does_not_answer_is_one_line_naming_its_url_and_the_cause(tmp_path, dead_postgres) -> None:
    url = f"postgresql://postgres@{dead_postgres}/x"
    result = CliRunner().invoke(app, ["run", str(EXAMPLE), "--system", "precomputed", "--no-check-endpoints",
                                      "--store", url, "--home", str(tmp_path)])
    line = only_line(result)
    assert line.startswith(f"error: cannot open record store {url}: connection failed: ")
    assert "Connection refused" in line


def test_a_store_url_in_the_environment_is_named_with_its_password_masked(tmp_path, dead_postgres) -> None:
    result = CliRunner().invoke(app, ["summary", "r", "--home", str(tmp_path)],
                                env={"RAGCOURT_STORE": f"postgresql://ann:secret@{dead_postgres}/x"})
    line = only_line(result)
    assert line.startswith(f"error: cannot open record store postgresql://ann:***@{dead_postgres}/x: ")
    assert "secret" not in result.output and "Connection refused" in line


def test_a_store_location_in_the_environment_that_is_no_url_is_one_line(tmp_path) -> None:
    result = CliRunner().invoke(app, ["summary", "r", "--home", str(tmp_path)], env={"RAGCOURT_STORE": "runs.db"})
    assert only_line(result) == "error: $RAGCOURT_STORE 'runs.db' is no postgresql:// URL"


@pytest.mark.parametrize("command", [
    ["run", str(EXAMPLE), "--system", "precomputed"],
    ["calibrate", "--ragchecker"],
    ["rank", "a.jsonl", "b.jsonl"],
])
def test_a_misspelt_judge_gets_the_nearest_built_in_one_under_the_option_given(tmp_path, command) -> None:
    result = CliRunner().invoke(app, [*command, "--judge", "lexical", "--judge", "lexcal", "--home", str(tmp_path)])
    assert only_line(result) == f"error: --judge: unknown judge 'lexcal': did you mean 'lexical'? {BUILT_IN}"
    assert not (tmp_path / "store.sqlite").exists()  # refused before anything was opened


def test_a_model_spec_with_its_placeholders_says_what_is_wrong_and_shows_valid_ones(tmp_path) -> None:
    result = CliRunner().invoke(app, ["generate", "docs", "--out", str(tmp_path / "q.jsonl"), "--model",
                                      "openai:MODEL@URL", "--home", str(tmp_path)])
    line = only_line(result)  # before the collection is looked for: there is none
    assert line.startswith("error: --model: model spec 'openai:MODEL@URL': base_url 'URL' is not an http(s) URL "
                           "with a host; expected 'openai:<model>'")
    assert line.endswith("e.g. openai:gpt-4o-mini, openai:qwen2.5-7b@http://127.0.0.1:8000/v1, local:gemma3-270m")
    assert "pydantic" not in line


def test_generate_without_an_api_key_for_api_openai_com_is_one_line(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result = CliRunner().invoke(app, ["generate", "docs", "--out", str(tmp_path / "q.jsonl"), "--model",
                                      "openai:gpt-4o-mini", "--no-check-endpoints", "--home", str(tmp_path)])
    assert only_line(result) == ("error: the question writer cannot use https://api.openai.com/v1: no API key: set "
                                 "OPENAI_API_KEY")
    assert not (tmp_path / "q.jsonl").exists()
