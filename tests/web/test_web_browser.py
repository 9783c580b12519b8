"""The report and the review desk in a real browser: headless Debian Chromium driven by Playwright.

Skipped only when /usr/bin/chromium is missing (CI installs it)."""

from __future__ import annotations

import time

import pytest
from web_support import PAYLOAD, RUN_ID, chromium, desk_server, free_port, make_payload_run, needs_chromium

from ragcourt.report.html import write_report
from ragcourt.runs.workspace import Workspace
from ragcourt.schema import Label, ReconcileMethod, ReviewAction
from ragcourt.validity.review_budget import budget_order
from ragcourt.web.app import DeskSettings

pytestmark = needs_chromium


@pytest.fixture
def payload_home(tmp_path):
    make_payload_run(tmp_path)
    return tmp_path


def _no_script_ran(page) -> None:
    assert page.evaluate("typeof window.pwned") == "undefined"
    assert page.locator("img[src='x']").count() == 0  # the <img> payload never became an element


def test_report_opens_offline_and_shows_payloads_as_text(payload_home, tmp_path):
    store = Workspace(payload_home).open_store()
    try:
        out = write_report(store, RUN_ID, tmp_path / "out" / "report.html")
    finally:
        store.close()
    with chromium() as browser:
        page = browser.new_page()
        requests: list[str] = []
        page.on("request", lambda request: requests.append(request.url))
        page.goto(out.as_uri())
        for summary in page.locator("details.sample > summary").all():
            summary.click()  # open every drill-down
        answers = page.locator("blockquote.answer").all_inner_texts()
        assert answers[0] == "The capital of France is Paris. " + PAYLOAD
        assert PAYLOAD in answers[1]
        assert "Lyon <b>bold</b>" in page.locator("#questions").inner_text()  # a chunk title, shown as text
        _no_script_ran(page)
        # the one script is the report's own table sorting (allowed by its nonce); no payload became a script
        assert page.locator("script").count() == 1 and page.locator("script[nonce]").count() == 1
        assert requests == [out.as_uri()]  # nothing else was loaded: no CDN, no image, no font
        # the inline stylesheet is allowed by its nonce: the header's background is the report's, not white
        assert page.evaluate("getComputedStyle(document.querySelector('header')).backgroundColor") == \
            "rgb(243, 245, 249)"


def _wait_rescored(page, replays: int) -> dict:
    """The desk's queue state as the page's session sees it, once the metrics are recomputed."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        state = page.evaluate("fetch('/api/desk').then(response => response.json())")
        if state["replays"] >= replays and state["rescore"] == "up to date":
            return state
        time.sleep(0.2)
    raise AssertionError(f"metrics were not recomputed: {state}")


def test_desk_decides_with_the_keyboard_and_the_decision_persists(payload_home):
    workspace = Workspace(payload_home)
    store = workspace.open_store()
    settings = DeskSettings(home=payload_home, run_id=RUN_ID, port=free_port(), reviewer="ann")
    # The desk asks first what can move the headline figures most (validity.review_budget), not in arrival order.
    pending_before = [r.check_id for r in budget_order(store, RUN_ID, store.pending_escalations(RUN_ID))]
    assert len(pending_before) >= 3
    try:
        with desk_server(settings) as base, chromium() as browser:
            page = browser.new_page()
            page.goto(f"{base}/desk")
            first = page.locator("input[name=check_id]").input_value()
            assert first == pending_before[0]
            assert page.locator("#queue-text").inner_text().startswith(f"decided 0 of {len(pending_before)}")
            assert PAYLOAD in page.locator("#answer").text_content()
            _no_script_ran(page)

            with page.expect_navigation():
                page.keyboard.press("y")  # decide "yes" yourself
            review = store.latest_reviews(RUN_ID)[first]
            assert (review.action, review.label, review.reviewer) == (ReviewAction.OVERRIDE, Label.YES, "ann")

            second = page.locator("input[name=check_id]").input_value()
            assert second == pending_before[1]
            first_judge = page.locator(".judges tbody tr td:nth-child(2)").first.inner_text()
            page.locator("#comment").fill("the chunk <i>says</i> so")
            page.locator("#comment").press("Escape")
            with page.expect_navigation():
                page.keyboard.press("1")  # accept the first judge's verdict
            accepted = store.latest_reviews(RUN_ID)[second]
            judge_verdict = next(v for v in store.get_verdicts([second]) if v.judge_id == first_judge)
            assert accepted.action is ReviewAction.ACCEPT and accepted.accepted_judge == first_judge
            assert accepted.label == judge_verdict.label and accepted.comment == "the chunk <i>says</i> so"

            third = page.locator("input[name=check_id]").input_value()
            with page.expect_navigation():
                page.keyboard.press("s")
            assert store.latest_reviews(RUN_ID)[third].action is ReviewAction.SKIP
            assert page.locator("input[name=check_id]").input_value() not in (first, second, third)

            state = _wait_rescored(page, 1)
            assert (state["decided"], state["pending"], state["skipped"]) == (2, len(pending_before) - 2, 1)
            page.reload()
            assert page.locator("#queue-text").inner_text().startswith(f"decided 2 of {len(pending_before)}")
            _no_script_ran(page)
        # the replay ran from the store: the decided checks are now the person's decisions
        reconciled = {r.check_id: r for r in store.get_reconciled(RUN_ID)}
        assert reconciled[first].method is ReconcileMethod.HUMAN and reconciled[first].label is Label.YES
        assert reconciled[second].method is ReconcileMethod.HUMAN and not reconciled[second].provisional
        assert reconciled[third].provisional  # a skip decides nothing
    finally:
        store.close()


def test_progress_page_and_report_are_served(payload_home):
    settings = DeskSettings(home=payload_home, run_id=RUN_ID, port=free_port())
    with desk_server(settings) as base, chromium() as browser:
        page = browser.new_page()
        page.goto(f"{base}/progress")
        # A locator wait, not wait_for_function: the page's CSP forbids eval, which wait_for_function needs.
        page.locator("#run-status", has_text="finished").wait_for(timeout=15000)
        status = page.locator("#run-status").inner_text()
        assert status.startswith("2 of 2 questions finished (0 failed) · not running")
        assert page.locator("#recent li").count() == 2
        page.goto(f"{base}/report")
        assert PAYLOAD in page.locator("blockquote.answer").first.text_content()
        _no_script_ran(page)
