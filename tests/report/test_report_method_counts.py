"""The counts behind the CuBE and CUE-R figures of the HTML report, from a store built by hand.

CuBE: three samples, two judges (one named with markup), dimensions relevance and quality, every sample answered
in the three answer sets: 18 dimension-score checks. Judge j<b> leaves (s3, closed book, relevance) unscored and
gives no verdict on (s2, oracle, quality); (s1, rag, relevance) and (s3, oracle, quality) are escalated.

  answer set / dimension    checks  scored  unscored  no verdict  escalated
  closed_book relevance        3       5        1          0          0
  closed_book quality          3       6        0          0          0
  rag relevance                3       6        0          0          1
  rag quality                  3       6        0          0          0
  oracle relevance             3       6        0          0          0
  oracle quality               3       5        0          1          1

CUE-R: q1 has remove, replace and duplicate of its gold chunk g1 and remove of d1; its replace answer failed
(unscored: no change). q2's remove:g2 was retrieved but never answered (unavailable); remove:d2 was. q3 has a
perturbed answer but no normal answer, so nothing to compare it with. No check is judged.
"""

from __future__ import annotations

import re
from html import unescape

import pytest

from ragcourt.analysis.cube_tables import CubeCount, cube_inputs, cube_of_inputs
from ragcourt.metrics.cube import AnswerSet
from ragcourt.report.data import collect
from ragcourt.report.html import render_report
from ragcourt.report.sections import method_sections
from ragcourt.schema import (
    NORMAL,
    Answer,
    Check,
    CheckKind,
    Chunk,
    Condition,
    ConditionKind,
    PerturbationEffect,
    Reconciled,
    ReconcileMethod,
    Retrieval,
    RunInfo,
    Sample,
    SampleDiagnostics,
    UnscoredReason,
    Verdict,
    VerdictStatus,
)
from ragcourt.stores.records import RecordStore

EVIL = 'j<b>"2'
GOLD = "Gold <x>"
SETS = {AnswerSet.CLOSED_BOOK: ConditionKind.CLOSED_BOOK, AnswerSet.RAG: ConditionKind.NORMAL,
        AnswerSet.ORACLE: ConditionKind.ORACLE}
SCORES = {AnswerSet.CLOSED_BOOK: 2.0, AnswerSet.RAG: 6.0, AnswerSet.ORACLE: 10.0}
UNSCORED = ("s3", AnswerSet.CLOSED_BOOK, "relevance")
NO_VERDICT = ("s2", AnswerSet.ORACLE, "quality")
ESCALATED = {("s1", AnswerSet.RAG, "relevance"), ("s3", AnswerSet.ORACLE, "quality")}
CUBE_CONFIG = {"methods": ["cube"], "judges": [{"model": "j1"}, {"model": EVIL}], "trim_proportion": 0.0,
               "dimensions": [{"name": "relevance", "weight": 1}, {"name": "quality", "weight": 1}]}


