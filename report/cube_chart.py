"""The CuBE bounds chart (seed 000): per dimension and judge, where the RAG system's trimmed mean score sits
between the closed-book (zero-score) and the oracle (full-score) answer sets, on the fixed 0-10 rubric scale.

A pure function from a CubeReport to SVG text: no plotting library, every label escaped, presentation
attributes only (no `style`), so the text can be inserted into a page or written to a file as it is.
A missing mean is written "n/a" with nothing drawn; degenerate bounds (oracle <= closed book) are drawn as
they are and flagged, since the normalized score is n/a there.
"""

from __future__ import annotations

from html import escape

from ragcourt.metrics.cube import AnswerSet, CubeReport, JudgeCube, Spread
from ragcourt.tables import CubeCounts

WIDTH = 640
LABEL_W = 170  # judge label column
PLOT_X0, PLOT_X1 = LABEL_W + 10, WIDTH - 30  # x of score 0 and score 10
ROW_H = 34
COLORS = {AnswerSet.CLOSED_BOOK: "#888888", AnswerSet.RAG: "#3b6ea8", AnswerSet.ORACLE: "#5a9a5a"}
FONT = 'font-family="system-ui, sans-serif" font-size="12"'


def score_x(score: float) -> float:
    """x of a 0-10 score on the shared axis (scores outside 0-10 are drawn where they fall)."""
    return PLOT_X0 + score / 10.0 * (PLOT_X1 - PLOT_X0)


