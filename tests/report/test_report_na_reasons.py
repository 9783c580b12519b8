"""Every n/a of the CuBE section says why and what to do; the retrieved-only analysis (seed 000, 5.3) is on the
page; rule-based judges are called out; CUE-R words its n and shows the closed-book control. Stores built by hand.

"rules" (the offline walk-through): 4 samples, the gold document retrieved at rank 1 for each (top_k 5: rank score
10 - 1 = 9 for all), judges lexical and semantic with automatic weights, both scoring every dimension alike:
  closed book 0 0 0 0 -> 0; RAG 2 5 1 5 -> 3.25; oracle 2 5 5 5 -> 4.25; normalized 3.25 / 4.25 = 0.765
The rank score is constant, so no dimension correlates with it: the weights, Wgt. Score, CuBE score and weighted
totals are n/a, and r_all and r_retrieved too (mean_retrieved 3.25, sd_retrieved 2.062 over 4 retrieved samples).
CUE-R: two perturbed answers per sample, none changing soft correctness; the closed-book answers "I don't know."
against normal answers of which one (s1: "Paris") is right: soft correctness 0 vs 0.25, F1 0 vs 0.25.

"fixed" (LLM judges, weight 1 per dimension): 3 samples, the gold document retrieved only for s1 (rank 2 of 5:
rank score 8; s2, s3: 0). RAG scores 8, 3, 5; closed book 0; oracle 10. r_all = corr([8, 3, 5], [8, 0, 0]) =
0.9177; r_retrieved and sd_retrieved n/a (one retrieved sample); Wgt. Score 0.5333, R@k 1/3, CuBE 0.1778.
"""

from __future__ import annotations

import csv
import re
from html import unescape

import pytest

from ragcourt.analysis.cube_tables import (
    cube_bounds_noted_frame,
    cube_inputs,
    cube_noted_frame,
    cube_of_inputs,
    cube_retrieved_only_noted,
)
from ragcourt.analysis.na_notes import NaNotes
from ragcourt.metrics.cube import AnswerSet
from ragcourt.report.data import collect
from ragcourt.report.export import export_tables
from ragcourt.report.html import render_report
from ragcourt.report.method_charts import CUBE_CHART, CUER_CHART, write_method_charts
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
    Retrieval,
    RunInfo,
    Sample,
    SampleDiagnostics,
    Verdict,
    VerdictStatus,
)
from ragcourt.stores.records import RecordStore

SETS = {AnswerSet.CLOSED_BOOK: ConditionKind.CLOSED_BOOK, AnswerSet.RAG: ConditionKind.NORMAL,
        AnswerSet.ORACLE: ConditionKind.ORACLE}
DIMENSIONS = ("relevance", "quality")


def _cube(store: RecordStore, run_id: str, config: dict, ranks: dict[str, int],
          scores: dict[AnswerSet, list[float]], judges: tuple[str, ...], texts: dict[str, str]) -> None:
    store.put(RunInfo(run_id=run_id, dataset="d", system="sys", config=config))
    ids = list(ranks)
    samples = [Sample(id=s, question=f"{s}? <q>", gold_titles=(f"Gold {s}",), gold_answers=("Paris",)) for s in ids]
    store.put_samples(run_id, samples)
    for position, sample in enumerate(samples):
        others = [Chunk(id=f"{sample.id}-x{i}", text="filler", title=f"Other {i}") for i in (1, 2)]
        chunks = list(others)
        if ranks[sample.id]:
            chunks.insert(ranks[sample.id] - 1, Chunk(id=f"{sample.id}-g", text="gold", title=f"Gold {sample.id}"))
        chunks = [c.model_copy(update={"rank": i}) for i, c in enumerate(chunks, start=1)]
        store.put(Retrieval(run_id=run_id, sample_id=sample.id, condition=NORMAL, made_by="test", chunks=tuple(chunks)))
        for answer_set, kind in SETS.items():
            condition = Condition(kind=kind)
            text = texts.get(f"{sample.id}:{kind}", f"{kind} answer")
            store.put(Answer(run_id=run_id, sample_id=sample.id, condition=condition, text=text))
            for dimension in DIMENSIONS:
                check = Check(kind=CheckKind.DIMENSION_SCORE, sample_id=sample.id, condition=condition,
                              subject_id="answer", subject_text=text, target_id="rubric", target_text="rubric",
                              dimension=dimension)
                store.put(check)
                store.link_checks(run_id, sample.id, [check.id])
                for judge in judges:
                    store.put(Verdict(check_id=check.id, judge_id=judge, model_id=judge, status=VerdictStatus.OK,
                                      score=scores[answer_set][position]))


