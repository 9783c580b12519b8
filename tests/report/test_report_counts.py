"""What a reader of the HTML report sees: the counts on every chart (n, n/a, unscored, escalated, the same as
the tables under them), absent reasons that do not read as n/a, plain words instead of internal names, and
sub-queries named by their (escaped) text in the checks drill-down."""

from __future__ import annotations

import re
from html import unescape

import pandas as pd
import pytest

from ragcourt.analysis.qcare_tables import UNDECIDED_NO_SHARE, UNDECIDED_TABLE, gap_share_frame
from ragcourt.report.data import collect
from ragcourt.report.html import NO_REASON, frame_rows, render_report
from ragcourt.report.sections import ELEMENT_COVERAGE_TITLE, method_sections, metric_frame
from ragcourt.schema import (
    NORMAL,
    Check,
    CheckKind,
    ElementOutcome,
    ElementStatus,
    Label,
    MetricValue,
    Reconciled,
    ReconcileMethod,
    RunInfo,
    Sample,
    SampleDiagnostics,
    Verdict,
    VerdictStatus,
)
from ragcourt.stores.records import RecordStore

PAYLOAD = '<script>window.pwned=1</script><img src=x onerror="alert(1)">'
SUBQUERY_ID = "8b3b0dc232b6867e"
SUBQUERY = f"When was it built? {PAYLOAD}"
S = ElementStatus


def _element(eid: str, ctx, loose, ans, status: ElementStatus) -> ElementOutcome:
    return ElementOutcome(element_id=eid, text=f"element {eid}", in_context=ctx, in_loose_context=loose,
                          in_answer=ans, status=status)


@pytest.fixture
def page(tmp_path):
    """Two questions: s1 with every figure, s2 with c_prec n/a; one claim_serves_subquery check."""
    store = RecordStore(tmp_path / "store.sqlite")
    try:
        store.put(RunInfo(run_id="r", dataset="d", system="sys", config={"methods": ["qcare", "elements"]}))
        store.put_samples("r", [Sample(id="s1", question="q1?", reference_answer="ref"),
                                Sample(id="s2", question="q2?", reference_answer="ref")])
        check = Check(kind=CheckKind.CLAIM_SERVES_SUBQUERY, sample_id="s1", condition=NORMAL, subject_id="c1",
                      subject_text="The tower is old.", target_id=SUBQUERY_ID, target_text=SUBQUERY)
        store.put(check)
        store.link_checks("r", "s1", [check.id])
        store.put(Verdict(check_id=check.id, judge_id="lex", model_id="lexical", status=VerdictStatus.OK,
                          label=Label.YES))
        store.put(Reconciled(run_id="r", check_id=check.id, kind=check.kind, sample_id="s1", label=Label.YES,
                             method=ReconcileMethod.MAJORITY, n_scored=1, n_unscored=0))
        store.put(SampleDiagnostics(
            run_id="r", sample_id="s1", question="q1?",
            metrics=(MetricValue(name="c_prec@3", value=0.5, n=3, n_unscored=1, n_escalated=2),
                     MetricValue(name="completeness", value=1.0, n=2, n_escalated=1),
                     MetricValue(name="element_answer_coverage", value=0.2, n=5, n_escalated=2),
                     MetricValue(name="element_coverage", value=0.6, n=5, n_unscored=1, n_escalated=1)),
            elements=(_element("e1", True, None, True, S.ANSWERED),
                      _element("e2", True, None, False, S.GENERATION_GAP),
                      _element("e3", True, None, False, S.GENERATION_GAP),
                      _element("e4", False, True, False, S.RETRIEVAL_GAP),
                      _element("e5", None, None, False, S.UNDECIDED))))
        store.put(SampleDiagnostics(
            run_id="r", sample_id="s2", question="q2?",
            metrics=(MetricValue(name="c_prec@3", value=None, na_reason="no chunk was retrieved", n_unscored=2),
                     MetricValue(name="completeness", value=0.0, n=1),
                     MetricValue(name="element_answer_coverage", value=1.0, n=1),
                     MetricValue(name="element_coverage", value=1.0, n=1, n_escalated=1)),
            elements=(_element("f1", True, None, True, S.ANSWERED),)))
        data = collect(store, "r")
        sections = method_sections(store, data)
        html = render_report(data, sections, nonce="N0NCE")
    finally:
        store.close()
    return data, sections, html


def _table(html: str, caption: str) -> list[list[str]]:
    """The body cells of the table with this caption, unescaped."""
    table = re.search(rf"<caption>{re.escape(caption)}.*?</caption>(.*?)</table>", html, re.S).group(1)
    body = table.split("<tbody>")[1]
    return [[unescape(c) for c in re.findall(r"<td>(.*?)</td>", row, re.S)]
            for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)]


def _header(html: str, caption: str) -> list[str]:
    table = re.search(rf"<caption>{re.escape(caption)}.*?</caption>(.*?)</table>", html, re.S).group(1)
    return re.findall(r"<th>(.*?)</th>", table.split("</thead>")[0])


def _svg(html: str, title: str) -> str:
    return re.search(rf"<svg[^>]*><title>{re.escape(title)}</title>.*?</svg>", html, re.S).group(0)


def _texts(svg: str) -> list[str]:
    return [unescape(t) for t in re.findall(r"<text[^>]*>(.*?)</text>", svg, re.S)]


def test_absent_reasons_are_not_written_as_na():
    frame = pd.DataFrame([{"m": 0.2, "m_na_reason": None, "share": None, "na_reason": None},
                          {"m": None, "m_na_reason": "no claims", "share": float("nan"), "na_reason": "why"}],
                         dtype=object)
    assert frame_rows(frame, 10) == [["0.200", NO_REASON, "n/a", NO_REASON], ["n/a", "no claims", "n/a", "why"]]


