"""Decisions posted by a script (bearer token, or JSON) get a real status and a JSON body; a browser form keeps
303 back to the desk with a message. Nothing is stored when a decision is refused."""

from __future__ import annotations

import html
import re

import pytest
from fakes.scripted_jury import SAMPLES, runner_for
from fastapi.testclient import TestClient
from web_support import make_payload_run

from ragcourt.runs.workspace import Workspace
from ragcourt.schema import Check, CheckKind, Condition, ConditionKind, Label, ReviewAction
from ragcourt.schema.config import Reconcile
from ragcourt.validity.review_budget import review_queue
from ragcourt.web.app import DeskSettings, create_app
from ragcourt.web.desk import Choice, DecisionError, make_review

TOKEN = "t0ken-that-is-long-enough"
BEARER = {"authorization": f"Bearer {TOKEN}"}
BASE = "http://192.0.2.10:8765"
LOCAL = "http://127.0.0.1:8765"


@pytest.fixture
def run_home(tmp_path):
    make_payload_run(tmp_path)
    return tmp_path


@pytest.fixture
def store(run_home):
    found = Workspace(run_home).open_store()
    yield found
    found.close()


@pytest.fixture
def api(run_home):
    """A client of a desk served with a token, that sends no cookie (a script)."""
    settings = DeskSettings(home=run_home, run_id="xss", host="0.0.0.0", token=TOKEN)
    with TestClient(create_app(settings), base_url=BASE) as client:
        yield client


def _post(client: TestClient, **form: str):
    client.cookies.clear()  # every request as a fresh script: no session
    return client.post("/desk/decide", data=form, headers=BEARER, follow_redirects=False)


def _binary_pending(store) -> list[str]:
    return [r.check_id for r in store.pending_escalations("xss")]


def test_a_stored_decision_answers_201_with_the_review(api, store):
    pending = _binary_pending(store)
    check = store.get_checks([pending[0]])[0]
    done = _post(api, check_id=pending[0], decision="label:yes", reviewer=" bob ", comment="the chunk says so")
    assert done.status_code == 201 and done.headers["content-type"] == "application/json"
    body = done.json()
    review = store.latest_reviews("xss")[pending[0]]
    assert (review.action, review.label, review.reviewer, review.comment) == \
        (ReviewAction.OVERRIDE, Label.YES, "bob", "the chunk says so")
    assert body == {**review.model_dump(mode="json"), "stored": True, "decision": "label", "kind": str(check.kind),
                    "sample_id": check.sample_id, "rescore_requested": True,
                    "queue": {"escalated": len(pending), "pending": len(pending) - 1, "decided": 1}}
    assert done.headers["x-content-type-options"] == "nosniff"  # the security headers hold for JSON too

    judge = store.get_verdicts([pending[1]])[0]
    accepted = _post(api, check_id=pending[1], decision=f"accept:{judge.judge_id}", reviewer="bob")
    assert accepted.status_code == 201
    assert (accepted.json()["action"], accepted.json()["accepted_judge"], accepted.json()["label"]) == \
        ("accept", judge.judge_id, str(judge.label))
    assert store.latest_reviews("xss")[pending[1]].accepted_judge == judge.judge_id


def test_a_skip_is_stored_and_leaves_the_check_pending(api, store):
    first = _binary_pending(store)[0]
    skipped = _post(api, check_id=first, decision="skip", reviewer="bob")
    assert skipped.status_code == 201
    assert (skipped.json()["action"], skipped.json()["rescore_requested"]) == ("skip", False)
    assert store.latest_reviews("xss")[first].action is ReviewAction.SKIP
    assert first in _binary_pending(store)  # a skip decides nothing: the check can still be decided
    assert _post(api, check_id=first, decision="label:no", reviewer="bob").status_code == 201


def test_an_unknown_check_is_404_and_nothing_is_stored(api, store):
    before = store.latest_reviews("xss")
    refused = _post(api, check_id="doesnotexist", decision="label:yes", reviewer="bob")
    assert refused.status_code == 404
    assert refused.json() == {"error": "run xss has no check doesnotexist", "field": "check_id", "stored": False}
    assert store.latest_reviews("xss") == before


