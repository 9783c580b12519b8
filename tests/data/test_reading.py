"""The streaming reader: a dataset checked whole in one pass, then read again each time it is iterated, never held
whole (JSONL and CSV a line at a time, Parquet and saved Hugging Face datasets a batch at a time)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragcourt.data.errors import DatasetError, ErrorPolicy
from ragcourt.data.formats import stream_dataset
from ragcourt.data.loaders import file_stream, load_samples
from ragcourt.data.reading import SampleStream


def row(i: int, **extra: object) -> dict[str, object]:
    return {"id": f"q{i}", "question": f"Where is Acme{i}?", "reference_answer": f"In Springfield{i}.", **extra}


def write_jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def no_whole_file_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader that reads a whole file at once fails: the stream must read it a line at a time."""

    def refused(*_: object, **__: object) -> None:
        raise AssertionError("the whole file was read at once")

    monkeypatch.setattr(Path, "read_bytes", refused)
    monkeypatch.setattr(Path, "read_text", refused)


def test_a_jsonl_stream_gives_the_samples_load_samples_gives_and_reads_the_file_again_each_time(
        tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "data.jsonl", [row(i) for i in range(5)])
    loaded = load_samples(path).samples
    stream = file_stream(path)
    assert len(stream) == 5
    assert list(stream) == list(loaded)
    path.write_text("")  # a second iteration reads the file, not a copy held from the first
    with pytest.raises(DatasetError, match="file is empty"):
        list(stream)


def test_a_stream_reads_jsonl_and_csv_a_line_at_a_time(tmp_path: Path, no_whole_file_reads: None) -> None:
    jsonl = write_jsonl(tmp_path / "data.jsonl", [row(i) for i in range(3)])
    csv_file = tmp_path / "data.csv"
    with csv_file.open("w", encoding="utf-8", newline="") as out:
        out.write('id,question,gold_answers\nq1,"Who wrote\nHamlet?",Shakespeare|Will\nq2,Who?,X\n')
    assert [s.id for s in file_stream(jsonl)] == ["q0", "q1", "q2"]
    first, second = list(file_stream(csv_file))
    assert (first.question, first.gold_answers, second.id) == ("Who wrote\nHamlet?", ("Shakespeare", "Will"), "q2")


def test_the_validating_pass_reports_every_problem_with_its_line_and_field_and_skips_them_after(
        tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "data.jsonl", [
        row(1), row(2, question=7), "{not json", row(1), row(3), row(4, contexts="one"),
    ])
    stream = file_stream(path, on_error=ErrorPolicy.SKIP)
    check = stream.check()
    assert [(e.line, e.field) for e in check.errors] == [(2, "question"), (3, None), (4, "id"), (6, "contexts")]
    assert str(check.errors[2]) == f"{path}:4: field 'id': duplicate id 'q1' (first on line 1, again on line 4)"
    assert (check.n_samples, len(stream)) == (2, 2)
    assert [s.id for s in stream] == ["q1", "q3"]  # the duplicate on line 4 is left out, the first kept


def test_by_default_the_first_problem_stops_the_check_before_any_sample(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "data.jsonl", [row(1), row(1)])
    stream = file_stream(path)
    with pytest.raises(DatasetError, match=r":2: field 'id': duplicate id 'q1'"):
        next(iter(stream))


def test_a_limit_yields_the_first_samples_after_checking_the_whole_file(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "data.jsonl", [row(i) for i in range(5)] + [row(0)])
    with pytest.raises(DatasetError, match=":6: field 'id': duplicate id 'q0'"):
        file_stream(path, limit=2).check()
    fine = write_jsonl(tmp_path / "fine.jsonl", [row(i) for i in range(5)])
    limited = file_stream(fine, limit=2)
    assert (len(limited), [s.id for s in limited]) == (2, ["q0", "q1"])


def test_the_fields_no_sample_has_are_warned_once_with_their_first_line_and_count(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "data.jsonl", [row(1), row(2, sorce="web"), row(3, sorce="web")])
    (warning,) = file_stream(path).check().warnings
    assert (warning.line, warning.field) == (2, "sorce")
    assert "(on 2 lines)" in warning.message


def test_parquet_is_read_by_batches_of_rows_and_again_on_each_iteration(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from ragcourt.data import read_parquet

    path = tmp_path / "data.parquet"
    pq.write_table(pa.Table.from_pylist([row(i) for i in range(10)]), path, row_group_size=4)
    monkeypatch.setattr(read_parquet, "BATCH_ROWS", 3)
    batches: list[int] = []
    table_rows = read_parquet.table_rows

    def counted(batches_in):  # the batches as the reader converts them, one at a time
        for batch in batches_in:
            batches.append(batch.num_rows)
            yield batch

    monkeypatch.setattr(read_parquet, "table_rows", lambda given: table_rows(counted(given)))
    stream = stream_dataset(path)
    assert [s.id for s in stream] == [f"q{i}" for i in range(10)]
    assert max(batches) <= 3 and sum(batches) == 20  # the check's pass and the iteration's, 3 rows at most each


def test_a_table_row_problem_names_the_row_and_the_column(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    path = tmp_path / "data.parquet"
    pq.write_table(pa.Table.from_pylist([row(1), row(2), {**row(3), "id": "q1"}]), path)
    with pytest.raises(DatasetError) as caught:
        stream_dataset(path).check()
    assert str(caught.value) == f"{path}: row 3: field 'id': duplicate id 'q1' (first on row 1, again on row 3)"


def test_a_stream_of_rows_that_changed_since_the_check_says_so(tmp_path: Path) -> None:
    rows = [row(1), row(2)]

    def numbered():
        for number, value in enumerate(rows, start=1):
            yield number, (lambda value=value: dict(value))

    stream = SampleStream(tmp_path / "made.jsonl", numbered)
    assert len(stream) == 2
    rows[1] = row(2, question=None)
    with pytest.raises(DatasetError, match=r"made.jsonl:2: field 'question': is missing.*changed while it was read"):
        list(stream)


def test_the_check_holds_a_digest_an_id_and_tells_a_shared_digest_from_a_duplicate(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ragcourt.data import reading

    monkeypatch.setattr(reading, "hash", lambda _: 7, raising=False)  # every id shares one digest
    path = write_jsonl(tmp_path / "data.jsonl", [row(1), row(2), row(3), row(2), row(4)])
    stream = file_stream(path, on_error=ErrorPolicy.SKIP)
    (error,) = stream.check().errors
    assert str(error) == f"{path}:4: field 'id': duplicate id 'q2' (first on line 2, again on line 4)"
    assert [s.id for s in stream] == ["q1", "q2", "q3", "q4"]
    with pytest.raises(DatasetError, match=":4: field 'id': duplicate id 'q2' \\(first on line 2"):
        file_stream(path).check()