def test_per_sample_table_keeps_na_for_missing_metrics_only(page):
    _, _, html = page
    header = _header(html, "Q-CARE per sample")
    rows = {row[0]: dict(zip(header, row, strict=True)) for row in _table(html, "Q-CARE per sample")}
    assert (rows["s1"]["c_prec"], rows["s1"]["c_prec_na_reason"]) == ("0.500", "—")
    assert (rows["s2"]["c_prec"], rows["s2"]["c_prec_na_reason"]) == ("n/a", "no chunk was retrieved")
    # a metric the sample never computed: n/a, with why
    assert (rows["s1"]["c_ndcg"], rows["s1"]["c_ndcg_na_reason"]) == ("n/a", "not computed for this sample")
    assert all(row[f"{m}_na_reason"] != "n/a" for row in rows.values()
               for m in ("c_prec", "c_ndcg", "completeness", "conciseness", "verifiableness", "element_coverage"))


def test_gap_share_table_names_the_undecided_table_in_words(page):
    _, sections, html = page
    (elements,) = [s for s in sections if s.anchor == "elements"]
    assert [t.title for t in elements.tables][-1] == UNDECIDED_TABLE == "Undecided elements by reason"
    rows = {row[0]: row for row in _table(html, "Element statuses and gap shares")}
    assert rows["undecided"] == ["undecided", "1", "n/a", "n/a", UNDECIDED_NO_SHARE]
    assert "undecided_frame" not in html
    assert f"'{UNDECIDED_TABLE}' below" in UNDECIDED_NO_SHARE and "missing or unscored" in UNDECIDED_NO_SHARE
    assert f"<caption>{UNDECIDED_TABLE}</caption>" in html  # the table it points to is on the page
    assert rows["answered"][4] == "—" and rows["generation_gap"][3] == "0.667"


def test_qcare_chart_states_the_counts_of_the_metric_table(page):
    data, sections, html = page
    texts = _texts(_svg(html, "Q-CARE means (0-1)"))
    # the table's numbers: c_prec@3 over s1, s2; completeness over s1, s2
    table = metric_frame(tuple(r for r in data.summary.metrics if r.name in ("c_prec@3", "completeness")))
    assert table.values.tolist() == [["c_prec@3", 0.5, 1, 1, 3, 2], ["completeness", 0.5, 2, 0, 0, 1]]
    assert "0.5 n=1 · n/a 1 · unscored 3 · escalated 2" in texts
    assert "0.5 n=2 · n/a 0 · unscored 0 · escalated 1" in texts
    assert any(t.startswith("n: samples with a value") for t in texts)
    assert any(t.startswith("unscored: units left out") for t in texts)


def test_element_chart_states_n_undecided_and_escalated(page):
    data, _, html = page
    texts = _texts(_svg(html, "Where missing elements were lost"))
    gaps = gap_share_frame(data.diagnostics)
    assert gaps.attrs["n_undecided"] == 1
    # 3 decided missing elements (2 generation, 1 retrieval) of 6; element checks escalated: s1's 2 on the answer
    # and 1 on the context, s2's 1 on the context: both coverages' counts added up
    assert "n=3 decided elements missing from the answer (of 6 elements)" in texts
    assert "unscored: 1 undecided elements left out (no share) · escalated 4 element checks" in texts
    assert "0.667 (2 of 3)" in texts and "0.333 (1 of 3)" in texts and "0 (0 of 3)" in texts
    coverage = {r.name: r for r in data.summary.metrics if r.name.startswith("element_")}
    assert {name: (r.n_unscored, r.n_escalated) for name, r in coverage.items()} == {
        "element_answer_coverage": (0, 2), "element_coverage": (1, 2)}
    # the element coverage table shows both sides, the answer side first: (0.2 + 1) / 2 and (0.6 + 1) / 2
    rows = _table(html, ELEMENT_COVERAGE_TITLE)
    assert [(row[0], float(row[1])) for row in rows] == [("element_answer_coverage", 0.6),
                                                          ("element_coverage", 0.8)]


def test_a_check_against_a_subquery_shows_its_text_escaped(page):
    _, _, html = page
    # the one script is the page's own table sorting, allowed by its nonce; no payload became a script
    assert html.count("<script") == 1 and re.search(r"<script nonce=\"[^\"]+\">", html) and "<img" not in html
    row = re.search(r"<td>claim_serves_subquery</td>(.*?)</tr>", html, re.S).group(1)
    cells = re.findall(r"<td>(.*?)</td>", row, re.S)
    assert cells[0] == "The tower is old."
    assert cells[1] == "When was it built? &lt;script&gt;window.pwned=1&lt;/script&gt;&lt;img src=x " \
                       "onerror=&#34;alert(1)&#34;&gt;"
    assert unescape(cells[1]) == SUBQUERY and SUBQUERY_ID not in html


def test_chart_captions_are_escaped_and_widen_the_chart():
    from ragcourt.report.svg import Bar, bar_chart

    chart = str(bar_chart("t", [Bar("a", 0.5, "n=3 · unscored 1 · escalated 2")], caption=(f"c {PAYLOAD}",)))
    assert "<script" not in chart and "c &lt;script&gt;window.pwned=1&lt;/script&gt;" in chart
    assert "0.5 n=3 · unscored 1 · escalated 2" in chart
    assert int(re.search(r'width="(\d+)"', chart).group(1)) > 560  # the caption is not cut off