def _rules_store(store: RecordStore) -> None:
    config = {"methods": ["cube", "cuer"], "judges": [{"model": "lexical"}, {"model": "semantic"}],
              "trim_proportion": 0.0, "top_k": 5, "dimensions": [{"name": d} for d in DIMENSIONS]}
    texts = {"s1:normal": "Paris", **{f"s{i}:closed_book": "I don't know." for i in range(1, 5)}}
    _cube(store, "rules", config, {"s1": 1, "s2": 1, "s3": 1, "s4": 1},
          {AnswerSet.CLOSED_BOOK: [0, 0, 0, 0], AnswerSet.RAG: [2, 5, 1, 5], AnswerSet.ORACLE: [2, 5, 5, 5]},
          ("lexical", "semantic"), texts)
    for i in range(1, 5):
        sample_id = f"s{i}"
        store.put(Retrieval(run_id="rules", sample_id=sample_id, condition=Condition(kind=ConditionKind.CLOSED_BOOK),
                            chunks=(), made_by="test"))
        effects = []
        for kind, chunk in ((ConditionKind.REMOVE, f"{sample_id}-g"), (ConditionKind.DUPLICATE, f"{sample_id}-x1")):
            condition = Condition(kind=kind, chunk_id=chunk)
            store.put(Answer(run_id="rules", sample_id=sample_id, condition=condition, text="same answer"))
            effects.append(PerturbationEffect(condition=condition, chunk_title="T", chunk_is_gold=kind is
                                              ConditionKind.REMOVE, d_soft_correct=0.0, d_f1=0.0))
        store.put(SampleDiagnostics(run_id="rules", sample_id=sample_id, question=f"{sample_id}?",
                                    perturbations=tuple(effects)))


def _fixed_store(store: RecordStore) -> None:
    config = {"methods": ["cube", "cuer"], "judges": [{"model": "j1"}, {"model": "j2"}], "trim_proportion": 0.0,
              "top_k": 5, "dimensions": [{"name": d, "weight": 1} for d in DIMENSIONS]}
    _cube(store, "fixed", config, {"s1": 2, "s2": 0, "s3": 0},
          {AnswerSet.CLOSED_BOOK: [0, 0, 0], AnswerSet.RAG: [8, 3, 5], AnswerSet.ORACLE: [10, 10, 10]},
          ("j1", "j2"), {})
    condition = Condition(kind=ConditionKind.REMOVE, chunk_id="s1-g")
    store.put(Answer(run_id="fixed", sample_id="s1", condition=condition, text="an answer"))
    store.put(SampleDiagnostics(run_id="fixed", sample_id="s1", question="s1?", perturbations=(
        PerturbationEffect(condition=condition, chunk_title="Gold s1", chunk_is_gold=True, d_soft_correct=-1.0,
                           d_f1=-1.0),)))


def _page(tmp_path, build, run_id: str):
    store = RecordStore(tmp_path / f"{run_id}.sqlite")
    try:
        build(store)
        data = collect(store, run_id)
        sections = method_sections(store, data)
        html = render_report(data, sections, nonce="N0NCE")
        written = write_method_charts(store, run_id, data.config, tmp_path / run_id)
        charts = {path.name: path.read_text(encoding="utf-8") for path in written}
        config = data.config
        inputs = cube_inputs(store, run_id, config)
        report = cube_of_inputs(inputs, config)
        retrieved = cube_retrieved_only_noted(inputs)
    finally:
        store.close()
    return {"sections": sections, "html": html, "charts": charts, "report": report, "inputs": inputs,
            "retrieved": retrieved, "config": config}


@pytest.fixture
def rules(tmp_path):
    return _page(tmp_path, _rules_store, "rules")


@pytest.fixture
def fixed(tmp_path):
    return _page(tmp_path, _fixed_store, "fixed")


def _section(html: str, anchor: str) -> str:
    return re.search(rf'<section id="{anchor}">(.*?)</section>', html, re.S).group(1)


def _table(html: str, caption_start: str) -> tuple[list[str], list[list[str]]]:
    """Header and body cells of the table whose caption starts so; a cell's note link reads " [k]"."""
    table = re.search(rf"<caption>{re.escape(caption_start)}.*?</caption>(.*?)</table>", html, re.S).group(1)
    head, body = table.split("<tbody>")
    rows = [[unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<td>(.*?)</td>", row, re.S)]
            for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)]
    return [unescape(h) for h in re.findall(r"<th>(.*?)</th>", head)], rows


def _notes(page: str, anchor: str) -> dict[int, str]:
    """The numbered n/a notes of a section: number -> text."""
    return {int(n): unescape(t) for n, t in re.findall(rf'<li id="{anchor}-note-(\d+)">(.*?)</li>', page, re.S)}


def _texts(svg: str) -> list[str]:
    return [unescape(t) for t in re.findall(r"<text[^>]*>(.*?)</text>", svg, re.S)]