def _cube_store(store: RecordStore) -> None:
    store.put(RunInfo(run_id="cube", dataset="d", system="sys", config=CUBE_CONFIG))
    samples = [Sample(id=s, question=f"{s}?", gold_titles=(f"Gold {s}",)) for s in ("s1", "s2", "s3")]
    store.put_samples("cube", samples)
    for sample in samples:
        store.put(Retrieval(run_id="cube", sample_id=sample.id, condition=NORMAL, made_by="test",
                            chunks=(Chunk(id=f"{sample.id}-g", text="gold", title=f"Gold {sample.id}", rank=1),)))
        for answer_set, kind in SETS.items():
            condition = Condition(kind=kind)
            store.put(Answer(run_id="cube", sample_id=sample.id, condition=condition, text=f"{kind} answer"))
            for dimension in ("relevance", "quality"):
                check = Check(kind=CheckKind.DIMENSION_SCORE, sample_id=sample.id, condition=condition,
                              subject_id="answer", subject_text=f"{kind} answer", target_id="rubric",
                              target_text="rubric", dimension=dimension)
                store.put(check)
                store.link_checks("cube", sample.id, [check.id])
                place = (sample.id, answer_set, dimension)
                store.put(Verdict(check_id=check.id, judge_id="j1", status=VerdictStatus.OK,
                                  score=SCORES[answer_set]))
                if place == UNSCORED:
                    store.put(Verdict(check_id=check.id, judge_id=EVIL, status=VerdictStatus.UNSCORED,
                                      unscored_reason=UnscoredReason.OUT_OF_RANGE))
                elif place != NO_VERDICT:
                    store.put(Verdict(check_id=check.id, judge_id=EVIL, status=VerdictStatus.OK,
                                      score=SCORES[answer_set] + (7 if place in ESCALATED else 0)))
                store.put(Reconciled(run_id="cube", check_id=check.id, kind=check.kind, sample_id=sample.id,
                                     score=SCORES[answer_set], method=ReconcileMethod.MEAN, n_scored=2,
                                     n_unscored=0, escalated=place in ESCALATED))


def _effect(kind: ConditionKind, chunk: str, gold: bool, soft: float | None, title: str = "T") -> PerturbationEffect:
    return PerturbationEffect(condition=Condition(kind=kind, chunk_id=chunk), chunk_title=title, chunk_is_gold=gold,
                              d_soft_correct=soft, d_f1=soft, d_confidence=None if soft is None else 0.0,
                              trace_divergence=None if soft is None else 0.5)


def _cuer_store(store: RecordStore) -> None:
    store.put(RunInfo(run_id="cuer", dataset="d", system="sys", config={"methods": ["cuer"]}))
    store.put_samples("cuer", [Sample(id=q, question=f"{q}?") for q in ("q1", "q2", "q3")])
    R, P, D = ConditionKind.REMOVE, ConditionKind.REPLACE, ConditionKind.DUPLICATE
    answered = {("q1", NORMAL), ("q1", Condition(kind=R, chunk_id="g1")), ("q1", Condition(kind=R, chunk_id="d1")),
                ("q1", Condition(kind=D, chunk_id="g1")), ("q2", NORMAL), ("q2", Condition(kind=R, chunk_id="d2")),
                ("q3", Condition(kind=R, chunk_id="g3"))}
    for sample_id, condition in answered:
        store.put(Answer(run_id="cuer", sample_id=sample_id, condition=condition, text="an answer"))
    store.put(Answer(run_id="cuer", sample_id="q1", condition=Condition(kind=P, chunk_id="g1"), text="",
                     status=VerdictStatus.UNSCORED, unscored_reason=UnscoredReason.ERROR, error="boom"))
    retrieved = [*answered, ("q1", Condition(kind=P, chunk_id="g1")), ("q2", Condition(kind=R, chunk_id="g2"))]
    for sample_id, condition in retrieved:
        store.put(Retrieval(run_id="cuer", sample_id=sample_id, condition=condition, chunks=(), made_by="test"))
    store.put(SampleDiagnostics(run_id="cuer", sample_id="q1", question="q1?", perturbations=(
        _effect(R, "g1", True, -1.0, GOLD), _effect(R, "d1", False, 0.0), _effect(D, "g1", True, 0.0, GOLD),
        _effect(P, "g1", True, None, GOLD))))
    store.put(SampleDiagnostics(run_id="cuer", sample_id="q2", question="q2?",
                                perturbations=(_effect(R, "d2", False, 0.0),)))
    store.put(SampleDiagnostics(run_id="cuer", sample_id="q3", question="q3?"))


def _page(tmp_path, build, run_id: str):
    store = RecordStore(tmp_path / f"{run_id}.sqlite")
    try:
        build(store)
        data = collect(store, run_id)
        (section,) = method_sections(store, data)
        html = render_report(data, [section], nonce="N0NCE")
        inputs = cube_inputs(store, run_id, data.config) if run_id == "cube" else None
        counted = None if inputs is None else (cube_of_inputs(inputs, data.config), inputs.counts)
    finally:
        store.close()
    return section, html, counted