@pytest.mark.parametrize(("form", "field", "message"), [
    ({"decision": "bogus"}, "decision", "'bogus' is not a decision"),
    ({"decision": ""}, "decision", "'' is not a decision"),
    ({"decision": "label:A"}, "decision", "'A' is not a decision for a"),
    ({"decision": "score:7"}, "decision", "takes a label, not a score"),
    ({"decision": "accept:nobody"}, "decision", "no verdict of judge 'nobody'"),
    ({"decision": "label:yes", "reviewer": "  "}, "reviewer", "needs the reviewer's name"),
    ({"decision": "label:yes", "reviewer": "b" * 101}, "reviewer", "at most 100 characters"),
    ({"decision": "label:yes", "comment": "x" * 2001}, "comment", "at most 2000 characters"),
    ({"decision": "label:yes", "check_id": ""}, "check_id", "names its check"),
])
def test_an_invalid_decision_is_422_with_the_field_and_nothing_is_stored(api, store, form, field, message):
    before = store.latest_reviews("xss")
    first = _binary_pending(store)[0]
    refused = _post(api, **{"check_id": first, "reviewer": "bob", **form})
    assert refused.status_code == 422
    body = refused.json()
    assert (body["field"], body["stored"]) == (field, False) and message in body["error"]
    assert store.latest_reviews("xss") == before
    assert first in _binary_pending(store)


def test_a_check_that_is_not_pending_is_409(api, store):
    first = _binary_pending(store)[0]
    assert _post(api, check_id=first, decision="label:yes", reviewer="bob").status_code == 201
    decided = store.latest_reviews("xss")
    again = _post(api, check_id=first, decision="label:no", reviewer="carol")
    assert again.status_code == 409
    body = again.json()
    assert (body["field"], body["stored"]) == ("check_id", False) and "override by bob" in body["error"]
    assert body["decided"] == decided[first].model_dump(mode="json")  # the decision that stands
    assert store.latest_reviews("xss") == decided  # carol's "no" was not stored

    jury_decided = next(r.check_id for r in store.get_reconciled("xss") if not r.escalated)
    refused = _post(api, check_id=jury_decided, decision="label:yes", reviewer="bob")
    assert refused.status_code == 409 and "was not escalated" in refused.json()["error"]
    assert "decided" not in refused.json()
    assert store.latest_reviews("xss") == decided


def test_a_json_body_and_its_errors(api, store):
    first = _binary_pending(store)[0]
    before = store.latest_reviews("xss")
    for bad in ("not json", "[1, 2]", '{"check_id": ["a"]}'):
        refused = api.post("/desk/decide", content=bad, headers={**BEARER, "content-type": "application/json"})
        assert refused.status_code == 400 and refused.json()["stored"] is False
    assert store.latest_reviews("xss") == before
    done = api.post("/desk/decide", json={"check_id": first, "decision": "label:no", "reviewer": "bob"},
                    headers=BEARER)
    assert done.status_code == 201 and done.json()["label"] == "no"
    assert store.latest_reviews("xss")[first].label is Label.NO


def test_a_script_still_needs_the_token(api, store):
    first = _binary_pending(store)[0]
    wrong = {"authorization": "Bearer wrong-token-wrong-token", "accept": "application/json"}
    assert api.post("/desk/decide", data={"check_id": first, "decision": "label:yes", "reviewer": "bob"},
                    headers=wrong).status_code == 401
    assert first not in store.latest_reviews("xss")


