"""The self-contained HTML report: one file, inline CSS, SVG and one small script, no external resource.

Every piece of text from the store (questions, answers, chunks, rationales, comments) reaches the page
only through Jinja2's autoescaping; the only markup not written by the templates is the SVG of the chart
modules, which escape their own labels. The one script (templates/table.js: sorting and filtering tables)
is ours, inlined with a per-page nonce, and only reorders and hides rows (it never writes HTML); the
Content-Security-Policy allows no other script and no external load, so even a payload that escaped escaping
could neither run nor call home.
"""

from __future__ import annotations

import json
import math
import secrets
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from ragcourt.metrics.values import MetricKey, MetricName
from ragcourt.report.data import DRILL_DOWN_QUESTIONS, CheckView, PriceTable, ReportData, SampleView, collect
from ragcourt.report.glance_charts import distribution_svg, distributions
from ragcourt.report.sections import ANSWER_METRICS, QCARE_METRICS, Section, method_sections
from ragcourt.schema import CheckKind, Verdict, VerdictStatus
from ragcourt.stores.records import RecordStore

TEMPLATES = Path(__file__).parent / "templates"
# Rows a table shows on the page (and failed samples listed); the exports hold every row. Keeps the page of
# a 10,000-question run to a few MB.
PAGE_ROWS = 200


def content_security_policy(nonce: str) -> str:
    """Only the page's own nonce'd script (table sorting and filtering) and style sheet; images only inline
    data; nothing loaded from anywhere, no form sent."""
    return (f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; img-src data:; "
            "base-uri 'none'; form-action 'none'; connect-src 'none'")


def num(value: Any, digits: int = 3) -> str:
    """A figure for people: n/a for a missing value (never 0), short floats, ints as they are."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def verdict_text(verdict: Verdict) -> str:
    if verdict.status is VerdictStatus.UNSCORED:
        return f"unscored ({verdict.unscored_reason})"
    return str(verdict.label) if verdict.label is not None else num(verdict.score, 1)


def decision_text(view: CheckView) -> str:
    rec = view.reconciled
    if rec is None:
        return "not reconciled"
    if rec.split and rec.label is None:
        return "judges split"
    if rec.label is None and rec.score is None:
        return "undecided"
    return str(rec.label) if rec.label is not None else num(rec.score, 1)


def target_label(view: CheckView, sample: SampleView) -> str:
    """Checks against one chunk name it by rank and title; checks against a sub-query show its text (its
    id means nothing to a reader); other targets (context, answer, claims, rubric) by their name."""
    if view.check.kind == CheckKind.CLAIM_SERVES_SUBQUERY:
        return view.check.target_text
    for chunk in sample.chunks:
        if chunk.id == view.check.target_id:
            return f"#{chunk.rank} {chunk.title or chunk.id}"
    return view.check.target_id


NO_REASON = "—"  # an absent reason (the figure is there): not "n/a", which would read as a missing figure


def is_reason_column(column: object) -> bool:
    """Columns holding why a figure is n/a (na_reason, c_prec_na_reason, undecided_reason, ...)."""
    return str(column).endswith("reason")


def frame_rows(frame: pd.DataFrame, limit: int) -> list[list[str]]:
    """Cells as text: a missing figure reads "n/a", a missing reason (nothing to explain) reads "—"."""
    reasons = [is_reason_column(c) for c in frame.columns]
    return [[NO_REASON if reason and (v is None or (isinstance(v, float) and math.isnan(v))) else num(v)
             for reason, v in zip(reasons, row, strict=True)]
            for row in frame.head(limit).itertuples(index=False)]


def shown_columns(frame: pd.DataFrame, hidden: Sequence[str] = ()) -> list[str]:
    """The columns a page shows: the frame's, less those kept for the exports only."""
    return [str(c) for c in frame.columns if c not in hidden]


