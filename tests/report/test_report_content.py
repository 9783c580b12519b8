"""The HTML report and its exports from a hand-made store: escaping, CSP, counts, costs, files."""

from __future__ import annotations

import json
import re
from html import unescape

import pandas as pd

from ragcourt.metrics.elements import element_outcome
from ragcourt.report.data import collect, judge_usage
from ragcourt.report.export import export_tables, report_tables
from ragcourt.report.html import render_report
from ragcourt.report.sections import method_sections
from ragcourt.report.svg import Bar, bar_chart
from ragcourt.schema import (
    NORMAL,
    Answer,
    Check,
    CheckKind,
    Element,
    ElementOutcome,
    ElementStatus,
    Label,
    MetricValue,
    Reconciled,
    ReconcileMethod,
    Review,
    ReviewAction,
    RunInfo,
    Sample,
    SampleDiagnostics,
    TokenUsage,
    Verdict,
    VerdictStatus,
)
from ragcourt.stores.records import RecordStore

PAYLOAD = '<script>window.pwned=1</script><img src=x onerror="alert(1)">'


def _verdict(check_id: str, judge: str, model: str, label: Label | None, prompt: int, completion: int) -> Verdict:
    if label is None:
        return Verdict(check_id=check_id, judge_id=judge, model_id=model, status=VerdictStatus.UNSCORED,
                       unscored_reason="timeout", usage=TokenUsage(prompt_tokens=prompt, completion_tokens=completion))
    return Verdict(check_id=check_id, judge_id=judge, model_id=model, status=VerdictStatus.OK, label=label,
                   rationale=f"because {PAYLOAD}", usage=TokenUsage(prompt_tokens=prompt, completion_tokens=completion))


def test_judge_usage_sums_tokens_and_prices_them():
    verdicts = [_verdict("a", "gpt", "gpt-x", Label.YES, 1000, 200), _verdict("b", "gpt", "gpt-x", None, 500, 0),
                _verdict("a", "lex", "lexical", Label.NO, 0, 0), _verdict("a", "other", "m2", Label.NO, 10, 10)]
    rows = {r.judge_id: r for r in judge_usage(verdicts, {"gpt-x": (0.5, 2.0)})}
    # (1500 * 0.5 + 200 * 2.0) / 1000 = 1.15 USD
    assert (rows["gpt"].prompt_tokens, rows["gpt"].completion_tokens, rows["gpt"].n_unscored) == (1500, 200, 1)
    assert abs(rows["gpt"].cost_usd - 1.15) < 1e-12
    assert rows["lex"].cost_usd == 0.0 and rows["lex"].cost_note == "rule-based judge, no LLM call"
    assert rows["other"].cost_usd is None and rows["other"].cost_note == "no price for model m2"


def test_svg_labels_are_escaped_and_missing_values_are_not_zero():
    chart = str(bar_chart("t <x>", [Bar("a<script>", 0.5), Bar("b", None, "no data")], lo=0.0, hi=1.0))
    assert "<script>" not in chart and "a&lt;script&gt;" in chart
    assert chart.count("<rect") == 1 and "n/a no data" in chart


def _store(tmp_path) -> RecordStore:
    store = RecordStore(tmp_path / "store.sqlite")
    store.put(RunInfo(run_id="r", dataset="d", system="sys", config={"judges": [{"model": "lexical"},
                                                                               {"model": "gpt-x", "id": "gpt"}]}))
    store.put_samples("r", [Sample(id="s1", question=f"Q {PAYLOAD}", reference_answer="Paris")])
    store.put(Answer(run_id="r", sample_id="s1", condition=NORMAL, text=f"A {PAYLOAD}"))
    check = Check(kind=CheckKind.ELEMENT_IN_ANSWER, sample_id="s1", condition=NORMAL, subject_id="e1",
                  subject_text="Paris", target_id="answer", target_text=f"A {PAYLOAD}")
    store.put(check)
    store.link_checks("r", "s1", [check.id])
    store.put(_verdict(check.id, "lexical", "lexical", Label.NO, 0, 0),
              _verdict(check.id, "gpt", "gpt-x", Label.YES, 120, 30))
    store.put(Reconciled(run_id="r", check_id=check.id, kind=check.kind, sample_id="s1", label=Label.YES,
                         agreement=0.5, method=ReconcileMethod.MAJORITY, n_scored=2, n_unscored=0, escalated=True,
                         escalation_reason="judges disagree", provisional=True))
    store.add_review(Review(run_id="r", check_id=check.id, reviewer="ann <b>", action=ReviewAction.OVERRIDE,
                            label=Label.NO, comment=PAYLOAD))
    store.put(SampleDiagnostics(
        run_id="r", sample_id="s1", question=f"Q {PAYLOAD}",
        metrics=(MetricValue(name="element_coverage", value=None, na_reason="no elements"),
                 MetricValue(name="completeness", value=0.5, n=2)),
        elements=(ElementOutcome(element_id="e1", text=f"E {PAYLOAD}", in_context=False, in_loose_context=True,
                                 in_answer=False, status=ElementStatus.RETRIEVAL_GAP),),
        escalations=(check.id,), n_checks=1))
    return store


