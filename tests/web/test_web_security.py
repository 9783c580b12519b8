"""Who may use the desk and how decisions are protected, over HTTP (Starlette's TestClient, no browser)."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from web_support import make_payload_run

from ragcourt.runs.workspace import Workspace
from ragcourt.schema import (
    Check,
    CheckKind,
    Condition,
    ConditionKind,
    Label,
    ReviewAction,
    Verdict,
    VerdictStatus,
)
from ragcourt.web.app import DeskSettings, create_app
from ragcourt.web.desk import Choice, DecisionError, make_review
from ragcourt.web.highlight import highlight, spans, terms
from ragcourt.web.security import AccessPolicy, ServeRefused, Sessions, same_origin

TOKEN = "t0ken-that-is-long-enough"


def test_a_non_loopback_bind_needs_a_token():
    with pytest.raises(ServeRefused, match="requires a token"):
        AccessPolicy("0.0.0.0", 8765)
    with pytest.raises(ServeRefused, match="at least 16"):
        AccessPolicy("0.0.0.0", 8765, token="short")
    assert AccessPolicy("0.0.0.0", 8765, token=TOKEN).loopback is False
    assert AccessPolicy("::1", 8765).loopback and AccessPolicy("localhost", 1).loopback


def test_loopback_host_header_and_origin_rules():
    policy = AccessPolicy("127.0.0.1", 8765)
    assert policy.host_allowed("127.0.0.1:8765") and policy.host_allowed("localhost:8765")
    assert not policy.host_allowed("evil.example:8765")  # DNS rebinding
    assert not policy.host_allowed(None)
    assert same_origin("http://127.0.0.1:8765", None, "127.0.0.1:8765")
    assert same_origin(None, "http://127.0.0.1:8765/desk", "127.0.0.1:8765")
    assert not same_origin("http://evil.example", None, "127.0.0.1:8765")
    assert not same_origin("null", None, "127.0.0.1:8765")
    assert not same_origin(None, None, "127.0.0.1:8765")


def test_highlight_escapes_every_piece_and_marks_shared_words():
    assert terms("Who wrote the novel Dracula?") == ["wrote", "novel", "dracula"]
    assert spans("Dracula, dracula and Draculas", ["dracula"]) == [(0, 7), (9, 16)]
    marked = highlight('<b>Bram</b> & "Stoker" wrote Dracula', "Stoker wrote <b>")
    assert str(marked) == ("&lt;b&gt;Bram&lt;/b&gt; &amp; &#34;<mark>Stoker</mark>&#34; "
                           "<mark>wrote</mark> Dracula")
    # a term never matches inside an escaped entity: "amp" is a word of the subject, not of the text
    assert str(highlight("a & b", "amp")) == "a &amp; b"


def _check(kind: CheckKind) -> Check:
    return Check(kind=kind, sample_id="s", condition=Condition(kind=ConditionKind.NORMAL), subject_id="x",
                 subject_text="x", target_id="y", target_text="y")


def test_a_decision_must_fit_the_check():
    binary = _check(CheckKind.CLAIM_SUPPORTED)
    verdicts = (Verdict(check_id=binary.id, judge_id="j1", status=VerdictStatus.OK, label=Label.NO),
                Verdict(check_id=binary.id, judge_id="j2", status=VerdictStatus.UNSCORED,
                        unscored_reason="timeout"))
    accepted = make_review(binary, verdicts, "r", " ann ", Choice.ACCEPT, "j1", " ok ")
    assert (accepted.action, accepted.label, accepted.accepted_judge, accepted.reviewer, accepted.comment) == \
        (ReviewAction.ACCEPT, Label.NO, "j1", "ann", "ok")
    with pytest.raises(DecisionError, match="unscored"):
        make_review(binary, verdicts, "r", "ann", Choice.ACCEPT, "j2")
    with pytest.raises(DecisionError, match="reviewer"):
        make_review(binary, verdicts, "r", "  ", Choice.LABEL, "yes")
    with pytest.raises(DecisionError, match="not a decision"):
        make_review(binary, verdicts, "r", "ann", Choice.LABEL, "A")
    with pytest.raises(DecisionError, match="takes a label"):
        make_review(binary, verdicts, "r", "ann", Choice.SCORE, "7")
    score = _check(CheckKind.DIMENSION_SCORE)
    assert make_review(score, (), "r", "ann", Choice.SCORE, "7.5").score == 7.5
    with pytest.raises(DecisionError, match="between 0 and 10"):
        make_review(score, (), "r", "ann", Choice.SCORE, "11")
    assert make_review(_check(CheckKind.PAIRWISE), (), "r", "ann", Choice.LABEL, "Tie").label is Label.TIE


@pytest.fixture
def run_home(tmp_path):
    make_payload_run(tmp_path)
    return tmp_path


def _csrf(page: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', page).group(1)


def test_decisions_need_same_origin_and_the_session_csrf_token(run_home):
    settings = DeskSettings(home=run_home, run_id="xss", reviewer="ann")
    with TestClient(create_app(settings), base_url="http://127.0.0.1:8765") as client:
        page = client.get("/desk")
        assert page.status_code == 200 and "script-src 'self'" in page.headers["content-security-policy"]
        assert "<script>window.pwned" not in page.text and "&lt;script&gt;window.pwned=1" in page.text
        check_id = re.search(r'name="check_id" value="([^"]+)"', page.text).group(1)
        form = {"check_id": check_id, "decision": "label:yes", "reviewer": "ann", "csrf": _csrf(page.text)}
        origin = {"origin": "http://127.0.0.1:8765"}
        assert client.post("/desk/decide", data=form, headers={"origin": "http://evil.example"}).status_code == 403
        assert client.post("/desk/decide", data={**form, "csrf": "forged"}, headers=origin).status_code == 403
        assert client.get("/desk", headers={"host": "evil.example:8765"}).status_code == 400
        too_long = client.post("/desk/decide", data={**form, "comment": "x" * 2001}, headers=origin,
                               follow_redirects=False)
        assert too_long.status_code == 303  # back to the desk with a message; the browser's limit holds here too
        store = Workspace(run_home).open_store()
        try:
            assert check_id not in store.latest_reviews("xss")  # nothing refused was stored
            done = client.post("/desk/decide", data=form, headers=origin, follow_redirects=False)
            assert done.status_code == 303
            review = store.latest_reviews("xss")[check_id]
            assert (review.label, review.reviewer) == (Label.YES, "ann")
        finally:
            store.close()


def test_with_a_token_every_request_needs_it(run_home):
    settings = DeskSettings(home=run_home, run_id="xss", host="0.0.0.0", token=TOKEN)
    with TestClient(create_app(settings), base_url="http://192.0.2.10:8765") as client:
        assert client.get("/desk").status_code == 401
        assert client.get("/desk", headers={"authorization": "Bearer wrong-token-wrong-token"}).status_code == 401
        login = client.get(f"/desk?token={TOKEN}", follow_redirects=False)
        assert login.status_code == 303 and login.headers["location"] == "/desk"
        assert "httponly" in login.headers["set-cookie"].lower()
        page = client.get("/desk")  # the cookie now carries the token
        assert page.status_code == 200
        check_id = re.search(r'name="check_id" value="([^"]+)"', page.text).group(1)
        form = {"check_id": check_id, "decision": "skip", "reviewer": "bob"}
        # the auth cookie alone does not pass a state change: no origin, no CSRF token
        assert client.post("/desk/decide", data=form).status_code == 403
        # the bearer token does (an API client, not a browser: a status and JSON, not a redirect)
        fresh = TestClient(client.app, base_url="http://192.0.2.10:8765")
        done = fresh.post("/desk/decide", data=form, headers={"authorization": f"Bearer {TOKEN}"},
                          follow_redirects=False)
        assert done.status_code == 201 and done.json()["check_id"] == check_id
        assert "set-cookie" not in done.headers  # a script keeps no session: none is held for it
    store = Workspace(run_home).open_store()
    try:
        review = store.latest_reviews("xss")[check_id]
        assert (review.action, review.reviewer) == (ReviewAction.SKIP, "bob")
    finally:
        store.close()


def test_sessions_are_bounded_and_a_flood_of_new_ones_cannot_evict_an_established_one():
    """A cross-site page can make the desk open sessions (blind GETs to 127.0.0.1 carry no SameSite=Strict
    cookie), but it never sends one back: those stay new, and new sessions evict only new sessions."""
    sessions = Sessions(limit=2)
    reviewer = sessions.new("ann")
    assert sessions.get(reviewer.id) is reviewer  # the cookie came back: established
    flood = [sessions.new() for _ in range(50)]
    assert sessions.get(reviewer.id) is reviewer
    assert len(sessions) == 3 and sessions.get(flood[0].id) is None and sessions.get(flood[-1].id) is flood[-1]
    bob, cy = sessions.new("bob"), sessions.new("cy")
    assert sessions.get(bob.id) is bob and sessions.get(cy.id) is cy  # established ones evict each other
    assert sessions.get(reviewer.id) is None and len(sessions) == 2
    script = sessions.new("bot", keep=False)
    assert sessions.get(script.id) is None


def test_a_flood_of_cookieless_requests_leaves_the_reviewers_session_working(run_home):
    with TestClient(create_app(DeskSettings(home=run_home, run_id="xss")), base_url="http://127.0.0.1:8765") as client:
        page = client.get("/desk")
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
        check_id = re.search(r'name="check_id" value="([^"]+)"', page.text).group(1)
        assert client.get("/api/desk").status_code == 200  # the cookie came back: established
        stranger = TestClient(client.app, base_url="http://127.0.0.1:8765")
        for _ in range(1100):  # more than the cap
            stranger.cookies.clear()
            stranger.get("/api/desk")
        form = {"check_id": check_id, "decision": "skip", "reviewer": "ann",
                "csrf": csrf.group(1) if csrf else ""}
        done = client.post("/desk/decide", data=form, headers={"origin": "http://127.0.0.1:8765"},
                           follow_redirects=False)
        assert done.status_code == 303, done.text