def noted_rows(frame: pd.DataFrame, limit: int, cells: Sequence[Mapping[str, int]] = (),
               hidden: Sequence[str] = ()) -> list[list[tuple[str, int | None]]]:
    """`frame_rows` of the shown columns, each cell with the number of the note saying why it is n/a (cells:
    per row, column -> note number; None: no note)."""
    shown = [i for i, c in enumerate(frame.columns) if c not in hidden]
    columns = [frame.columns[i] for i in shown]
    out = []
    for position, row in enumerate(frame_rows(frame, limit)):
        notes = cells[position] if position < len(cells) else {}
        out.append([(row[i], notes.get(column)) for i, column in zip(shown, columns, strict=True)])
    return out


# Metrics the method sections tabulate: the summary draws their distributions and lists only the others.
SECTION_METRICS = frozenset({*QCARE_METRICS, *ANSWER_METRICS, MetricName.ELEMENT_COVERAGE,
                             MetricName.ELEMENT_ANSWER_COVERAGE})
HEADLINE_METRICS = frozenset(SECTION_METRICS - {MetricName.EXACT_MATCH, MetricName.CONFIDENCE_ERROR})
TABLE_SCRIPT = "table.js"  # sorts and filters the page's tables; inlined with the page's nonce


def headline_chart(data: ReportData) -> Markup | None:
    """The headline metrics' distributions over the run's questions (None: the run has none)."""
    names = [r.name for r in data.summary.metrics if MetricKey.of(r.name).base in HEADLINE_METRICS]
    return distribution_svg(distributions(data.diagnostics, names)) if names else None


def other_metric_rows(data: ReportData) -> list[Any]:
    """The run's metrics no method section tabulates (the summary's table of them)."""
    return [r for r in data.summary.metrics if MetricKey.of(r.name).base not in SECTION_METRICS]


FOLD_CHARS = 60  # a longer text cell (not a reason) shows its start; a click unfolds the rest


def column_classes(frame: pd.DataFrame, hidden: Sequence[str] = ()) -> list[str]:
    """Per shown column, its width class in the page's <colgroup>: "reason" (narrow), "text" (a column with a
    folded cell: wide enough for its summary) or ""."""
    out = []
    for column in shown_columns(frame, hidden):
        if is_reason_column(column):
            out.append("reason")
        else:
            long = any(isinstance(v, str) and len(v) > FOLD_CHARS for v in frame[column].head(PAGE_ROWS))
            out.append("text" if long else "")
    return out


def fold(text: str, limit: int = FOLD_CHARS) -> Markup | str:
    """A long cell folded: its start as the summary of a <details> holding the whole (escaped) text."""
    if len(text) <= limit:
        return text
    return Markup("<details class=\"fold\"><summary>{}…</summary>{}</details>").format(text[:limit - 20], text)


def environment() -> Environment:
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=True, undefined=StrictUndefined,
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["num"] = num
    env.filters["fold"] = fold
    env.globals.update(verdict_text=verdict_text, decision_text=decision_text, target_label=target_label,
                       frame_rows=frame_rows, page_rows=PAGE_ROWS,
                       shown_columns=shown_columns, noted_rows=noted_rows, is_reason_column=is_reason_column,
                       column_classes=column_classes, fold_chars=FOLD_CHARS)
    return env


def render_report(data: ReportData, sections: list[Section], *, nonce: str | None = None,
                  drill_down: int | None = DRILL_DOWN_QUESTIONS) -> str:
    """The page; its per-question drill-down shows at most drill_down questions (None: every question)."""
    nonce = nonce or secrets.token_urlsafe(16)
    css = Markup((TEMPLATES / "report.css").read_text(encoding="utf-8"))  # our own sheet: not escaped, as a <style> needs
    script = (TEMPLATES / TABLE_SCRIPT).read_text(encoding="utf-8")
    return environment().get_template("report.html.j2").render(
        data=data.limited(drill_down), sections=sections, nonce=nonce, csp=content_security_policy(nonce), css=css,
        script=Markup(script), config_json=json.dumps(data.run.config, indent=2, ensure_ascii=False),
        headline=headline_chart(data), other_metrics=other_metric_rows(data),
    )


def build_report(store: RecordStore, run_id: str, prices: PriceTable | None = None) -> str:
    data = collect(store, run_id, prices)
    return render_report(data, method_sections(store, data))


def write_report(store: RecordStore, run_id: str, out: Path, prices: PriceTable | None = None) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(build_report(store, run_id, prices), encoding="utf-8")
    return out
