"""JSONL datasets: one JSON object per line, read one line at a time, so one bad line does not hide the others
and a file of any length is never held whole."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from ragcourt.data.reading import Rows
from ragcourt.data.text_input import jsonl_lines, jsonl_value


def jsonl_rows(path: Path) -> Rows:
    """(line, parse) of every non-blank line; DatasetError when the file cannot be read or is empty."""
    for number, raw in jsonl_lines(path):
        yield number, partial(jsonl_value, raw)
