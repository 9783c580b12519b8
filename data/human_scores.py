"""People's 0-10 ratings of a run's RAG answers, per sample and CuBE dimension (seed 000, 5.6 and Table 5).

A .jsonl file, one object per rated sample: ``{"sample_id": "q1", "relevance": 8, "quality": 7}``, or a .csv
file with a header ``sample_id,relevance,quality``. Each dimension column holds a number from 0 to 10; a
missing key or an empty cell is "not rated". Every problem names the file, the line and the field.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragcourt.data.loaders import DatasetError, DatasetErrors

SAMPLE_ID = "sample_id"
HumanScores = dict[str, dict[str, float]]  # sample id -> dimension -> 0-10 rating


def _rows(path: Path, text: str) -> list[tuple[int, dict[str, Any]]]:
    if path.suffix.lower() == ".jsonl":
        rows = []
        for line, raw in enumerate(text.splitlines(), start=1):
            if not raw.strip():
                continue
            try:
                value = json.loads(raw)
            except json.JSONDecodeError as error:
                raise DatasetError(path, f"not valid JSON: {error.msg}", line=line) from None
            if not isinstance(value, dict):
                raise DatasetError(path, f"must be a JSON object, got {type(value).__name__}", line=line)
            rows.append((line, value))
        return rows
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(io.StringIO(text))
        return [(reader.line_num, {k: v for k, v in row.items() if v not in ("", None)}) for row in reader]
    raise DatasetError(path, f"unsupported file type '{path.suffix}'; use .jsonl or .csv")


def _score(path: Path, line: int, field: str, value: Any) -> float:
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise DatasetError(path, f"must be a number from 0 to 10, got {value!r}", line=line, field=field) from None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or not 0 <= value <= 10:
        raise DatasetError(path, f"must be a number from 0 to 10, got {value!r}", line=line, field=field)
    return float(value)


def load_human_scores(path: Path, dimensions: Sequence[str]) -> HumanScores:
    """The ratings of `path` for the run's `dimensions`; raises DatasetErrors listing every problem (an unknown
    column, a repeated sample, a rating outside 0-10)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise DatasetError(path, f"cannot read: {error}") from None
    out: HumanScores = {}
    errors: list[DatasetError] = []
    for line, row in _rows(path, text):
        sample_id = row.get(SAMPLE_ID)
        if not isinstance(sample_id, str | int) or isinstance(sample_id, bool) or str(sample_id).strip() == "":
            errors.append(DatasetError(path, "is missing (the id of the rated sample)", line=line, field=SAMPLE_ID))
            continue
        sample_id = str(sample_id)
        if sample_id in out:
            errors.append(DatasetError(path, f"sample {sample_id!r} is rated twice", line=line, field=SAMPLE_ID))
            continue
        ratings: dict[str, float] = {}
        for field, value in row.items():
            if field == SAMPLE_ID or value is None:
                continue
            if field not in dimensions:
                errors.append(DatasetError(path, f"is not a dimension of this run ({', '.join(dimensions)})",
                                           line=line, field=field))
                continue
            try:
                ratings[field] = _score(path, line, field, value)
            except DatasetError as error:
                errors.append(error)
        out[sample_id] = ratings
    if errors:
        raise DatasetErrors(errors)
    return out
