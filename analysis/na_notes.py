"""Numbered reasons for the n/a figures of a section, and tables whose n/a cells point to them.

A figure that cannot be computed is n/a with a reason; each distinct reason gets one number, which the cells it
explains carry ("n/a [k]" on a terminal, a link on the page, an na_reason column in the exports).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd


@dataclass
class NaNotes:
    """Numbered reasons for the n/a figures of a section: each distinct reason gets one number, and lists the
    figures it explains (grouped by subject: a judge, "mean ± sd", ...)."""

    texts: list[str] = field(default_factory=list)
    where: list[dict[str, list[str]]] = field(default_factory=list)  # per note: subject -> figures

    def ref(self, text: str, subject: str, figure: str) -> int:
        """The number of this reason (1-based), recording that it explains `figure` of `subject`."""
        if text not in self.texts:
            self.texts.append(text)
            self.where.append({})
        number = self.texts.index(text) + 1
        figures = self.where[number - 1].setdefault(subject, [])
        if figure not in figures:
            figures.append(figure)
        return number

    def figures(self, number: int) -> str:
        """What note `number` explains: "lexical: wgt_score, cube_score; semantic: wgt_score"."""
        return "; ".join(f"{subject}: {', '.join(figures)}" if subject else ", ".join(figures)
                         for subject, figures in self.where[number - 1].items())

    def entries(self) -> list[str]:
        """Each note, in number order: "lexical: wgt_score, cube_score n/a: <reason>"."""
        return [f"{self.figures(i)} n/a: {text}" for i, text in enumerate(self.texts, start=1)]

    def lines(self) -> list[str]:
        """Each note as a numbered line: "[1] lexical: wgt_score, cube_score n/a: <reason>"."""
        return [f"[{i}] {entry}" for i, entry in enumerate(self.entries(), start=1)]


@dataclass(frozen=True)
class NotedFrame:
    """A table whose n/a cells carry the number of their reason in `notes` (cells: per row, column -> number)."""

    frame: pd.DataFrame
    cells: tuple[dict[str, int], ...]
    notes: NaNotes

    def marked(self) -> pd.DataFrame:
        """The frame with every noted n/a cell written "n/a [k]" (for a terminal; the page links its notes)."""
        out = self.frame.astype(object)
        for row, cells in enumerate(self.cells):
            for column, number in cells.items():
                at = (row, out.columns.get_loc(column))
                value = out.iat[at]
                # a text figure ("0.667 ± n/a") keeps its value; a missing one is the note alone
                out.iat[at] = (value.replace("n/a", f"n/a [{number}]") if isinstance(value, str)
                               else f"n/a [{number}]")
        return out

    def with_reasons(self) -> pd.DataFrame:
        """The frame with an na_reason column: per row, its n/a columns and why (what the exports hold)."""
        reasons = []
        for cells in self.cells:
            grouped: dict[int, list[str]] = {}
            for column, number in cells.items():
                grouped.setdefault(number, []).append(column)
            reasons.append("; ".join(f"{', '.join(columns)}: {self.notes.texts[number - 1]}"
                                     for number, columns in grouped.items()) or None)
        return self.frame.assign(na_reason=reasons)

    def lines(self) -> list[str]:
        """The notes this table's cells refer to."""
        used = sorted({n for cells in self.cells for n in cells.values()})
        return [line for i, line in enumerate(self.notes.lines(), start=1) if i in used]
