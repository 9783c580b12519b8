"""The CuBE bounds chart (seed 000): per dimension and judge, where the RAG system's trimmed mean score sits
between the closed-book (zero-score) and the oracle (full-score) answer sets, on the fixed 0-10 rubric scale.

A pure function from a CubeReport to SVG text: no plotting library, every label escaped, presentation
attributes only (no `style`), so the text can be inserted into a page or written to a file as it is.
A missing mean is written "n/a" with nothing drawn; degenerate bounds (oracle <= closed book) are drawn as
they are and flagged, since the normalized score is n/a there. Every n/a carries the number of its reason: the
reasons are listed at the bottom of the chart, or, when the caller passes its own notes (the HTML report), in
those notes below the chart.
"""

from __future__ import annotations

import textwrap
from html import escape

from ragcourt.analysis.cube_tables import (
    SPREAD,
    CubeCounts,
    cube_r_at_k_reason,
    cube_reasons,
    cube_spread_reasons,
    figure,
)
from ragcourt.analysis.na_notes import NaNotes
from ragcourt.metrics.cube import AnswerSet, CubeReading, CubeReport, JudgeCube, Spread

WIDTH = 640
LABEL_W = 170  # judge label column
PLOT_X0, PLOT_X1 = LABEL_W + 10, WIDTH - 30  # x of score 0 and score 10
ROW_H = 34
COLORS = {AnswerSet.CLOSED_BOOK: "#888888", AnswerSet.RAG: "#3b6ea8", AnswerSet.ORACLE: "#5a9a5a"}
FONT = 'font-family="system-ui, sans-serif" font-size="12"'


def score_x(score: float) -> float:
    """x of a 0-10 score on the shared axis (scores outside 0-10 are drawn where they fall)."""
    return PLOT_X0 + score / 10.0 * (PLOT_X1 - PLOT_X0)


def _spread(spread: Spread, note: int | None = None) -> str:
    ref = "" if note is None else f" [{note}]"
    if spread.mean is None:
        return f"n/a{ref}"
    return f"{spread.mean:.3f} ± {f'n/a{ref}' if spread.sd is None else f'{spread.sd:.3f}'}"


def _na(value: float | None, note: int | None, digits: int = 3) -> str:
    """A figure, or "n/a [k]" with the number of its reason."""
    if value is not None:
        return f"{value:.{digits}f}"
    return "n/a" if note is None else f"n/a [{note}]"


def _marker(answer_set: AnswerSet, x: float, y: float) -> str:
    color = COLORS[answer_set]
    if answer_set is AnswerSet.ORACLE:
        return f'<rect x="{x - 5:.1f}" y="{y - 5:.1f}" width="10" height="10" fill="#fff" stroke="{color}" stroke-width="2"/>'
    if answer_set is AnswerSet.CLOSED_BOOK:
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5" fill="#fff" stroke="{color}" stroke-width="2"/>'
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="6" fill="{color}"/>'


def _other_rag_marker(x: float, y: float) -> str:
    """The RAG mean of a reading other than the default (a hollow diamond, so the default's filled circle and
    this one stay apart where they meet)."""
    color = COLORS[AnswerSet.RAG]
    return (f'<polygon points="{x:.1f},{y - 6:.1f} {x + 6:.1f},{y:.1f} {x:.1f},{y + 6:.1f} {x - 6:.1f},{y:.1f}" '
            f'fill="#fff" stroke="{color}" stroke-width="2"/>')


