"""Loaders: a sample's conversation history (issue 19.5, seed 002 section 6) in JSONL, JSON and CSV."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from ragcourt.data.loaders import DatasetError, FieldLimits, load_samples
from ragcourt.schema import Sample, Turn

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "multi_turn.jsonl"
HISTORY = [{"role": "user", "content": "Who founded Acme?"},
           {"role": "assistant", "content": "Acme was founded by Ada Lovelace."}]
TURNS = (Turn(role="user", content="Who founded Acme?"),
         Turn(role="assistant", content="Acme was founded by Ada Lovelace."))


def write_jsonl(path: Path, *rows: dict) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_the_multi_turn_example_loads_with_its_turns_in_order() -> None:
    samples = load_samples(EXAMPLE).samples
    assert [s.id for s in samples] == ["mt1", "mt2"]
    assert samples[0].history == TURNS
    assert [t.role for t in samples[1].history] == ["user", "assistant", "user", "assistant"]
    assert samples[1].history[2].content == "Is the museum free?"
    assert all("history" not in s.metadata for s in samples)  # a field, not an unknown key


def test_history_in_jsonl_json_and_csv_gives_the_same_sample(tmp_path: Path) -> None:
    row = {"id": "a", "question": "Where is its headquarters?", "history": HISTORY}
    from_jsonl = load_samples(write_jsonl(tmp_path / "s.jsonl", row)).samples
    (tmp_path / "s.json").write_text(json.dumps([row]), encoding="utf-8")
    from_json = load_samples(tmp_path / "s.json").samples
    with (tmp_path / "s.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "question", "history"])
        writer.writerow(["a", "Where is its headquarters?", json.dumps(HISTORY)])
    from_csv = load_samples(tmp_path / "s.csv").samples
    expected = (Sample(id="a", question="Where is its headquarters?", history=TURNS),)
    assert from_jsonl == from_json == from_csv == expected


def test_a_row_without_history_or_with_an_empty_one_has_none(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "s.jsonl", {"id": "a", "question": "Q?"}, {"id": "b", "question": "Q?", "history": []})
    assert [s.history for s in load_samples(path).samples] == [(), ()]


@pytest.mark.parametrize(
    ("history", "field", "message"),
    [
        ("Who founded Acme?", "history", "must be a list of {role, content} turns, got string"),
        (["Who founded Acme?"], "history[0]", "must be an object with 'role' and 'content', got string"),
        ([HISTORY[0], {"content": "Ada."}], "history[1].role", "is missing"),
        ([HISTORY[0], HISTORY[1], {"role": "system", "content": "obey"}], "history[2].role",
         "must be 'user' or 'assistant', got 'system'"),
        ([{"role": "User", "content": "Hi"}], "history[0].role", "must be 'user' or 'assistant', got 'User'"),
        ([{"role": "user"}], "history[0].content", "is missing"),
        ([{"role": "user", "content": "   "}], "history[0].content", "is empty"),
        ([{"role": "user", "content": 3}], "history[0].content", "must be a string, got number"),
        ([{"role": "user", "content": "Hi", "name": "ann"}], "history[0].name",
         "is not a field of a turn (a turn has 'role' and 'content')"),
    ],
)
def test_a_bad_history_names_file_line_and_field(tmp_path: Path, history: object, field: str, message: str) -> None:
    path = write_jsonl(tmp_path / "s.jsonl", {"id": "ok", "question": "Q?"},
                       {"id": "bad", "question": "Q?", "history": history})
    with pytest.raises(DatasetError) as caught:
        load_samples(path)
    assert (caught.value.line, caught.value.field, caught.value.message) == (2, field, message)
    assert str(caught.value) == f"{path}:2: field '{field}': {message}"


def test_a_csv_history_cell_must_be_json(tmp_path: Path) -> None:
    path = tmp_path / "s.csv"
    path.write_text('id,question,history\na,Q?,"Who founded Acme?"\n', encoding="utf-8")
    with pytest.raises(DatasetError) as caught:
        load_samples(path)
    assert (caught.value.line, caught.value.field) == (2, "history")
    assert "JSON list of turns" in caught.value.message


def test_an_over_long_turn_is_refused_with_its_field(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "s.jsonl", {"id": "a", "question": "Q?",
                                              "history": [{"role": "user", "content": "x" * 11}]})
    with pytest.raises(DatasetError) as caught:
        load_samples(path, limits=FieldLimits(turn=10))
    assert (caught.value.line, caught.value.field) == (1, "history[0].content")
    assert caught.value.message == "holds 11 characters, more than the limit of 10"
