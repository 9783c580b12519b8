"""CSV datasets: a header naming the columns, one sample a row; list and object fields as JSON cells or
'|'-separated text. Read one line at a time (a quoted cell may span lines), so a file of any length is never
held whole."""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ragcourt.data.errors import DatasetError, RowError
from ragcourt.data.reading import Rows
from ragcourt.data.rows import LIST_FIELDS
from ragcourt.data.text_input import json_value, skip_whitespace, text_lines

CSV_LIST_SEPARATOR = "|"
# csv's field limit is a process-wide setting; lifted only while a CSV file is read (see csv_rows), so that a very
# large field (a whole book in reference_answer) is read: no size limit but FieldLimits applies.
_CSV_FIELD_LIMIT = 2**31 - 1


def csv_value(column: str, cell: str) -> Any:
    """A CSV cell as a Python value: empty -> None; list / object fields as JSON or '|'-separated text."""
    if cell == "":
        return None
    if column in LIST_FIELDS:
        if cell.lstrip().startswith(("[", "{")):
            try:
                value, end = json_value(cell)
            except RowError as exc:
                raise RowError(column, exc.message) from None
            if skip_whitespace(cell, end) != len(cell):
                raise RowError(column, "not valid JSON: extra data after the value")
            return value
        if column == "metadata":
            raise RowError(column, "must be a JSON object")
        if column == "history":
            raise RowError(column, 'must be a JSON list of turns, e.g. [{"role": "user", "content": "..."}]')
        return [part.strip() for part in cell.split(CSV_LIST_SEPARATOR) if part.strip()]
    return cell
def csv_rows(path: Path) -> Rows:
    """(line a row starts on, parse) of every row that shows something; DatasetError for a bad header (no row can
    be trusted after it), a row failing for a CSV syntax error ends the rows (the reader cannot resynchronise)."""
    reader = csv.reader(text_lines(path))
    previous_limit = csv.field_size_limit(_CSV_FIELD_LIMIT)
    try:
        try:
            header = next(reader)
        except StopIteration:
            raise DatasetError(path, "file is empty") from None
        except csv.Error as exc:
            raise DatasetError(path, f"bad CSV: {exc}", line=1) from None
        columns = [name.strip() for name in header]
        if not any(columns):
            raise DatasetError(path, "the first row must be a header naming the columns", line=1)
        for index, name in enumerate(columns):
            if not name:
                raise DatasetError(path, f"header column {index + 1} has no name", line=1)
            if name in columns[:index]:
                raise DatasetError(path, f"header names column '{name}' twice", line=1, field=name)
        while True:
            start = reader.line_num + 1
            try:
                cells = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                yield start, failing(RowError(None, f"bad CSV: {exc}"))
                return
            if cells and any(cell.strip() for cell in cells):
                yield start, _row_parser(columns, cells)
    finally:
        csv.field_size_limit(previous_limit)


def _row_parser(columns: list[str], cells: list[str]) -> Callable[[], dict[str, Any]]:
    def parse() -> dict[str, Any]:
        if len(cells) != len(columns):
            raise RowError(None, f"row has {len(cells)} cells, the header has {len(columns)}")
        row: dict[str, Any] = {}
        for column, cell in zip(columns, cells, strict=True):
            value = csv_value(column, cell)
            if value is not None:
                row[column] = value
        return row

    return parse


def failing(error: RowError) -> Callable[[], Any]:
    """A row's parse that raises `error` (a row the reader could not split into cells)."""

    def fail() -> Any:
        raise error

    return fail
