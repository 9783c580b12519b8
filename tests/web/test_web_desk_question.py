"""The desk says what is asked: the check kind's question in plain words, what the two texts are, the jury's
provisional decision and, per judge, whether accepting keeps it or changes it."""

from __future__ import annotations

import html
import re

from fastapi.testclient import TestClient
from web_support import make_payload_run

from ragcourt.runs.workspace import Workspace
from ragcourt.schema.review_questions import accepting_keeps, provisional_text, review_question
from ragcourt.web.app import DeskSettings, create_app
from ragcourt.web.desk import next_item

LOCAL = "http://127.0.0.1:8765"


def _text(page: str, element_id: str) -> str:
    found = re.search(rf'id="{element_id}"[^>]*>(.*?)</p>', page, re.S)
    assert found, element_id
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", found.group(1))).split())


def test_the_desk_shows_the_question_and_what_accepting_keeps(tmp_path):
    make_payload_run(tmp_path)
    store = Workspace(tmp_path).open_store()
    try:
        item = next_item(store, "xss")
        assert item is not None
        asked = review_question(item.check.kind)
        keeps = {v.judge_id: accepting_keeps(item.reconciled, v) for v in item.verdicts}
        provisional = provisional_text(item.reconciled)
    finally:
        store.close()
    # the payload run's jury disagrees on the first escalation: one judge keeps the decision, or it is a split
    assert set(keeps.values()) <= {True, False, None} and False in keeps.values()
    with TestClient(create_app(DeskSettings(home=tmp_path, run_id="xss", reviewer="ann")), base_url=LOCAL) as client:
        page = client.get("/desk").text
    assert _text(page, "asked") == asked.question
    assert _text(page, "provisional").startswith(f"Provisional decision: {provisional} (the jury's")
    assert f"Subject: {asked.subject}" in html.unescape(page) and f"Evidence: {asked.evidence}" in html.unescape(page)
    cells = [" ".join(html.unescape(c).split()) for c in re.findall(r'<td class="keeps">(.*?)</td>', page, re.S)]
    assert len(cells) == len(keeps)
    for (judge, kept), cell in zip(keeps.items(), cells, strict=True):
        expected = "—" if kept is None else f"keeps {provisional}" if kept else "changes it to"
        assert cell.startswith(expected), (judge, cell)