@pytest.fixture
def cube(tmp_path):
    return _page(tmp_path, _cube_store, "cube")


@pytest.fixture
def cuer(tmp_path):
    return _page(tmp_path, _cuer_store, "cuer")[:2]


def _section(html: str, anchor: str) -> str:
    return re.search(rf'<section id="{anchor}">(.*?)</section>', html, re.S).group(1)


def _texts(svg: str) -> list[str]:
    return [unescape(t) for t in re.findall(r"<text[^>]*>(.*?)</text>", svg, re.S)]


def _table(html: str, caption_start: str) -> tuple[list[str], list[list[str]]]:
    """Header and body cells (unescaped) of the table whose caption starts so."""
    table = re.search(rf"<caption>{re.escape(caption_start)}.*?</caption>(.*?)</table>", html, re.S).group(1)
    head, body = table.split("<tbody>")
    rows = [[unescape(c) for c in re.findall(r"<td>(.*?)</td>", row, re.S)]
            for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)]
    return [unescape(h) for h in re.findall(r"<th>(.*?)</th>", head)], rows


def _notes(html: str) -> list[str]:
    return [unescape(n) for n in re.findall(r'<p class="note">(.*?)</p>', html, re.S)]


def test_cube_counts_are_read_from_checks_verdicts_and_reconciled_records(cube):
    _, _, (report, counts) = cube
    assert counts.count(AnswerSet.CLOSED_BOOK, "relevance") == CubeCount(checks=3, scored=5, unscored=1)
    assert counts.count(AnswerSet.ORACLE, "quality") == CubeCount(checks=3, scored=5, no_verdict=1, escalated=1)
    assert counts.count(AnswerSet.RAG) == CubeCount(checks=6, scored=12, escalated=1)
    assert counts.count() == CubeCount(checks=18, scored=34, unscored=1, no_verdict=1, escalated=2)
    # the same n as the trimmed means: scored verdicts; their n_unscored: unscored and missing verdicts
    for answer_set in AnswerSet:
        for dimension in ("relevance", "quality"):
            means = [j.dimension_means[answer_set][dimension] for j in report.judges]
            count = counts.count(answer_set, dimension)
            assert sum(m.n for m in means) == count.scored
            assert sum(m.n_unscored for m in means) == count.unscored + count.no_verdict


def test_cube_chart_states_the_counts_per_answer_set_and_dimension(cube):
    _, html, _ = cube
    svg = re.search(r"<svg[^>]*><title>CuBE bounds per dimension</title>.*?</svg>", _section(html, "cube"),
                    re.S).group(0)
    texts = _texts(svg)
    assert "closed_book: n=11 scored verdicts · unscored 1 · escalated 0 of 6 checks" in texts
    assert "rag: n=12 scored verdicts · unscored 0 · escalated 1 of 6 checks" in texts
    assert "oracle: n=11 scored verdicts · unscored 0 · no verdict 1 · escalated 1 of 6 checks" in texts
    assert ("closed_book: n=5 · unscored 1 · escalated 0 of 3; rag: n=6 · unscored 0 · escalated 1 of 3; "
            "oracle: n=6 · unscored 0 · escalated 0 of 3") in texts  # the relevance panel
    assert ("closed_book: n=6 · unscored 0 · escalated 0 of 3; rag: n=6 · unscored 0 · escalated 0 of 3; "
            "oracle: n=5 · unscored 0 · no verdict 1 · escalated 1 of 3") in texts  # the quality panel
    assert any(t.startswith("escalated: checks whose judges disagreed") for t in texts)
    # escaped: the judge named with markup is text in the chart
    assert "<b>" not in svg and 'j&lt;b&gt;&quot;2' in svg and any(t.startswith(EVIL) for t in texts)