RANK_SCORE_IS = ("rank score = 10 - rank of the gold document in the normal retrieval (seed 000's own, defined up to "
                 "TOP-N 9), a point more when the gold document was the only document retrieved, 0 when it was not "
                 "retrieved")
WEIGHTS = (f"the dimension weights are n/a: no dimension correlates with the rank score ({RANK_SCORE_IS}): relevance, "
           "quality: a correlation needs variation: the rank score is constant (the same for all 4 samples); "
           "automatic weights are undefined, so give every dimension a fixed numeric weight (weight: 1 in the "
           "config's dimensions weighs them equally). In this run every sample's gold document was at rank 1 of "
           "TOP-N 5: the rank score is 9 for all 4 samples, so nothing can correlate with it.")
RULES = ("rule-based judges score every dimension as 10 x token F1 against the reference: the dimensions and the "
         "judges cannot differ; use LLM judges for CuBE")


def test_every_cube_na_cell_points_to_a_reason_that_says_what_to_do(rules):
    page = _section(rules["html"], "cube")
    notes = _notes(page, "cube")
    header, rows = _table(page, "CuBE (seed 000, Table 4)")
    assert header[:5] == ["judge", "relevance", "quality", "wgt_score", "cube_score"]  # na_reason is export-only
    assert "na_reason" not in header
    assert [row[:5] for row in rows] == [["lexical", "0.765", "0.765", "n/a [1]", "n/a [1]"],
                                         ["semantic", "0.765", "0.765", "n/a [1]", "n/a [1]"]]
    assert notes[1] == ("lexical: wgt_score, cube_score, wgt_score_all, cube_score_all, weighted_total closed_book, "
                        "weighted_total rag, weighted_total oracle; semantic: wgt_score, cube_score, wgt_score_all, "
                        "cube_score_all, weighted_total closed_book, weighted_total rag, "
                        f"weighted_total oracle n/a: {WEIGHTS}")
    _, rows = _table(page, "Weighted totals per answer set")
    assert {row[2] for row in rows} == {"n/a [1]"} and len(rows) == 6
    # the link targets the note
    assert '<a class="noteref" href="#cube-note-1">[1]</a>' in page
    # the CuBE score across judges says why it is n/a too
    spread = next(n for n, t in notes.items() if t.startswith("mean ± sd across judges: cube_score n/a"))
    assert f"R@k = 100.00%; CuBE score across judges: n/a [{spread}]" in [unescape(n) for n in re.findall(
        r'<p class="note">(.*?)</p>', page, re.S)]
    assert notes[spread].endswith("every judge's cube_score is n/a (see that judge's note)")
    # the notes of Table 4 and of the bounds, numbered together, say the same outside the page: each reason once
    report, inputs = rules["report"], rules["inputs"]
    na = NaNotes()
    cube_noted_frame(report, inputs.counts, na)
    cube_bounds_noted_frame(report, inputs.counts, na)
    assert na.entries()[0] == (
        "lexical: wgt_score, cube_score, wgt_score_all, cube_score_all, weighted_total closed_book, weighted_total rag, "
        "weighted_total oracle; semantic: wgt_score, cube_score, wgt_score_all, cube_score_all, weighted_total "
        f"closed_book, weighted_total rag, weighted_total oracle n/a: {WEIGHTS}")


def test_the_bounds_chart_numbers_its_na_figures_with_the_section_notes(rules):
    page = _section(rules["html"], "cube")
    texts = _texts(re.search(r"<svg.*?</svg>", page, re.S).group(0))
    assert "lexical: Wgt. Score n/a [1], CuBE score n/a [1]" in texts
    assert "n/a [k]: the reason is note k below the chart" in texts
    # the chart written to the run directory lists its own notes (wrapped), the rule-based warning on top
    own = " ".join(t.strip() for t in _texts(rules["charts"][CUBE_CHART]))
    assert ("[1] lexical: wgt_score, cube_score, wgt_score_all, cube_score_all; semantic: wgt_score, cube_score, "
            "wgt_score_all, cube_score_all n/a: the dimension weights are n/a") in own
    assert "give every dimension a fixed numeric weight (weight: 1 in the config's dimensions weighs them equally)" in own
    assert RULES in own


def test_rule_based_judges_are_called_out(rules, fixed):
    page = _section(rules["html"], "cube")
    warnings = [unescape(w) for w in re.findall(r'<p class="warning">(.*?)</p>', page, re.S)]
    assert warnings == [f"{RULES}. Every judge of this run is rule-based (lexical, semantic): equal cells and an sd "
                        "of 0 across judges are not agreement"]
    assert 'class="warning"' not in _section(fixed["html"], "cube")  # LLM judges: no warning