def _fmt(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _spread(spread: Spread) -> str:
    if spread.mean is None:
        return "n/a"
    return f"{spread.mean:.3f} ± {'n/a' if spread.sd is None else f'{spread.sd:.3f}'}"


def _marker(answer_set: AnswerSet, x: float, y: float) -> str:
    color = COLORS[answer_set]
    if answer_set is AnswerSet.ORACLE:
        return f'<rect x="{x - 5:.1f}" y="{y - 5:.1f}" width="10" height="10" fill="#fff" stroke="{color}" stroke-width="2"/>'
    if answer_set is AnswerSet.CLOSED_BOOK:
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5" fill="#fff" stroke="{color}" stroke-width="2"/>'
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="6" fill="{color}"/>'


def _judge_row(judge: JudgeCube, dimension: str, y: float) -> list[str]:
    weights = judge.weights.weights
    weight = f" (w {weights[dimension]:.2f})" if weights is not None and dimension in weights else ""
    parts = [f'<text x="6" y="{y + 4:.1f}">{escape(judge.judge[:22])}{escape(weight)}</text>']
    means = {aset: judge.dimension_means[aset][dimension].value for aset in AnswerSet}
    lower, upper = means[AnswerSet.CLOSED_BOOK], means[AnswerSet.ORACLE]
    if lower is not None and upper is not None:
        stroke = "#a33" if upper <= lower else "#bbbbbb"
        parts.append(f'<line x1="{score_x(lower):.1f}" y1="{y:.1f}" x2="{score_x(upper):.1f}" y2="{y:.1f}" '
                     f'stroke="{stroke}" stroke-width="3"/>')
    for aset in (AnswerSet.CLOSED_BOOK, AnswerSet.ORACLE, AnswerSet.RAG):
        if means[aset] is not None:
            parts.append(_marker(aset, score_x(means[aset]), y))
    normalized = judge.normalized_dimensions[dimension]
    missing = [str(aset) for aset, value in means.items() if value is None]
    note = f"n/a: no {', '.join(missing)} mean" if missing else (
        f"n/a: {normalized.na_reason}" if normalized.value is None else f"normalized {normalized.value:.3f}")
    fill = "#a33" if normalized.value is None else "#333"
    parts.append(f'<text x="{PLOT_X0}" y="{y + 19:.1f}" font-size="10" fill="{fill}">{escape(note[:80])}</text>')
    return parts


CUBE_COUNTS_LEGEND = ("n: scored verdicts in the trimmed means · unscored: verdicts left out, never counted as 0",
                      "escalated: checks whose judges disagreed; each judge's own score still counts")
CHAR_W = 6.6  # rough width of a character at font-size 12 (10 px text: about 5.5)


def _panel_counts(counts: CubeCounts, dimension: str) -> str:
    """The counts of one dimension per answer set, on one line of the panel."""
    parts = []
    for answer_set in AnswerSet:
        count = counts.count(answer_set=answer_set, dimension=dimension)
        missing = f" · no verdict {count.no_verdict}" if count.no_verdict else ""
        parts.append(f"{answer_set}: n={count.scored} · unscored {count.unscored}{missing} · "
                     f"escalated {count.escalated} of {count.checks}")
    return "; ".join(parts)


def cube_bounds_svg(report: CubeReport, title: str = "CuBE bounds per dimension", *,
                    counts: CubeCounts | None = None) -> str:
    """One panel per dimension, one row per judge: closed book (hollow circle), RAG (filled circle), oracle
    (hollow square) trimmed means on 0-10; then each judge's Wgt. Score and CuBE score and the spread.

    counts (tables.cube_table_counted): under the legend the checks and verdicts behind each answer set, and in
    each panel those of its dimension; the chart widens to fit them."""
    dimensions = list(report.dimension_spread)
    n_judges = len(report.judges)
    caption: list[str] = []
    if counts is not None:
        caption = [*CUBE_COUNTS_LEGEND,
                   *(f"{answer_set}: {counts.count(answer_set=answer_set).note()}" for answer_set in AnswerSet)]
    panel_lines = {d: _panel_counts(counts, d) for d in dimensions} if counts is not None else {}
    extra = 14 if counts is not None else 0  # the counts line of each panel
    panel_h = 22 + extra + ROW_H * n_judges + 10
    footer_h = 20 * (n_judges + 2)
    top = 56 + 16 * len(caption)
    height = top + panel_h * len(dimensions) + footer_h
    width = max([WIDTH, *(int(len(line) * CHAR_W) + 12 for line in caption),
                 *(int(len(line) * 5.5) + LABEL_W + 12 for line in panel_lines.values())])
    parts = [
        (f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width}" height="{height}" '
         f'viewBox="0 0 {width} {height}" {FONT}>'),
        f"<title>{escape(title)}</title>",
        f'<text x="6" y="18" font-weight="bold">{escape(title)}</text>',
        _marker(AnswerSet.CLOSED_BOOK, 12, 36), '<text x="22" y="40">closed book</text>',
        _marker(AnswerSet.RAG, 112, 36), '<text x="122" y="40">RAG</text>',
        _marker(AnswerSet.ORACLE, 172, 36), '<text x="182" y="40">oracle</text>',
        (f'<text x="250" y="40" fill="#555">trimmed means on the 0-10 rubric scale; R@k '
         f"{_fmt(report.r_at_k.value, 3)}</text>"),
        *(f'<text x="6" y="{58 + 16 * i}" fill="#555">{escape(line)}</text>' for i, line in enumerate(caption)),
    ]
    y = top
    for dimension in dimensions:
        parts.append(f'<text x="6" y="{y + 14}" font-weight="bold">{escape(dimension)}</text>')
        parts.append(f'<text x="{LABEL_W}" y="{y + 14}" fill="#555">normalized mean ± sd across judges: '
                     f"{escape(_spread(report.dimension_spread[dimension]))}</text>")
        if dimension in panel_lines:
            parts.append(f'<text x="{LABEL_W}" y="{y + 28}" font-size="10" fill="#555">'
                         f"{escape(panel_lines[dimension])}</text>")
        axis_y = y + 22 + extra + ROW_H * n_judges
        parts.append(f'<line x1="{PLOT_X0}" y1="{axis_y - 4}" x2="{PLOT_X1}" y2="{axis_y - 4}" stroke="#ccc"/>')
        for tick in range(0, 11, 2):
            parts.append(f'<text x="{score_x(tick):.1f}" y="{axis_y + 6}" font-size="9" text-anchor="middle" '
                         f'fill="#777">{tick}</text>')
        for i, judge in enumerate(report.judges):
            parts.extend(_judge_row(judge, dimension, y + 30 + extra + ROW_H * i))
        y += panel_h
    for judge in report.judges:
        parts.append(f'<text x="6" y="{y + 14}">{escape(judge.judge[:40])}: Wgt. Score '
                     f"{_fmt(judge.weighted_score.value, 3)}, CuBE score {_fmt(judge.cube_score.value, 3)}</text>")
        y += 20
    parts.append(f'<text x="6" y="{y + 14}" font-weight="bold">CuBE score mean ± sd across judges: '
                 f"{escape(_spread(report.cube_score_spread))}</text>")
    parts.append("</svg>")
    return "".join(parts)