def _judge_row(judge: JudgeCube, dimension: str, y: float, reasons: dict[str, str], notes: NaNotes) -> list[str]:
    weights = judge.weights.weights
    weight = f" (w {weights[dimension]:.2f})" if weights is not None and dimension in weights else ""
    parts = [f'<text x="6" y="{y + 4:.1f}">{escape(judge.judge[:22])}{escape(weight)}</text>']
    means = {aset: judge.dimension_means[aset][dimension].value for aset in AnswerSet}
    lower, upper = means[AnswerSet.CLOSED_BOOK], means[AnswerSet.ORACLE]
    if lower is not None and upper is not None:
        stroke = "#a33" if upper <= lower else "#bbbbbb"
        parts.append(f'<line x1="{score_x(lower):.1f}" y1="{y:.1f}" x2="{score_x(upper):.1f}" y2="{y:.1f}" '
                     f'stroke="{stroke}" stroke-width="3"/>')
    for reading, figures in judge.readings.items():
        if reading is not judge.reading and (other := figures.rag_means[dimension].value) is not None:
            parts.append(_other_rag_marker(score_x(other), y))
    for aset in (AnswerSet.CLOSED_BOOK, AnswerSet.ORACLE, AnswerSet.RAG):
        if (mean := means[aset]) is not None:
            parts.append(_marker(aset, score_x(mean), y))
    normalized = judge.normalized_dimensions[dimension]
    if normalized.value is None:
        reason = reasons.get(dimension, str(normalized.na_reason))
        missing = [str(aset) for aset, value in means.items() if value is None]
        cause = f"no {', '.join(missing)} mean" if missing else reason.split(":")[0]
        note = f"normalized n/a [{notes.ref(reason, judge.judge, dimension)}]: {cause}"
    else:
        note = f"normalized {normalized.value:.3f}"
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


NOTE_CHARS = 110  # a note line of the chart's own notes, wrapped
READING_MARKERS = {CubeReading.RETRIEVED: "RAG over the retrieved cases (seed 000's reading)",
                   CubeReading.ALL: "RAG over every sample"}


def _readings_legend(report: CubeReport) -> list[str]:
    """With more than one reading of the RAG set: which marker, Wgt. Score and CuBE score is which."""
    if len(report.reading_order) < 2:
        return []
    others = "; ".join(f"hollow diamond: {READING_MARKERS[r]}, its scores on the line '{r.label}:'"
                       for r in report.reading_order[1:])
    return [f"filled circle: {READING_MARKERS[report.reading]}, the default (Wgt. Score and CuBE score first); "
            f"{others}"]


