"""Charts read at a glance (pure functions to SVG text, labels escaped, no `style` attribute):

- `gap_attribution_svg`: one stacked bar per run or subgroup: of the decided elements missing from the answer,
  the shares lost in retrieval, in generation and in the documents (seed 003), with the counts behind each bar.
- `distribution_svg`: each headline metric's per-question values as a small histogram over [0, 1] with the
  mean marked, so a mean of 0.5 from all-halves is told from one of zeros and ones; n/a values are counted,
  never drawn as 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup, escape

from ragcourt.analysis.qcare_tables import gap_share_frame
from ragcourt.schema import ElementStatus, SampleDiagnostics

FONT = 'font-family="system-ui, sans-serif" font-size="12"'
GAPS = ((ElementStatus.RETRIEVAL_GAP, "retrieval", "#3b6ea8"), (ElementStatus.GENERATION_GAP, "generation", "#d08a2c"),
        (ElementStatus.DOCUMENT_GAP, "documents", "#a04a6a"))
CHAR_W = 6.6
SUBTITLE = ("share of the decided elements missing from the answer, by where they were lost (judges-split elements "
            "in fractions; undecided ones get no share)")
MAX_GROUP_VALUES = 8  # a metadata key with more distinct values is an id, not a subgroup


@dataclass(frozen=True)
class GapRow:
    label: str
    weights: dict[str, float]  # status -> weight (count plus the judges_split fractions shared out to it)
    n_elements: int
    n_split: int
    n_undecided: int

    @property
    def missing(self) -> float:
        return sum(self.weights.get(str(status), 0.0) for status, _, _ in GAPS)

    @classmethod
    def of(cls, label: str, diagnostics: Sequence[SampleDiagnostics]) -> GapRow:
        frame = gap_share_frame(diagnostics)
        return cls(label, dict(frame.attrs["weights"]), int(sum(frame["count"])), int(frame.attrs["n_split"]),
                   int(frame.attrs["n_undecided"]))


def subgroups(metadata: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, set[str]]]:
    """Metadata keys that split the run into 2..MAX_GROUP_VALUES subgroups: key -> value -> sample ids (a sample
    without the key is in '(missing)'). Keys whose values are not plain text or numbers are left out."""
    values: dict[str, set[str]] = {}
    for meta in metadata.values():
        for key, value in meta.items():
            if isinstance(value, str | int | float | bool):
                values.setdefault(key, set()).add(str(value))
    out: dict[str, dict[str, set[str]]] = {}
    for key in sorted(values):
        groups: dict[str, set[str]] = {}
        for sample_id, meta in metadata.items():
            value = meta.get(key)
            groups.setdefault("(missing)" if value is None else str(value), set()).add(sample_id)
        if 2 <= len(groups) <= MAX_GROUP_VALUES:
            out[key] = groups
    return out


def gap_rows(diagnostics: Sequence[SampleDiagnostics], metadata: Mapping[str, Mapping[str, Any]],
             run_label: str = "whole run") -> list[GapRow]:
    """The run's row, then one per subgroup of each metadata key `subgroups` finds."""
    rows = [GapRow.of(run_label, diagnostics)]
    for key, groups in subgroups(metadata).items():
        for value, ids in sorted(groups.items()):
            rows.append(GapRow.of(f"{key}={value}", [d for d in diagnostics if d.sample_id in ids]))
    return rows


def gap_attribution_svg(rows: Sequence[GapRow], title: str = "Where missing elements were lost",
                        width: int = 720) -> Markup:
    """One stacked bar per row over the row's decided missing elements (100%); a row with none says so."""
    label_w, bar_w, row_h, top = 170, 330, 30, 62
    notes = [f"n={r.missing:g} missing of {r.n_elements} · split {r.n_split} · undecided {r.n_undecided}"
             for r in rows]
    width = max(width, label_w + bar_w + 16 + int(max((len(n) for n in notes), default=0) * CHAR_W),
                int(len(SUBTITLE) * CHAR_W) + 12)
    height = top + row_h * len(rows) + 30
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" {FONT}>', f"<title>{escape(title)}</title>",
             f'<text x="4" y="16" font-weight="bold">{escape(title)}</text>',
             f'<text x="4" y="32" fill="#555">{escape(SUBTITLE)}</text>']
    x = label_w
    for _, name, colour in GAPS:  # the legend
        parts.append(f'<rect x="{x}" y="40" width="12" height="12" fill="{colour}"/>'
                     f'<text x="{x + 16}" y="50">{name}</text>')
        x += 16 + int(len(name) * CHAR_W) + 18
    for i, (row, note) in enumerate(zip(rows, notes, strict=True)):
        y = top + i * row_h
        parts.append(f'<text x="4" y="{y + 15}">{escape(row.label[:26])}</text>')
        if row.missing <= 0:
            parts.append(f'<text x="{label_w}" y="{y + 15}" fill="#555">no decided element missing</text>')
        else:
            left = float(label_w)
            for status, name, colour in GAPS:
                share = row.weights.get(str(status), 0.0) / row.missing
                if share <= 0:
                    continue
                w = share * bar_w
                parts.append(f'<rect x="{left:.1f}" y="{y + 2}" width="{w:.1f}" height="{row_h - 8}" fill="{colour}">'
                             f"<title>{escape(f'{row.label}: {name} {share:.0%}')}</title></rect>")
                if w >= 30:
                    parts.append(f'<text x="{left + w / 2:.1f}" y="{y + 16}" text-anchor="middle" fill="#fff">'
                                 f"{share:.0%}</text>")
                left += w
        parts.append(f'<text x="{label_w + bar_w + 10}" y="{y + 15}" fill="#555">{escape(note)}</text>')
    parts.append(f'<text x="4" y="{height - 8}" fill="#555">documents means "documents doubtful": a suspicion, '
                 "not proof</text></svg>")
    return Markup("".join(parts))


