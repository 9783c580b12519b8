"""The CUE-R per-chunk utility chart (seed 004): for every perturbed chunk, the change in soft correctness
when it is removed, replaced by a distractor or duplicated, with the change in F1 and the trace divergence.

A pure function from diagnostics to SVG text (no plotting library, labels escaped, no `style` attribute).
A bar left of zero means the answer got worse under the perturbation: under `remove` the system depended on
the chunk. A missing delta is written "n/a", never drawn as zero. Each cell also gives the trace divergence and
the change in grounding (G), with a line saying whose traces they are (reported by the system or judged). The closed-book control (the question alone: every
chunk removed), when given, is a line under the counts and a first row whose bar, in the remove column, is its
mean change against the normal answers.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from html import escape

from ragcourt.analysis.cuer_tables import ClosedBookControl, CuerCount, cuer_counts, cuer_totals
from ragcourt.schema import ConditionKind, PerturbationEffect, SampleDiagnostics

KINDS = (ConditionKind.REMOVE, ConditionKind.REPLACE, ConditionKind.DUPLICATE)
WIDTH = 720
LABEL_W = 240
CELL_W = (WIDTH - LABEL_W - 10) // len(KINDS)
BAR_HALF = CELL_W // 2 - 12  # pixels for a delta of 1
ROW_H = 34
FONT = 'font-family="system-ui, sans-serif" font-size="12"'
WORSE, BETTER = "#a04a6a", "#5a9a5a"


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.2f}"


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def _zero_line(zero: float, y: float) -> str:
    return f'<line x1="{zero:.1f}" y1="{y - 9:.1f}" x2="{zero:.1f}" y2="{y + 5:.1f}" stroke="#bbb"/>'


def _delta_bar(zero: float, y: float, delta: float | None) -> str:
    """A change of soft correctness around the zero line: red left, green right, a tick for none, n/a text."""
    if delta is None:
        return f'<text x="{zero + 4:.1f}" y="{y + 2:.1f}" fill="#a33">n/a</text>'
    if delta != 0:
        left, right = sorted((zero, zero + delta * BAR_HALF))
        return (f'<rect x="{left:.1f}" y="{y - 8:.1f}" width="{right - left:.1f}" height="12" '
                f'fill="{WORSE if delta < 0 else BETTER}"/>')
    return f'<rect x="{zero - 1:.1f}" y="{y - 8:.1f}" width="2" height="12" fill="#333"/>'


def _cell(effect: PerturbationEffect | None, x0: float, y: float) -> list[str]:
    zero = x0 + CELL_W / 2
    parts = [_zero_line(zero, y)]
    if effect is None:
        return [*parts, f'<text x="{zero + 4:.1f}" y="{y + 2:.1f}" fill="#999">not perturbed</text>']
    delta = effect.d_soft_correct
    parts.append(_delta_bar(zero, y, delta))
    parts.append(f'<text x="{x0 + 6:.1f}" y="{y + 17:.1f}" font-size="10" fill="#555">'
                 f"soft {_fmt(delta)} F1 {_fmt(effect.d_f1)} trace {_fmt(effect.trace_divergence)} "
                 f"G {_fmt(effect.d_grounding)}</text>")
    return parts


def _n(values: Sequence[float | None]) -> int:
    return sum(v is not None for v in values)


def _closed_book_row(control: ClosedBookControl, y: float) -> list[str]:
    delta = _mean([e.d_soft_correct for _, e in control.effects])
    f1 = _mean([e.d_f1 for _, e in control.effects])
    label = f"closed book (all chunks removed), n={control.n}"
    parts = [f'<text x="6" y="{y + 2}" font-style="italic">{escape(label)}</text>']
    zero = LABEL_W + CELL_W / 2
    parts += [_zero_line(zero, y), _delta_bar(zero, y, delta)]
    soft = "" if control.soft_closed is None or control.soft_normal is None else (
        f" (closed {control.soft_closed:.2f} vs normal {control.soft_normal:.2f})")
    parts.append(f'<text x="{LABEL_W + 6}" y="{y + 17:.1f}" font-size="10" fill="#555">'
                 f"{escape(f'mean soft {_fmt(delta)}{soft} F1 {_fmt(f1)}')}</text>")
    return parts


def _trace_line(effects: Sequence[PerturbationEffect]) -> str:
    """Whose traces the trace divergence and grounding (G) changes compare, so a judged trace is never read as
    the system's own."""
    sources = Counter(str(e.trace_source) for e in effects)
    shown = ", ".join(f"{source} {n}" for source, n in sorted(sources.items())) or "none"
    return (f"trace / G: perturbed answers' used chunks by source: {shown} (reported: the system's own; judged: "
            "the chunks the jury found to support the answer's claims)")