def test_the_retrieved_only_analysis_is_on_the_page_with_its_reasons(rules, fixed):
    page = _section(rules["html"], "cube")
    notes = _notes(page, "cube")
    header, rows = _table(page, "CuBE retrieved-only analysis (seed 000, 5.3)")
    assert header == ["judge", "dimension", "r_all", "r_retrieved", "mean_retrieved", "sd_retrieved", "n_retrieved"]
    assert rows[0] == ["lexical", "relevance", "n/a [2]", "n/a [3]", "3.250", "2.062", "4"]
    assert len(rows) == 4
    assert notes[2].endswith("r_all n/a: a correlation needs variation: the rank score is constant (the same for all 4 "
                             "samples); it needs questions whose gold documents are retrieved at different ranks or "
                             "missed")
    assert notes[3].endswith("the rank score is constant (the same for all 4 samples) among the samples whose gold "
                             "document was retrieved; it needs questions whose gold documents are retrieved at "
                             "different ranks")

    page = _section(fixed["html"], "cube")
    notes = _notes(page, "cube")
    _, rows = _table(page, "CuBE retrieved-only analysis (seed 000, 5.3)")
    assert rows[0] == ["j1", "relevance", "0.918", "n/a [1]", "8.000", "n/a [2]", "1"]
    assert notes[1] == ("j1: relevance r_retrieved, quality r_retrieved; j2: relevance r_retrieved, quality r_retrieved "
                        "n/a: a correlation needs at least 2 samples (and variation): 1 sample(s) with both the RAG "
                        "score and the rank score among the samples whose gold document was retrieved; run more "
                        "questions (whose gold document the retrieval finds)")
    assert notes[2].endswith("sd_retrieved n/a: an sd needs at least 2 samples; 1 sample whose gold document was "
                             "retrieved has a score (run more questions)")
    # fixed weights: Table 4 has every figure, no note points there. Seed 000's reading (the default) averages the
    # RAG scores of the retrieved case s1 (8 -> 0.8, x R@k 1/3); the all-samples reading (8, 3, 5) -> 0.533, 0.178.
    _, rows = _table(page, "CuBE (seed 000, Table 4)")
    assert [row[:7] for row in rows] == [["j1", "0.800", "0.800", "0.800", "0.267", "0.533", "0.178"],
                                         ["j2", "0.800", "0.800", "0.800", "0.267", "0.533", "0.178"]]
    assert "weights: fixed, from the config's dimensions" in unescape(page)
    # the terminal's table: "n/a [k]" cells and the numbered reasons
    terminal = fixed["retrieved"]
    assert list(terminal.marked().iloc[0]) == ["j1", "relevance", pytest.approx(0.9177, abs=1e-4), "n/a [1]", 8.0,
                                               "n/a [2]", 1]
    assert terminal.lines()[0].startswith("[1] j1: relevance r_retrieved, quality r_retrieved; j2:")


def test_the_export_holds_the_reasons(rules, tmp_path):
    table = next(t for t in rules["sections"][0].tables if t.name == "cube_retrieved_only")
    export_tables([table], tmp_path / "export")
    with (tmp_path / "export" / "cube_retrieved_only.csv").open(encoding="utf-8") as handle:
        first = next(csv.DictReader(handle))
    assert first["r_all"] == "" and first["na_reason"].startswith(
        "r_all: a correlation needs variation: the rank score is constant (the same for all 4 samples); ")
    assert "; r_retrieved: a correlation needs variation" in first["na_reason"]


def test_cuer_counts_values_to_compare_and_shows_the_closed_book_control(rules):
    page = _section(rules["html"], "cuer")
    n_line = ("n=8 perturbed answers (8 with a soft-correctness value to compare with the normal answer, 0 of them "
              "changed); no judged checks: unscored/escalated checks do not apply")
    control = ("closed-book control (seed 004: the question alone, no context), n=4 samples (4 with both answers "
               "scored): soft correctness 0.000 vs normal 0.250 (change -0.250); F1 0.000 vs normal 0.250 (change "
               "-0.250)")
    notes = [unescape(n) for n in re.findall(r'<p class="note">(.*?)</p>', page, re.S)]
    assert n_line in notes and control in notes
    _, rows = _table(page, "CUE-R perturbation effects")
    assert rows[-1][:8] == ["closed_book", "none (no context)", "-0.250", "-0.250", "n/a", "0.000", "4", "4"]
    texts = _texts(re.search(r"<svg.*?</svg>", page, re.S).group(0))
    assert n_line in texts and control in texts
    assert "closed book (all chunks removed), n=4" in texts
    assert "mean soft -0.25 (closed 0.00 vs normal 0.25) F1 -0.25" in texts
    assert control in _texts(rules["charts"][CUER_CHART])



def test_markup_in_the_store_stays_text(rules):
    assert "<q>" not in rules["html"] and "&lt;q&gt;" in rules["html"]
