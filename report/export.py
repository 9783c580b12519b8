"""Every table of a report as a DataFrame, and CSV + Parquet files of them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ragcourt.metrics.elements import sample_elements
from ragcourt.report.data import CheckView, ReportData, check_views
from ragcourt.report.sections import NamedTable, Section, metric_frame
from ragcourt.stores.records import RecordStore


def judge_frame(data: ReportData) -> pd.DataFrame:
    return pd.DataFrame(
        [{"judge": j.judge_id, "models": ", ".join(j.model_ids), "verdicts": j.n_verdicts, "unscored": j.n_unscored,
          "prompt_tokens": j.prompt_tokens, "completion_tokens": j.completion_tokens, "cost_usd": j.cost_usd,
          "cost_note": j.cost_note} for j in data.judges],
        columns=["judge", "models", "verdicts", "unscored", "prompt_tokens", "completion_tokens", "cost_usd",
                 "cost_note"],
    )


def sample_frame(data: ReportData) -> pd.DataFrame:
    rows = []
    for sample in data.rows:  # every question, not only the drill-down's
        d = sample.diagnostics
        row: dict[str, object] = {
            "sample_id": sample.sample_id, "question": sample.question,
            "status": str(d.status) if d else "not finished", "error": d.error if d else None,
            "checks": sample.n_checks, "unscored_verdicts": d.n_unscored if d else None,
            "escalated": sample.n_escalated,
        }
        if d is not None:
            row.update({m.name: m.value for m in d.metrics})
        rows.append(row)
    return pd.DataFrame(rows)


def element_frame(data: ReportData) -> pd.DataFrame:
    columns = ["sample_id", "element_id", "text", "in_context", "in_loose_context", "in_answer", "status"]
    return pd.DataFrame(
        [{"sample_id": d.sample_id, "element_id": e.element_id, "text": e.text, "in_context": e.in_context,
          "in_loose_context": e.in_loose_context, "in_answer": e.in_answer, "status": str(e.status)}
         for d in data.diagnostics for e in d.elements],
        columns=columns,
    )


def element_question_frame(data: ReportData) -> pd.DataFrame:
    """Seed 003's per-question record (step 3), one row per question with elements: result_label and the element
    texts covered in the normal context, newly covered in the loose one and still uncovered after it (lists as
    JSON text, so CSV and Parquet hold the same), with the answer side and the split elements beside them."""
    columns = ["sample_id", "result_label", "covered_elements", "newly_covered_in_loose", "uncovered_in_loose",
               "answered", "judges_split", "element_coverage", "element_answer_coverage"]
    rows = []
    for d in data.diagnostics:
        if not d.elements:
            continue
        record = sample_elements(d.elements)
        rows.append({
            "sample_id": d.sample_id, "result_label": str(record.result_label(len(d.elements))),
            **{name: json.dumps(list(getattr(record, name)), ensure_ascii=False)
               for name in ("covered_elements", "newly_covered_in_loose", "uncovered_in_loose", "answered",
                            "judges_split")},
            "element_coverage": record.coverage.value, "element_answer_coverage": record.answer_coverage.value,
        })
    return pd.DataFrame(rows, columns=columns)


VERDICT_COLUMNS = {
    "check_id": pa.string(), "sample_id": pa.string(), "kind": pa.string(), "condition": pa.string(),
    "subject": pa.string(), "target_id": pa.string(), "judge": pa.string(), "status": pa.string(),
    "label": pa.string(), "score": pa.float64(), "probabilities": pa.string(), "rationale": pa.string(),
    "unscored_reason": pa.string(), "model_id": pa.string(), "prompt_tokens": pa.int64(),
    "completion_tokens": pa.int64(),
}
DECISION_COLUMNS = {
    "check_id": pa.string(), "sample_id": pa.string(), "kind": pa.string(), "condition": pa.string(),
    "subject": pa.string(), "target_id": pa.string(), "label": pa.string(), "score": pa.float64(),
    "agreement": pa.float64(), "method": pa.string(), "escalated": pa.bool_(), "escalation_reason": pa.string(),
    "provisional": pa.bool_(), "reviewer": pa.string(), "review_action": pa.string(), "review_label": pa.string(),
    "review_score": pa.float64(), "accepted_judge": pa.string(), "review_comment": pa.string(),
}


def verdict_frame(checks: Sequence[CheckView]) -> pd.DataFrame:
    """One row per verdict of these checks."""
    columns = list(VERDICT_COLUMNS)
    return pd.DataFrame(
        [{"check_id": c.check.id, "sample_id": c.check.sample_id, "kind": str(c.check.kind),
          "condition": c.check.condition.key, "subject": c.check.subject_text, "target_id": c.check.target_id,
          "judge": v.judge_id, "status": str(v.status), "label": None if v.label is None else str(v.label),
          "score": v.score,
          "probabilities": None if v.probabilities is None else json.dumps({str(k): p for k, p in
                                                                           v.probabilities.items()}),
          "rationale": v.rationale, "unscored_reason": None if v.unscored_reason is None else str(v.unscored_reason),
          "model_id": v.model_id, "prompt_tokens": v.usage.prompt_tokens, "completion_tokens": v.usage.completion_tokens}
         for c in checks for v in c.verdicts],
        columns=columns,
    )


def decision_frame(checks: Sequence[CheckView]) -> pd.DataFrame:
    """One row per check: the jury's decision and the latest human decision."""
    columns = list(DECISION_COLUMNS)
    rows = []
    for c in checks:
        r, h = c.reconciled, c.review
        rows.append({
            "check_id": c.check.id, "sample_id": c.check.sample_id, "kind": str(c.check.kind),
            "condition": c.check.condition.key, "subject": c.check.subject_text, "target_id": c.check.target_id,
            "label": None if r is None or r.label is None else str(r.label), "score": r.score if r else None,
            "agreement": r.agreement if r else None, "method": str(r.method) if r else None,
            "escalated": r.escalated if r else None, "escalation_reason": r.escalation_reason if r else None,
            "provisional": r.provisional if r else None, "reviewer": h.reviewer if h else None,
            "review_action": str(h.action) if h else None,
            "review_label": None if h is None or h.label is None else str(h.label),
            "review_score": h.score if h else None, "accepted_judge": h.accepted_judge if h else None,
            "review_comment": h.comment if h else None,
        })
    return pd.DataFrame(rows, columns=columns)


