"""report/cube_chart.py: the bounds chart is well-formed SVG with every marker where its score puts it."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from ragcourt.metrics.cube import AnswerSet, cube_report
from ragcourt.report.cube_chart import PLOT_X0, PLOT_X1, cube_bounds_svg, score_x

NS = "{http://www.w3.org/2000/svg}"
EVIL = 'judge <b>"&amp;'


def report():
    # Aggregated means: judge "<b>..." relevance closed 2 / rag 6 / oracle 10 -> 0.5; quality 4 / 8 / 4 -> degenerate.
    scores = {
        EVIL: {AnswerSet.CLOSED_BOOK: {"relevance": 2.0, "quality": 4.0},
               AnswerSet.RAG: {"relevance": 6.0, "quality": 8.0},
               AnswerSet.ORACLE: {"relevance": 10.0, "quality": 4.0}},
        "j2": {AnswerSet.CLOSED_BOOK: {"relevance": 0.0, "quality": 0.0},
               AnswerSet.RAG: {"relevance": 5.0, "quality": 5.0},
               AnswerSet.ORACLE: {"relevance": 10.0, "quality": 10.0}},
    }
    weights = {j: {"relevance": 1.0, "quality": 1.0} for j in scores}
    return cube_report(scores, 0.8, weights=weights)


def test_axis_maps_0_and_10_to_the_plot_edges() -> None:
    assert (score_x(0), score_x(10), score_x(5)) == (PLOT_X0, PLOT_X1, (PLOT_X0 + PLOT_X1) / 2)


def test_markers_sit_at_the_trimmed_means_and_labels_are_escaped() -> None:
    svg = cube_bounds_svg(report())
    root = ET.fromstring(svg)  # well-formed: the evil judge id did not break the markup
    assert root.tag == f"{NS}svg"
    texts = ["".join(t.itertext()) for t in root.iter(f"{NS}text")]
    assert any(t.startswith(EVIL) for t in texts)  # shown as text, not as markup
    assert "<b>" not in svg and "&lt;b&gt;" in svg
    filled = [float(c.get("cx")) for c in root.iter(f"{NS}circle") if c.get("fill") != "#fff"]
    # Panels in the report's dimension order (quality, relevance); in each, one row per judge.
    # RAG markers (filled circles, after the legend's): quality 8, 5; relevance 6, 5.
    assert filled[1:] == [round(score_x(v), 1) for v in (8, 5, 6, 5)]
    hollow = [float(c.get("cx")) for c in root.iter(f"{NS}circle") if c.get("fill") == "#fff"]
    assert hollow[1:] == [round(score_x(v), 1) for v in (4, 0, 2, 0)]  # closed-book markers
    squares = [float(r.get("x")) for r in root.iter(f"{NS}rect")]
    assert squares[1:] == [round(score_x(v) - 5, 1) for v in (4, 10, 10, 10)]  # oracle markers
    notes = [texts[i + 1] for i, t in enumerate(texts) if t.startswith(f"{EVIL} (w")]
    assert notes == ["normalized n/a [2]: degenerate bounds", "normalized 0.500"]
    # the chart lists the reason of every n/a it shows, numbered, at its bottom (wrapped)
    listed = " ".join(t.strip() for t in texts[texts.index("normalized 0.500"):])
    assert (f"[2] {EVIL}: quality n/a: degenerate bounds: oracle 4 <= closed book 4: the judge does not score the "
            "gold-document answers above the no-context ones") in listed
    assert "[1] mean ± sd across judges: quality n/a: an sd needs at least 2 judges with a quality; 1 has one" in listed
    assert "normalized mean ± sd across judges: 0.500 ± n/a [1]" in texts
    # the degenerate bound line is drawn red
    assert [line.get("stroke") for line in root.iter(f"{NS}line") if line.get("stroke-width") == "3"] == [
        "#a33", "#bbbbbb", "#bbbbbb", "#bbbbbb"]
    # spreads: relevance normalized 0.5 and 0.5 -> 0.500 ± 0.000; quality only j2 (0.5) -> sd n/a
    assert "normalized mean ± sd across judges: 0.500 ± 0.000" in texts
    # Wgt. Score: j1 totals closed 3, rag 7, oracle 7 -> 4/4 = 1; j2 0, 5, 10 -> 0.5; CuBE x 0.8
    assert f"{EVIL}: Wgt. Score 1.000, CuBE score 0.800" in texts
    assert "j2: Wgt. Score 0.500, CuBE score 0.400" in texts
    assert "CuBE score mean ± sd across judges: 0.600 ± 0.283" in texts
