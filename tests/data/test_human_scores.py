"""People's 0-10 ratings of a run's answers (seed 000, Table 5): JSONL and CSV, every problem located."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragcourt.data.human_scores import load_human_scores
from ragcourt.data.loaders import DatasetErrors

DIMENSIONS = ("relevance", "quality")


def test_jsonl_and_csv_give_the_same_ratings(tmp_path: Path) -> None:
    jsonl = tmp_path / "h.jsonl"
    jsonl.write_text('{"sample_id": "q1", "relevance": 8, "quality": 6.5}\n\n{"sample_id": 2, "quality": 0}\n',
                     encoding="utf-8")
    csv = tmp_path / "h.csv"
    csv.write_text("sample_id,relevance,quality\nq1,8,6.5\n2,,0\n", encoding="utf-8")
    expected = {"q1": {"relevance": 8.0, "quality": 6.5}, "2": {"quality": 0.0}}  # a blank cell is "not rated"
    assert load_human_scores(jsonl, DIMENSIONS) == expected
    assert load_human_scores(csv, DIMENSIONS) == expected


def test_every_problem_names_the_line_and_the_field(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text('{"sample_id": "q1", "relevance": 11}\n{"relevance": 5}\n{"sample_id": "q2", "style": 5}\n'
                    '{"sample_id": "q1", "quality": 4}\n{"sample_id": "q3", "quality": "good"}\n', encoding="utf-8")
    with pytest.raises(DatasetErrors) as raised:
        load_human_scores(path, DIMENSIONS)
    assert str(raised.value).splitlines() == [
        f"{path}:1: field 'relevance': must be a number from 0 to 10, got 11",
        f"{path}:2: field 'sample_id': is missing (the id of the rated sample)",
        f"{path}:3: field 'style': is not a dimension of this run (relevance, quality)",
        f"{path}:4: field 'sample_id': sample 'q1' is rated twice",
        f"{path}:5: field 'quality': must be a number from 0 to 10, got 'good'",
    ]