def report_tables(data: ReportData, sections: Sequence[Section]) -> list[NamedTable]:
    """Every table the report shows, plus the per-check and per-verdict tables behind the drill-down.

    The per-check tables cover the drill-down's questions, so data must hold every question's
    (`collect(..., drill_down=None)`); a cut drill-down raises ValueError rather than export part of a run.
    """
    if data.omitted:
        raise ValueError(f"the drill-down leaves out {data.omitted} questions: read the run with "
                         "collect(store, run_id, drill_down=None) to export every check, or use export_run")
    checks = [c for sample in data.samples for c in sample.checks]
    run, judges, samples, elements, *method_tables = _whole_run_tables(data, sections)
    return [run, judges, samples, elements, NamedTable("decisions", "Decisions per check", decision_frame(checks)),
            NamedTable("verdicts", "Verdicts", verdict_frame(checks)), *method_tables]


def _whole_run_tables(data: ReportData, sections: Sequence[Section]) -> list[NamedTable]:
    """The tables read from every question's row and diagnostics, whatever the drill-down holds."""
    tables = [
        NamedTable("run_metrics", "Run metrics", metric_frame(data.summary.metrics)),
        NamedTable("judges", "Judges", judge_frame(data)),
        NamedTable("samples", "Samples", sample_frame(data)),
        NamedTable("elements", "Elements", element_frame(data)),
        NamedTable("element_questions", "Elements per question (seed 003's record: result_label and the element "
                   "lists of the normal and the loose retrieval)", element_question_frame(data)),
    ]
    if data.jury is not None and data.jury.frame is not None:
        tables.append(NamedTable("jury", "Jury: estimated accuracy per judge and check kind", data.jury.frame))
    if data.profile is not None and data.profile.frame is not None:
        tables.append(NamedTable("calibration_profile", "Calibration profile applied", data.profile.frame))
    for section in sections:
        tables.extend(section.tables)
    return tables


def _parquet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """Parquet needs one type per column: mixed object columns (e.g. text and numbers) become text."""
    out = frame.copy()
    for column in out.columns:
        if out[column].dtype == object:
            kinds = {type(v) for v in out[column] if v is not None and not (isinstance(v, float) and pd.isna(v))}
            if len(kinds) > 1:
                out[column] = out[column].map(lambda v: None if v is None else str(v))
    return out


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _spreadsheet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """Untrusted text that a spreadsheet would run as a formula (=, +, -, @ first) gets a leading quote
    in the CSV (OWASP's CSV-injection advice); numbers are left alone, and Parquet keeps the exact text."""
    out = frame.copy()
    for column in out.columns:
        if out[column].dtype == object or pd.api.types.is_string_dtype(out[column]):
            out[column] = out[column].map(
                lambda v: "'" + v if isinstance(v, str) and v.startswith(_FORMULA_START) else v
            )
    return out


def export_tables(tables: Sequence[NamedTable], directory: Path) -> list[Path]:
    """Write <name>.csv and <name>.parquet for each table; returns the written paths."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for table in tables:
        csv_path, parquet_path = directory / f"{table.name}.csv", directory / f"{table.name}.parquet"
        _spreadsheet_safe(table.frame).to_csv(csv_path, index=False)
        _parquet_safe(table.frame).to_parquet(parquet_path, index=False)
        written += [csv_path, parquet_path]
    return written


EXPORT_SLICE = 500  # questions whose checks and verdicts are read and written at a time


def export_run(store: RecordStore, data: ReportData, sections: Sequence[Section], directory: Path,
               *, slice_size: int = EXPORT_SLICE) -> list[Path]:
    """Every table of the run as CSV and Parquet, the per-check and per-verdict ones written a slice of
    questions at a time, so memory stays that of a slice whatever the run's size (`data` may have a cut
    drill-down: its per-question rows and diagnostics cover every question either way). The files are the
    ones export_tables writes for report_tables of the whole run."""
    written = export_tables(_whole_run_tables(data, sections), directory)
    ids = [row.sample_id for row in data.rows]
    tables = (("decisions", decision_frame, DECISION_COLUMNS), ("verdicts", verdict_frame, VERDICT_COLUMNS))
    with ExitStack() as files:
        sinks = []
        for name, frame_of, columns in tables:
            csv_path, parquet_path = directory / f"{name}.csv", directory / f"{name}.parquet"
            schema = pa.schema(list(columns.items()))
            csv_file = files.enter_context(csv_path.open("w", encoding="utf-8", newline=""))
            parquet = files.enter_context(pq.ParquetWriter(parquet_path, schema))
            sinks.append((frame_of, schema, csv_file, parquet))
            written += [csv_path, parquet_path]
        for start in range(0, max(len(ids), 1), slice_size):
            views = check_views(store, data.run.run_id, ids[start:start + slice_size])  # read once for both
            for frame_of, schema, csv_file, parquet in sinks:
                frame = frame_of(views)
                _spreadsheet_safe(frame).to_csv(csv_file, index=False, header=start == 0)
                parquet.write_table(pa.Table.from_pandas(frame, schema=schema, preserve_index=False))
    return written
