"""Small inline SVG charts: pure functions from numbers and labels to an SVG string.

Every label is escaped here, so a chart is safe to insert into a page as markup. Only presentation
attributes are used (no `style` attribute), so the report's Content-Security-Policy needs no
'unsafe-inline' for them. A missing value (None) is drawn as an "n/a" label, never as a zero bar.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

PALETTE = ("#3b6ea8", "#d08a2c", "#5a9a5a", "#a04a6a", "#7a6ab0", "#4a9aa0")
FONT = 'font-family="system-ui, sans-serif" font-size="12"'


@dataclass(frozen=True)
class Bar:
    label: str
    value: float | None
    note: str = ""  # shown after the value, e.g. "n=12"


def _fmt(value: float) -> str:
    return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"


CHAR_W = 6.6  # rough width of a character at font-size 12, to size the value column to its longest text
CAPTION_H = 16


def bar_chart(title: str, bars: Sequence[Bar], *, width: int = 560, lo: float | None = None,
              hi: float | None = None, caption: Sequence[str] = ()) -> Markup:
    """Horizontal bars around a zero line (negative values go left), one row per bar.

    caption: lines under the title (e.g. the counts behind the figure). The value column widens to fit the
    longest value and note, so counts in a note are never cut off.
    """
    present = [b.value for b in bars if b.value is not None]
    lo = min([0.0, *present]) if lo is None else lo
    hi = max([0.0, *present]) if hi is None else hi
    if hi == lo:
        hi = lo + 1.0
    label_w, row_h = 170, 22
    texts = [f"{'n/a' if b.value is None else _fmt(b.value)} {b.note}" for b in bars]
    value_w = max([90, *(int(len(t) * CHAR_W) + 12 for t in texts)])
    plot_w = width - label_w - 90
    width = max([label_w + plot_w + value_w, *(int(len(line) * CHAR_W) + 8 for line in caption)])
    top = 28 + CAPTION_H * len(caption)
    height = top + row_h * len(bars) + 8

    def x(value: float) -> float:
        return label_w + (value - lo) / (hi - lo) * plot_w

    parts = [
        (f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width}" height="{height}" '
         f'viewBox="0 0 {width} {height}" {FONT}>'),
        f"<title>{escape(title)}</title>",
        f'<text x="4" y="16" font-weight="bold">{escape(title)}</text>',
        *(f'<text x="4" y="{30 + CAPTION_H * i}" fill="#555">{escape(line)}</text>' for i, line in enumerate(caption)),
        f'<line x1="{x(0):.1f}" y1="{top - 4}" x2="{x(0):.1f}" y2="{height - 6}" stroke="#888"/>',
    ]
    for i, bar in enumerate(bars):
        y = top + i * row_h
        parts.append(f'<text x="4" y="{y + 14}">{escape(bar.label[:28])}</text>')
        if bar.value is None:
            parts.append(f'<text x="{x(0) + 4:.1f}" y="{y + 14}" fill="#a33">n/a {escape(bar.note)}</text>')
            continue
        left, right = sorted((x(0), x(bar.value)))
        parts.append(f'<rect x="{left:.1f}" y="{y + 3}" width="{max(right - left, 1):.1f}" height="{row_h - 6}" '
                     f'fill="{PALETTE[i % len(PALETTE)]}"/>')
        parts.append(f'<text x="{label_w + plot_w + 6}" y="{y + 14}">{escape(_fmt(bar.value))} '
                     f"{escape(bar.note)}</text>")
    parts.append("</svg>")
    return Markup("".join(parts))