def test_cube_tables_state_the_counts(cube):
    _, html, _ = cube
    page = _section(html, "cube")
    assert "<b>" not in page
    header, rows = _table(page, "CuBE (seed 000, Table 4)")
    assert header[-5:] == ["checks", "scored", "unscored", "no_verdict", "escalated"]
    assert {row[0]: row[-5:] for row in rows} == {"j1": ["18", "18", "0", "0", "2"], EVIL: ["18", "16", "1", "1", "2"]}
    header, rows = _table(page, "Weighted totals per answer set")
    assert header == ["judge", "answer_set", "weighted_total", "checks", "scored", "unscored", "no_verdict",
                      "escalated"]
    by_row = {(row[0], row[1]): row[3:] for row in rows}
    assert by_row[(EVIL, "closed_book")] == ["6", "5", "1", "0", "0"]
    assert by_row[(EVIL, "oracle")] == ["6", "5", "0", "1", "1"]
    assert by_row[("j1", "rag")] == ["6", "6", "0", "0", "1"]
    header, rows = _table(page, "CuBE checks and verdicts per answer set and dimension")
    assert header == ["answer_set", "dimension", "checks", "scored", "unscored", "no_verdict", "escalated"]
    assert rows == [["closed_book", "relevance", "3", "5", "1", "0", "0"],
                    ["closed_book", "quality", "3", "6", "0", "0", "0"],
                    ["rag", "relevance", "3", "6", "0", "0", "1"],
                    ["rag", "quality", "3", "6", "0", "0", "0"],
                    ["oracle", "relevance", "3", "6", "0", "0", "0"],
                    ["oracle", "quality", "3", "5", "0", "1", "1"]]
    assert ("3 samples x 2 judges; every answer set: n=34 scored verdicts · unscored 1 · no verdict 1 · "
            "escalated 2 of 18 checks") in _notes(page)


def test_cuer_chart_and_table_say_no_check_was_judged_and_count_the_missing_answers(cuer):
    section, html = cuer
    page = _section(html, "cuer")
    n_line = ("n=5 perturbed answers (4 with a soft-correctness value to compare with the normal answer, 1 of them "
              "changed); no judged checks: unscored/escalated checks do not apply")
    missing = ("not produced: failed 1 (the system's answer is unscored: no change) · unavailable 1 (the system "
               "could not answer the condition)")
    uncompared = "not compared: 1 perturbed answers without a normal answer"
    texts = _texts(re.search(r"<svg.*?</svg>", page, re.S).group(0))
    assert texts[2:5] == [n_line, missing, uncompared]
    assert "remove: mean soft change gold -1.00 (n=1), non-gold +0.00 (n=2); 3 chunks · unavailable 1" in texts
    assert "replace: mean soft change gold n/a (n=0), non-gold n/a (n=0); 1 chunks · failed 1" in texts
    assert {n_line, missing, uncompared} <= set(_notes(page))
    header, rows = _table(page, f"CUE-R perturbation effects: {n_line}")
    assert header == ["perturbation", "chunk", "d_soft_correct", "d_f1", "d_confidence", "trace_divergence", "rows",
                      "n_d_soft_correct", "n_d_f1", "n_d_confidence", "n_trace_divergence", "failed"]
    cells = {(row[0], row[1]): row[2:] for row in rows}
    assert cells[("remove", "non-gold")] == ["0.000", "0.000", "0.000", "0.500", "2", "2", "2", "2", "2", "0"]
    assert cells[("replace", "gold")] == ["n/a", "n/a", "n/a", "n/a", "1", "0", "0", "0", "0", "1"]
    # escaped: the chunk title with markup
    assert GOLD not in page and "q1 · Gold &lt;x&gt; (gold)" in page
    assert section.tables[0].frame["rows"].sum() == 5  # no closed-book row: the run has no closed-book answer
    not_run = ("closed-book control (seed 004: the question alone, no context): not run (add closed_book to the "
               "config's conditions, e.g. conditions: [normal, closed_book]; --method cuer adds it to a new run)")
    assert not_run in _notes(page) and not_run in texts