def test_report_escapes_untrusted_text_and_forbids_scripts(tmp_path):
    store = _store(tmp_path)
    try:
        data = collect(store, "r", {"gpt-x": (1.0, 1.0)})
        html = render_report(data, method_sections(store, data), nonce="N0NCE")
    finally:
        store.close()
    # the one script is the page's own, allowed by its nonce (table sorting and filtering); no payload became one
    assert html.count("<script") == 1 and '<script nonce="N0NCE">' in html and "<img" not in html
    # the question (drill-down and Q-CARE per-sample table), answer, two rationales, element, comment; the
    # check's target (the answer) is named, not repeated; the per-sample table folds its long question, whose
    # start is shown again as the fold's summary (7 before folding)
    assert html.count("&lt;script&gt;window.pwned=1&lt;/script&gt;") == 8
    csp = unescape(re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html).group(1))
    assert "script-src 'nonce-N0NCE'" in csp and "default-src 'none'" in csp and "style-src 'nonce-N0NCE'" in csp
    assert '<style nonce="N0NCE">' in html
    assert "ann &lt;b&gt;" in html  # the reviewer's name is text too
    # cost of gpt: (120 + 30) / 1000 * 1.0 = 0.15 USD
    assert "<td>0.1500</td>" in html
    assert "retrieval_gap" in html and "no elements" in html  # n/a with its reason, not 0
    assert data.summary.n_escalated == 1 and data.summary.n_pending == 0 and data.reviewed == 1


def test_exports_every_table_as_csv_and_parquet(tmp_path):
    store = _store(tmp_path)
    try:
        data = collect(store, "r")
        tables = report_tables(data, method_sections(store, data))
    finally:
        store.close()
    written = export_tables(tables, tmp_path / "out")
    names = {p.name for p in written}
    assert {"decisions.csv", "decisions.parquet", "verdicts.parquet", "judges.csv", "elements.csv"} <= names
    decisions = pd.read_parquet(tmp_path / "out" / "decisions.parquet")
    assert decisions.loc[0, ["label", "reviewer", "review_label", "review_comment"]].tolist() == \
        ["yes", "ann <b>", "no", PAYLOAD]
    verdicts = pd.read_csv(tmp_path / "out" / "verdicts.csv")
    assert sorted(verdicts["judge"]) == ["gpt", "lexical"] and verdicts["prompt_tokens"].sum() == 120
    # seed 003's per-question record (issue 35, item 5): e1 was missed by the normal retrieval, found by the loose one
    (record,) = pd.read_parquet(tmp_path / "out" / "element_questions.parquet").to_dict("records")
    assert (record["result_label"], json.loads(record["newly_covered_in_loose"]),
            json.loads(record["covered_elements"])) == ("retrieval_gap", [f"E {PAYLOAD}"], [])


def test_cube_and_cuer_sections_show_their_table_or_say_why_not(tmp_path):
    from ragcourt.schema import Condition, ConditionKind, PerturbationEffect

    store = RecordStore(tmp_path / "store.sqlite")
    try:
        store.put(RunInfo(run_id="r", dataset="d", system="sys", config={"methods": ["cube", "cuer"]}))
        store.put_samples("r", [Sample(id="s1", question="q")])
        effects = (
            PerturbationEffect(condition=Condition(kind=ConditionKind.REMOVE, chunk_id="c1"), chunk_title="T <x>",
                               chunk_is_gold=True, d_soft_correct=-1.0, d_f1=-0.5, trace_divergence=1.0),
            PerturbationEffect(condition=Condition(kind=ConditionKind.REMOVE, chunk_id="c2"), chunk_is_gold=False,
                               d_soft_correct=0.0, d_f1=0.25, trace_divergence=0.0),
        )
        store.put(SampleDiagnostics(run_id="r", sample_id="s1", question="q", perturbations=effects))
        data = collect(store, "r")
        cube, cuer = method_sections(store, data)
    finally:
        store.close()
    assert cube.tables == () and cube.notes[0].startswith("n/a: no closed_book answers")
    table, conditions = cuer.tables  # the effects, then (issue 19 item 3) grounding / CE / trace per condition
    assert table.frame[["perturbation", "chunk", "d_f1", "rows"]].values.tolist() == [
        ["remove", "gold", -0.5, 1], ["remove", "non-gold", 0.25, 1]]
    assert conditions.frame[["perturbation", "chunk", "trace", "rows"]].values.tolist() == [
        ["normal", "none perturbed", "none", 1], ["remove", "gold", "reported", 1],
        ["remove", "non-gold", "reported", 1]]
    assert conditions.frame.trace_divergence.fillna(-1).tolist() == [-1, 1.0, 0.0]  # normal: n/a (NaN)
    chart = str(cuer.charts[0])
    assert chart.startswith("<svg") and "T &lt;x&gt;" in chart and "T <x>" not in chart


def test_a_judges_split_shows_as_such_in_the_drill_down_and_the_gap_chart(tmp_path):
    """A 1-1 split has no label: the check's decision reads "judges split", so does the element's verdict, and
    the gap chart counts the split element's fractions (half answered, half generation gap)."""
    store = _store(tmp_path)
    try:
        check = store.checks_for("r")[0]
        store.put(Reconciled(run_id="r", check_id=check.id, kind=check.kind, sample_id="s1",
                             method=ReconcileMethod.MAJORITY, agreement=0.5, n_scored=2, n_unscored=0, split=True,
                             escalated=True, provisional=True, escalation_reason="judges split (no 1, yes 1)"))
        split = element_outcome(Element(id="e1", text="Paris", index=0), True, None, 0.5)
        (diagnostics,) = store.get_diagnostics("r", "s1")
        store.put(diagnostics.model_copy(update={"elements": (split,)}))
        data = collect(store, "r")
        html = render_report(data, method_sections(store, data), nonce="N0NCE")
    finally:
        store.close()
    assert html.count("judges split") >= 2  # the element's in-answer verdict and the check's decision
    assert "n=0.5 decided elements missing from the answer (of 1 elements)" in unescape(html)
    assert "judges split on 1 elements" in unescape(html)
