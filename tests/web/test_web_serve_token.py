"""`ragcourt serve`: the desk requires a token by default (a new one, printed in its URL, as Jupyter does),
so a local process that reads the CSRF token and forges the Origin still cannot decide a review."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner
from web_support import make_payload_run

from ragcourt.cli import app
from ragcourt.commands import serve as serve_command
from ragcourt.runs.workspace import Workspace
from ragcourt.web.app import DeskSettings, create_app

LOCAL = "http://127.0.0.1:8765"


def test_by_default_a_new_token_is_made_and_none_only_when_asked() -> None:
    made, other = serve_command.desk_token(None, no_token=False), serve_command.desk_token(None, no_token=False)
    assert made is not None and len(made) >= 16 and made != other
    assert serve_command.desk_token("a-token-of-my-own-123", no_token=False) == "a-token-of-my-own-123"
    assert serve_command.desk_token(None, no_token=True) is None


def test_the_default_desk_refuses_a_decision_without_the_token(tmp_path) -> None:
    make_payload_run(tmp_path)
    token = serve_command.desk_token(None, no_token=False)
    settings = DeskSettings(home=tmp_path, run_id="xss", host="127.0.0.1", token=token)
    with Workspace(tmp_path).open_store() as store:
        pending = store.pending_escalations("xss")[0].check_id
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        # what a local process can do without the token: read nothing, decide nothing
        assert client.get("/desk").status_code == 401
        forged = client.post("/desk/decide", data={"check_id": pending, "decision": "label:yes", "reviewer": "x"},
                             headers={"origin": LOCAL}, follow_redirects=False)
        assert forged.status_code == 401
        with Workspace(tmp_path).open_store() as store:
            assert pending not in store.latest_reviews("xss")
        # the URL serve prints lets the reviewer in
        opened = client.get(f"/?token={token}", follow_redirects=True)
        assert opened.status_code == 200


def test_serve_prints_the_url_with_the_new_token_and_warns_on_no_token(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_payload_run(tmp_path)
    started: list[dict] = []
    monkeypatch.setattr("uvicorn.run", lambda app, **kwargs: started.append(kwargs))
    runner = CliRunner()
    shown = runner.invoke(app, ["serve", "xss", "--home", str(tmp_path)], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert re.search(r"http://127\.0\.0\.1:8765/\?token=[A-Za-z0-9_-]{16,}", shown.output)
    bare = runner.invoke(app, ["serve", "xss", "--home", str(tmp_path), "--no-token"], env={"COLUMNS": "200"})
    assert bare.exit_code == 0 and "http://127.0.0.1:8765/desk" in bare.output and "--no-token" in bare.output
    both = runner.invoke(app, ["serve", "xss", "--home", str(tmp_path), "--no-token", "--token", "x" * 20])
    assert both.exit_code == 2 and "not both" in both.output
    assert len(started) == 2