def cuer_utility_svg(diagnostics: Sequence[SampleDiagnostics], title: str = "CUE-R per-chunk utility",
                     max_rows: int = 80, *, counts: Sequence[CuerCount] | None = None,
                     closed_book: ClosedBookControl | None = None) -> str:
    """One row per (sample, perturbed chunk); one cell per perturbation kind with the soft-correctness delta
    (perturbed - normal) as a bar on [-1, 1]. Under the title the counts behind the chart
    (cuer_tables.cuer_totals: counts from cuer_tables.cuer_counts with the run's answers and retrievals; without
    them, from the diagnostics alone, the answers not produced are "not counted"), then a line per kind with the
    gold / non-gold means and their n. closed_book (cuer_tables.cuer_closed_book): its line (or why there is
    none) and its row."""
    counts = cuer_counts(diagnostics) if counts is None else counts
    by_kind = {c.kind: c for c in counts}
    caption = cuer_totals(counts)
    rows: dict[tuple[str, str], dict[ConditionKind, PerturbationEffect]] = {}
    titles: dict[tuple[str, str], tuple[str | None, bool | None]] = {}
    for d in diagnostics:
        for effect in d.perturbations:
            if effect.condition.kind not in KINDS or effect.condition.chunk_id is None:
                continue
            key = (d.sample_id, effect.condition.chunk_id)
            rows.setdefault(key, {})[effect.condition.kind] = effect
            titles[key] = (effect.chunk_title, effect.chunk_is_gold)
    shown = list(rows)[:max_rows]
    control_lines = [] if closed_book is None else [closed_book.note()]
    control_rows = 1 if closed_book is not None and closed_book.effects else 0
    lines = len(caption) + len(KINDS) + 1 + len(control_lines)  # + the trace-source line
    header_h = 58 + 16 * lines
    height = header_h + ROW_H * (len(shown) + control_rows) + (24 if len(rows) > len(shown) else 8)
    all_effects = [e for cells in rows.values() for e in cells.values()]
    kind_lines = []
    for kind in KINDS:
        of_kind = [e for e in all_effects if e.condition.kind is kind]
        gold = [e.d_soft_correct for e in of_kind if e.chunk_is_gold is True]
        other = [e.d_soft_correct for e in of_kind if e.chunk_is_gold is False]
        found = by_kind.get(kind)
        failed = "" if found is None or not found.failed else f" · failed {found.failed}"
        unavailable = "" if found is None or not found.unavailable else f" · unavailable {found.unavailable}"
        kind_lines.append(f"{kind}: mean soft change gold {_fmt(_mean(gold))} (n={_n(gold)}), non-gold "
                          f"{_fmt(_mean(other))} (n={_n(other)}); {len(of_kind)} chunks{failed}{unavailable}")
    kind_lines.append(_trace_line(all_effects))
    kind_lines += control_lines
    width = max([WIDTH, *(int(len(line) * 6.6) + 12 for line in (*caption, *kind_lines))])
    parts = [
        (f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width}" height="{height}" '
         f'viewBox="0 0 {width} {height}" {FONT}>'),
        f"<title>{escape(title)}</title>",
        f'<text x="6" y="18" font-weight="bold">{escape(title)}</text>',
        ('<text x="6" y="36" fill="#555">bar: change in soft correctness (perturbed - normal) on [-1, 1]; '
         "left of zero = a worse answer</text>"),
        *(f'<text x="6" y="{54 + 16 * i}" fill="#555">{escape(line)}</text>' for i, line in enumerate(caption)),
        *(f'<text x="6" y="{54 + 16 * (len(caption) + i)}">{escape(line)}</text>' for i, line in enumerate(kind_lines)),
    ]
    for i, kind in enumerate(KINDS):
        parts.append(f'<text x="{LABEL_W + CELL_W * i + CELL_W / 2:.1f}" y="{header_h - 4}" text-anchor="middle" '
                     f'font-weight="bold">{kind}</text>')
    if closed_book is not None and control_rows:  # control_rows is 0 without a control
        parts.extend(_closed_book_row(closed_book, header_h + 16))
    for r, key in enumerate(shown, start=control_rows):
        y = header_h + 16 + ROW_H * r
        chunk_title, is_gold = titles[key]
        mark = {True: " (gold)", False: "", None: " (gold?)"}[is_gold]
        label = f"{key[0][:10]} · {chunk_title or key[1]}"[:34] + mark
        weight = ' font-weight="bold"' if is_gold else ""
        parts.append(f'<text x="6" y="{y + 2}"{weight}>{escape(label)}</text>')
        for i, kind in enumerate(KINDS):
            parts.extend(_cell(rows[key].get(kind), LABEL_W + CELL_W * i, y))
    if len(rows) > len(shown):
        parts.append(f'<text x="6" y="{height - 8}" fill="#555">{len(rows) - len(shown)} more chunks not '
                     "shown</text>")
    parts.append("</svg>")
    return "".join(parts)