def _csrf(page: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', page).group(1)


def test_accept_json_from_a_cookie_session_keeps_origin_and_csrf_checks(run_home, store):
    settings = DeskSettings(home=run_home, run_id="xss", reviewer="ann")
    first = _binary_pending(store)[0]
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        csrf = _csrf(client.get("/desk").text)
        wants_json = {"accept": "application/json", "origin": LOCAL}
        form = {"check_id": first, "decision": "label:yes"}
        no_csrf = client.post("/desk/decide", data=form, headers=wants_json)
        assert no_csrf.status_code == 403 and no_csrf.json()["field"] == "csrf"
        cross = client.post("/desk/decide", data=form, headers={**wants_json, "origin": "http://evil.example",
                                                                 "x-csrf-token": csrf})
        assert cross.status_code == 403
        assert first not in store.latest_reviews("xss")
        bogus = client.post("/desk/decide", data={**form, "decision": "label:maybe"},
                            headers={**wants_json, "x-csrf-token": csrf})
        assert bogus.status_code == 422 and bogus.json()["field"] == "decision"
        assert first not in store.latest_reviews("xss")
        done = client.post("/desk/decide", data=form, headers={**wants_json, "x-csrf-token": csrf})
        assert done.status_code == 201 and done.json()["reviewer"] == "ann"
        assert store.latest_reviews("xss")[first].label is Label.YES


def test_a_browser_form_keeps_303_and_the_message(run_home, store):
    settings = DeskSettings(home=run_home, run_id="xss", reviewer="ann")
    first = _binary_pending(store)[0]
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        csrf = _csrf(client.get("/desk").text)
        browser = {"origin": LOCAL, "accept": "text/html,application/xhtml+xml,*/*;q=0.8"}
        for decision, check_id in (("bogus", first), ("label:yes", "doesnotexist")):
            refused = client.post("/desk/decide", data={"check_id": check_id, "decision": decision, "csrf": csrf},
                                  headers=browser, follow_redirects=False)
            assert refused.status_code == 303 and refused.headers["location"] == "/desk"
            flash = re.search(r'<p id="flash" class="flash">([^<]*)</p>', client.get("/desk").text).group(1)
            assert ("is not a decision" if decision == "bogus" else "has no check doesnotexist") in \
                html.unescape(flash)
        assert store.latest_reviews("xss") == {}
        done = client.post("/desk/decide", data={"check_id": first, "decision": "label:yes", "csrf": csrf},
                           headers=browser, follow_redirects=False)
        assert done.status_code == 303
        assert store.latest_reviews("xss")[first].reviewer == "ann"


def test_the_desk_state_names_the_next_check(api, store):
    pending = [r.check_id for r in review_queue(store, "xss")]
    api.cookies.clear()
    assert api.get("/api/desk", headers=BEARER).json()["next_check_id"] == pending[0]
    _post(api, check_id=pending[0], decision="label:yes", reviewer="bob")
    api.cookies.clear()
    assert api.get("/api/desk", headers=BEARER).json()["next_check_id"] == pending[1]


async def test_the_desk_states_next_check_is_the_one_its_page_shows(tmp_path):
    """A scripted jury of mixed accuracies: the desk's order (what a decision can move) is not the order the
    escalations were stored in, and the API's next check is the page's, before and after a decision."""
    with Workspace(tmp_path).open_store() as store:
        _ = [d async for d in runner_for(store, tmp_path, "m", Reconcile.MAJORITY).astream(SAMPLES)]
        stored_first = store.pending_escalations("m")[0].check_id
        desk_first = review_queue(store, "m")[0].check_id
    assert stored_first != desk_first  # else this test could not tell the two orders apart
    settings = DeskSettings(home=tmp_path, run_id="m", host="0.0.0.0", token=TOKEN)
    with TestClient(create_app(settings), base_url=BASE) as client:
        for _ in range(2):
            client.cookies.clear()
            shown = re.search(r'name="check_id" value="([0-9a-f]+)"', client.get("/desk", headers=BEARER).text)
            client.cookies.clear()
            named = client.get("/api/desk", headers=BEARER).json()["next_check_id"]
            assert shown is not None and named == shown.group(1)
            assert _post(client, check_id=named, decision="label:yes", reviewer="bob").status_code == 201
        assert named != desk_first  # the second round was the next check in that order


def test_refusals_name_their_field():
    score = Check(kind=CheckKind.DIMENSION_SCORE, sample_id="s", condition=Condition(kind=ConditionKind.NORMAL),
                  subject_id="x", subject_text="x", target_id="y", target_text="y")
    for value in ("eleven", "11", "nan"):
        with pytest.raises(DecisionError) as refused:
            make_review(score, (), "r", "ann", Choice.SCORE, value)
        assert refused.value.field == "score"
