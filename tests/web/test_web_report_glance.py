"""The report's at-a-glance pictures and its table script in headless Chromium: the headline distributions and
the stacked gap bar render, a per-sample table sorts on a header click and filters on typed text, long texts
unfold, and no payload runs."""

from __future__ import annotations

import pytest
from web_support import PAYLOAD, RUN_ID, chromium, make_payload_run, needs_chromium

from ragcourt.report.html import write_report
from ragcourt.runs.workspace import Workspace

pytestmark = needs_chromium
TABLE = "qcare-qcare_per_sample"


@pytest.fixture
def report(tmp_path):
    make_payload_run(tmp_path)
    store = Workspace(tmp_path).open_store()
    try:
        return write_report(store, RUN_ID, tmp_path / "report.html")
    finally:
        store.close()


def _column(page, name: str) -> list[str]:
    index = page.locator(f"#{TABLE} thead th").all_inner_texts().index(name)
    return [row.locator("td").nth(index).inner_text() for row in page.locator(f"#{TABLE} tbody tr").all()
            if row.is_visible()]


def test_pictures_render_and_the_table_sorts_and_filters(report):
    with chromium() as browser:
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        page.goto(report.as_uri())
        headline = page.locator("#summary figure svg")
        assert headline.count() == 1 and headline.bounding_box()["width"] > 200
        assert "Headline figures" in headline.locator("title").first.text_content()
        assert page.locator("text=All metrics").count() == 0  # the duplicated table is gone
        ids = _column(page, "sample_id")
        assert sorted(ids) == ["s1", "s2"]
        header = page.locator(f"#{TABLE} thead th", has_text="sample_id").first
        header.click()
        assert _column(page, "sample_id") == ["s1", "s2"] and header.get_attribute("aria-sort") == "ascending"
        header.click()
        assert _column(page, "sample_id") == ["s2", "s1"] and header.get_attribute("aria-sort") == "descending"
        page.locator(f"#{TABLE}").scroll_into_view_if_needed()
        # both questions are short here, so the filter is tested on them: Dracula is s2's
        page.fill(f"input[data-filter='{TABLE}']", "dracula")
        assert _column(page, "sample_id") == ["s2"]
        assert page.locator(f"#{TABLE}-shown").inner_text() == "1 of 2 rows shown"
        page.fill(f"input[data-filter='{TABLE}']", "")
        assert len(_column(page, "sample_id")) == 2
        assert page.evaluate("typeof window.pwned") == "undefined" and errors == []
        # the drill-down's answers keep the payload as text
        for summary in page.locator("details.sample > summary").all():
            summary.click()
        assert PAYLOAD in page.locator("#questions").inner_text()
        assert page.evaluate("typeof window.pwned") == "undefined"