@dataclass(frozen=True)
class Distribution:
    """One metric's per-question values (those with a value) and the counts behind them."""

    name: str
    values: tuple[float, ...]
    n_na: int
    n_unscored: int
    n_escalated: int


def distributions(diagnostics: Sequence[SampleDiagnostics], names: Sequence[str]) -> list[Distribution]:
    out = []
    for name in names:
        found = [m for d in diagnostics for m in d.metrics if m.name == name]
        out.append(Distribution(name, tuple(m.value for m in found if m.value is not None),
                                sum(m.value is None for m in found), sum(m.n_unscored for m in found),
                                sum(m.n_escalated for m in found)))
    return out


BINS = 10


def _bin(value: float) -> int:
    return min(BINS - 1, max(0, int(value * BINS)))


def distribution_svg(shown: Sequence[Distribution], title: str = "Headline figures: distribution over questions",
                     per_row: int = 3) -> Markup:
    """Small multiples: per metric a histogram of its values in ten bins over [0, 1] (1.0 in the last), the
    mean as a line, and under it n, n/a, unscored and escalated."""
    cell_w, cell_h, plot_h, top = 240, 120, 60, 40
    rows = (len(shown) + per_row - 1) // per_row
    width, height = cell_w * min(per_row, max(len(shown), 1)) + 8, top + cell_h * rows + 8
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" {FONT}>', f"<title>{escape(title)}</title>",
             f'<text x="4" y="16" font-weight="bold">{escape(title)}</text>',
             '<text x="4" y="32" fill="#555">bars: questions per tenth of [0, 1]; red line: the mean; n/a values '
             "are counted under the chart, never drawn as 0</text>"]
    for i, d in enumerate(shown):
        x0, y0 = 8 + cell_w * (i % per_row), top + cell_h * (i // per_row)
        counts = [0] * BINS
        for value in d.values:
            counts[_bin(value)] += 1
        tallest = max(counts) or 1
        mean = sum(d.values) / len(d.values) if d.values else None
        plot_w, base = cell_w - 30, y0 + 18 + plot_h
        head = f"{d.name}: mean {'n/a' if mean is None else f'{mean:.3f}'}"
        parts.append(f'<text x="{x0}" y="{y0 + 12}" font-weight="bold">{escape(head)}</text>')
        parts.append(f'<line x1="{x0}" y1="{base}" x2="{x0 + plot_w}" y2="{base}" stroke="#888"/>')
        for b, count in enumerate(counts):
            if count:
                h = count / tallest * plot_h
                parts.append(f'<rect x="{x0 + b * plot_w / BINS + 1:.1f}" y="{base - h:.1f}" '
                             f'width="{plot_w / BINS - 2:.1f}" height="{h:.1f}" fill="#3b6ea8">'
                             f"<title>{escape(f'{d.name} in [{b / BINS:.1f}, {(b + 1) / BINS:.1f}): {count}')}"
                             "</title></rect>")
        if not d.values:
            parts.append(f'<text x="{x0 + 6}" y="{base - plot_h / 2:.0f}" fill="#a33">n/a: no question has a value</text>')
        if mean is not None:
            mx = x0 + min(max(mean, 0.0), 1.0) * plot_w
            parts.append(f'<line x1="{mx:.1f}" y1="{base - plot_h - 2}" x2="{mx:.1f}" y2="{base + 3}" '
                         'stroke="#c0392b" stroke-width="2"/>')
        parts.append(f'<text x="{x0}" y="{base + 14}" font-size="10" fill="#555">0</text>'
                     f'<text x="{x0 + plot_w}" y="{base + 14}" font-size="10" fill="#555" text-anchor="end">1</text>')
        parts.append(f'<text x="{x0}" y="{base + 28}" font-size="11" fill="#555">'
                     f"{escape(f'n={len(d.values)} · n/a {d.n_na} · unscored {d.n_unscored} · escalated {d.n_escalated}')}"
                     "</text>")
    parts.append("</svg>")
    return Markup("".join(parts))
