"""Issue 36, item 6: rerun, calibrate, rank and noise check their endpoints before the first LLM call, as `run`
does: a dead server or a refused key exits 2 with one line naming the role, the URL and the cause. Before, each
exited 0 after minutes of retries and printed figures of unscored verdicts (rank: Elo 1500 for every system;
calibrate: "undecided 40")."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from fakes.status_server import answering, closed_port
from typer.testing import CliRunner

from ragcourt.cli import app
from ragcourt.data import BundledDataset, bundled

RUNNER = CliRunner()
SAMPLE = {"id": "a", "question": "Who founded Acme?", "answer": "Ada.", "reference_answer": "Ada founded Acme.",
          "contexts": [{"id": "c1", "text": "Ada founded Acme."}]}


def error_lines(output: str) -> list[str]:
    """The command's error messages, rich's wrapping folded away: each runs to the next "error:" or the end."""
    return [" ".join(("error:" + part).split()) for part in output.split("error:")[1:]]


def write_jsonl(path: Path, *rows: dict) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def rerun_args(tmp: Path, judge: str) -> list[str]:
    """A base run made with the check skipped (every verdict unscored), then its rerun, which checks."""
    data = write_jsonl(tmp / "data.jsonl", SAMPLE)
    base = RUNNER.invoke(app, ["run", str(data), "--system", "precomputed", "--judge", judge, "--run-id", "base",
                               "--home", str(tmp / "home"), "--no-check-endpoints"])
    assert base.exit_code == 0, base.output
    # the rerun takes the base run's configuration (the same judge); the edited row needs the jury again
    edited = write_jsonl(tmp / "edited.jsonl", {**SAMPLE, "reference_answer": "Ada Lovelace founded Acme."})
    return ["rerun", "--changed", "base", "--dataset", str(edited), "--home", str(tmp / "home")]


def rank_args(tmp: Path, judge: str) -> list[str]:
    one = write_jsonl(tmp / "one.jsonl", SAMPLE)
    two = write_jsonl(tmp / "two.jsonl", {**SAMPLE, "answer": "Bob."})
    return ["rank", str(one), str(two), "--judge", judge, "--home", str(tmp / "home")]


def noise_args(tmp: Path, judge: str) -> list[str]:
    data = write_jsonl(tmp / "data.jsonl", SAMPLE)
    (tmp / "jury.yaml").write_text(f"judges:\n  - model: {judge}\n    id: j\n", encoding="utf-8")
    return ["noise", "--config", str(tmp / "jury.yaml"), "--dataset", str(data), "--home", str(tmp / "home")]


def pairs_args(tmp: Path, judge: str) -> list[str]:
    return ["calibrate", "--ragchecker", "--judge", judge, "--home", str(tmp / "home")]


def suite_args(tmp: Path, judge: str) -> list[str]:
    pairs = bundled(BundledDataset.RAGCHECKER_PAIRS)
    return ["calibrate", "--suite", "ragchecker", "--file", str(pairs), "--judge", judge, "--home", str(tmp / "home")]


COMMANDS: dict[str, Callable[[Path, str], list[str]]] = {
    "rerun": rerun_args, "rank": rank_args, "noise": noise_args, "calibrate --ragchecker": pairs_args,
    "calibrate --suite": suite_args}
WHO = {"rerun": "judge 'openai:j@{url}'", "rank": "judge 'openai:j@{url}'", "noise": "judge 'j'",
       "calibrate --ragchecker": "judge 'openai:j@{url}'", "calibrate --suite": "judge 'openai:j@{url}'"}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_dead_endpoint_exits_2_naming_role_url_and_cause(tmp_path: Path, command: str) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    args = COMMANDS[command](tmp_path, f"openai:j@{url}")
    result = RUNNER.invoke(app, args)
    assert result.exit_code == 2, result.output
    who = WHO[command].format(url=url)
    assert error_lines(result.output) == [f"error: {who} cannot use {url}/models: connection refused"]
    assert "Traceback" not in result.output and "1500" not in result.output


# rerun's base run would need a server that answers chat calls too; the refusal is the same code path.
@pytest.mark.parametrize("command", [c for c in COMMANDS if c != "rerun"])
def test_a_refused_key_exits_2_before_any_chat_call(tmp_path: Path, command: str) -> None:
    with answering(401) as (url, asked):
        args = COMMANDS[command](tmp_path, f"openai:j@{url}")
        result = RUNNER.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert asked == ["/v1/models"]  # one GET; no chat completion was sent
    who = WHO[command].format(url=url)
    assert error_lines(result.output) == [f"error: {who} cannot use {url}/models: 401 Unauthorized"]