def cube_bounds_svg(report: CubeReport, title: str = "CuBE bounds per dimension", *,
                    counts: CubeCounts | None = None, notes: NaNotes | None = None, warning: str | None = None
                    ) -> str:
    """One panel per dimension, one row per judge: closed book (hollow circle), RAG (filled circle; another
    reading of the RAG set, a hollow diamond), oracle (hollow square) trimmed means on 0-10; then each judge's
    Wgt. Score and CuBE score per reading and their spread.

    counts (the `counts` of cube_tables.cube_inputs): under the legend the checks and verdicts behind each answer
    set, and in each panel those of its dimension; the chart widens to fit them. Every n/a is followed by the number of its
    reason: in notes when given (the caller lists them, e.g. below the chart on the page), else in the chart's
    own notes at its bottom. warning: a line on top in red (e.g. that the judges are rule-based)."""
    own_notes = notes is None
    notes = NaNotes() if notes is None else notes
    reasons = cube_reasons(report)
    spread_reasons = cube_spread_reasons(report)
    r_at_k_reason = cube_r_at_k_reason(report)
    r_at_k_note = None if r_at_k_reason is None else notes.ref(r_at_k_reason, "", "R@k")
    dimensions = list(report.dimension_spread)
    n_judges = len(report.judges)
    caption: list[str] = []
    if warning:
        caption += textwrap.wrap(warning, NOTE_CHARS)
    n_warning = len(caption)
    caption += _readings_legend(report)
    if counts is not None:
        caption += [*CUBE_COUNTS_LEGEND,
                    *(f"{answer_set}: {counts.count(answer_set=answer_set).note()}" for answer_set in AnswerSet)]
    panel_lines = {d: _panel_counts(counts, d) for d in dimensions} if counts is not None else {}
    extra = 14 if counts is not None else 0  # the counts line of each panel
    panel_h = 22 + extra + ROW_H * n_judges + 10
    top = 56 + 16 * len(caption)
    body: list[str] = []  # the panels and the footer, laid out from `top`; the notes' height is known after them
    y = top
    for dimension in dimensions:
        spread = report.dimension_spread[dimension]
        spread_note = (None if dimension not in spread_reasons
                       else notes.ref(spread_reasons[dimension], SPREAD, dimension))
        body.append(f'<text x="6" y="{y + 14}" font-weight="bold">{escape(dimension)}</text>')
        body.append(f'<text x="{LABEL_W}" y="{y + 14}" fill="#555">normalized mean ± sd across judges: '
                    f"{escape(_spread(spread, spread_note))}</text>")
        if dimension in panel_lines:
            body.append(f'<text x="{LABEL_W}" y="{y + 28}" font-size="10" fill="#555">'
                        f"{escape(panel_lines[dimension])}</text>")
        axis_y = y + 22 + extra + ROW_H * n_judges
        body.append(f'<line x1="{PLOT_X0}" y1="{axis_y - 4}" x2="{PLOT_X1}" y2="{axis_y - 4}" stroke="#ccc"/>')
        for tick in range(0, 11, 2):
            body.append(f'<text x="{score_x(tick):.1f}" y="{axis_y + 6}" font-size="9" text-anchor="middle" '
                        f'fill="#777">{tick}</text>')
        for i, judge in enumerate(report.judges):
            body.extend(_judge_row(judge, dimension, y + 30 + extra + ROW_H * i, reasons[judge.judge], notes))
        y += panel_h
    for judge in report.judges:
        mine = reasons[judge.judge]
        for reading in report.reading_order:
            scores = judge.readings[reading]
            wgt_name, cube_name = figure("wgt_score", report, reading), figure("cube_score", report, reading)
            wgt = None if wgt_name not in mine else notes.ref(mine[wgt_name], judge.judge, wgt_name)
            cube = None if cube_name not in mine else notes.ref(mine[cube_name], judge.judge, cube_name)
            who = judge.judge[:40] if reading is report.reading else f"    {reading.label}"
            body.append(f'<text x="6" y="{y + 14}">{escape(who)}: Wgt. Score '
                        f"{_na(scores.weighted_score.value, wgt)}, CuBE score {_na(scores.cube_score.value, cube)}"
                        "</text>")
            y += 20
    for reading in report.reading_order:
        name = figure("cube_score", report, reading)
        cube_spread_note = None if name not in spread_reasons else notes.ref(spread_reasons[name], SPREAD, name)
        which = "" if reading is report.reading else f" ({reading.label})"
        body.append(f'<text x="6" y="{y + 14}" font-weight="bold">CuBE score{escape(which)} mean ± sd across judges: '
                    f"{escape(_spread(report.spreads[reading].cube_score, cube_spread_note))}</text>")
        y += 20
    if own_notes:
        note_lines = [wrapped for line in notes.lines() for wrapped in textwrap.wrap(line, NOTE_CHARS,
                                                                                     subsequent_indent="    ")]
    else:
        note_lines = ["n/a [k]: the reason is note k below the chart"] if notes.texts else []
    for line in note_lines:
        body.append(f'<text x="6" y="{y + 14}" font-size="11" fill="#a33">{escape(line)}</text>')
        y += 16
    height = y + 20
    width = max([WIDTH, *(int(len(line) * CHAR_W) + 12 for line in caption),
                 *(int(len(line) * 5.5) + LABEL_W + 12 for line in panel_lines.values()),
                 *(int(len(line) * 6.1) + 12 for line in note_lines)])
    r_at_k = _na(report.r_at_k.value, r_at_k_note)
    parts = [
        (f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width}" height="{height}" '
         f'viewBox="0 0 {width} {height}" {FONT}>'),
        f"<title>{escape(title)}</title>",
        f'<text x="6" y="18" font-weight="bold">{escape(title)}</text>',
        _marker(AnswerSet.CLOSED_BOOK, 12, 36), '<text x="22" y="40">closed book</text>',
        _marker(AnswerSet.RAG, 112, 36), '<text x="122" y="40">RAG</text>',
        _marker(AnswerSet.ORACLE, 172, 36), '<text x="182" y="40">oracle</text>',
        (f'<text x="250" y="40" fill="#555">trimmed means on the 0-10 rubric scale; R@k '
         f"{escape(r_at_k)}</text>"),
        *(f'<text x="6" y="{58 + 16 * i}" fill="{"#a33" if i < n_warning else "#555"}">{escape(line)}</text>'
          for i, line in enumerate(caption)),
        *body,
        "</svg>",
    ]
    return "".join(parts)
