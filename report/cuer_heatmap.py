"""CUE-R per-chunk utility as a heatmap (seed 004): one row per question, one column per chunk rank; a cell's
colour is the chunk's utility under `remove`, the normal answer's F1 minus the F1 of the answer without the
chunk (green: the chunk helped, red: removing it helped, white: no change). F1 rather than soft correctness:
it is graded, so a partial loss shows (the soft-correctness change is in each cell's tooltip and in the chart
beside this one). A cell the run did not perturb is blank; a change that could not be computed reads n/a.
Gold chunks have a dark border. Pure function to SVG text, labels escaped, no `style` attribute."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from markupsafe import Markup, escape

from ragcourt.schema import ConditionKind, PerturbationEffect, SampleDiagnostics

FONT = 'font-family="system-ui, sans-serif" font-size="12"'
CELL_W, CELL_H, LABEL_W, TOP = 54, 22, 230, 70
CHAR_W = 6.6
MIN_SCALE = 0.1  # changes below this never reach full colour: a tiny effect stays pale


def _colour(utility: float, scale: float) -> str:
    """White at 0, toward green (#2e7d32) for +scale and red (#b03a2e) for -scale."""
    t = min(abs(utility) / scale, 1.0)
    end = (46, 125, 50) if utility > 0 else (176, 58, 46)
    return "#" + "".join(f"{round(255 + (c - 255) * t):02x}" for c in end)


def _text(value: float | None) -> str:
    return "n/a" if value is None else f"{value + 0.0:+.2f}"  # + 0.0: no "-0.00"


def cuer_heatmap_svg(diagnostics: Sequence[SampleDiagnostics], ranks: Mapping[tuple[str, str], int],
                     title: str = "CUE-R utility per chunk (remove): questions x chunk ranks",
                     max_rows: int = 60) -> Markup:
    """ranks: (sample id, chunk id) -> the chunk's 1-based rank in the normal retrieval."""
    cells: dict[str, dict[int, PerturbationEffect]] = {}
    questions: dict[str, str] = {}
    for d in diagnostics:
        for effect in d.perturbations:
            chunk = effect.condition.chunk_id
            if effect.condition.kind is not ConditionKind.REMOVE or chunk is None or (d.sample_id, chunk) not in ranks:
                continue
            cells.setdefault(d.sample_id, {})[ranks[(d.sample_id, chunk)]] = effect
            questions[d.sample_id] = d.question
    shown = list(cells)[:max_rows]
    n_ranks = max((r for row in cells.values() for r in row), default=0)
    width = max(LABEL_W + CELL_W * n_ranks + 20, 640)
    height = TOP + CELL_H * len(shown) + (40 if len(cells) > len(shown) else 24)
    known = [-e.d_f1 for row in cells.values() for e in row.values() if e.d_f1 is not None]
    n_na = sum(e.d_f1 is None for row in cells.values() for e in row.values())
    scale = max([MIN_SCALE, *(abs(u) for u in known)])
    caption = (f"{len(cells)} questions, {len(known) + n_na} removed chunks (n/a {n_na}); mean utility "
               f"{_text(sum(known) / len(known) if known else None)}; full colour at |utility| {scale:.2f} (the largest here, "
               f"at least {MIN_SCALE:.2f}); bold border: a gold chunk")
    legend = ("utility = F1 of the normal answer - F1 without the chunk; green: the chunk helped, red: the answer "
              "was better without it")
    width = max(width, int(max(len(caption), len(legend)) * CHAR_W) + 12)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" {FONT}>', f"<title>{escape(title)}</title>",
             f'<text x="4" y="16" font-weight="bold">{escape(title)}</text>',
             f'<text x="4" y="32" fill="#555">{escape(legend)}</text>',
             f'<text x="4" y="48" fill="#555">{escape(caption)}</text>']
    if not cells:
        parts.append(f'<text x="4" y="{TOP}" fill="#a33">n/a: no chunk was removed in this run</text></svg>')
        return Markup("".join(parts))
    for r in range(1, n_ranks + 1):
        parts.append(f'<text x="{LABEL_W + CELL_W * (r - 1) + CELL_W / 2:.0f}" y="{TOP - 6}" text-anchor="middle" '
                     f'font-weight="bold">#{r}</text>')
    for i, sample_id in enumerate(shown):
        y = TOP + CELL_H * i
        label = f"{sample_id[:8]} {questions[sample_id]}"
        parts.append(f'<text x="4" y="{y + 15}">{escape(label[:34] + ("…" if len(label) > 34 else ""))}'
                     f"<title>{escape(questions[sample_id])}</title></text>")
        for r in range(1, n_ranks + 1):
            x = LABEL_W + CELL_W * (r - 1)
            removed = cells[sample_id].get(r)
            if removed is None:
                continue
            utility = None if removed.d_f1 is None else 0.0 - removed.d_f1
            fill = "#eeeeee" if utility is None else _colour(utility, scale)
            border = ' stroke="#1d2330" stroke-width="2"' if removed.chunk_is_gold else ' stroke="#ccc"'
            tip = (f"{removed.chunk_title or removed.condition.chunk_id} (rank {r}"
                   f"{', gold' if removed.chunk_is_gold else ''}): utility {_text(utility)}, "
                   f"soft-correctness change {_text(removed.d_soft_correct)}")
            parts.append(f'<rect x="{x + 1}" y="{y + 1}" width="{CELL_W - 2}" height="{CELL_H - 2}" fill="{fill}"'
                         f"{border}><title>{escape(tip)}</title></rect>")
            ink = "#fff" if utility is not None and abs(utility) / scale > 0.6 else "#1d2330"
            parts.append(f'<text x="{x + CELL_W / 2:.0f}" y="{y + 15}" text-anchor="middle" font-size="11" '
                         f'fill="{ink}">{_text(utility)}</text>')
    if len(cells) > len(shown):
        parts.append(f'<text x="4" y="{height - 12}" fill="#555">{len(cells) - len(shown)} more questions not '
                     "shown (the CUE-R table and the export hold them)</text>")
    parts.append("</svg>")
    return Markup("".join(parts))
