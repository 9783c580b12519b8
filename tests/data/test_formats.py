"""Datasets as they come (data.formats): Parquet, saved Hugging Face datasets, RAGAS and LangSmith exports,
column maps, and errors naming the file, the line or row, and the field. Every file is made in the test."""

from __future__ import annotations

import csv
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ragcourt.data.formats import DatasetFormat, load_dataset, parse_column_map, read_dataset
from ragcourt.data.loaders import DatasetError, ErrorPolicy
from ragcourt.schema import content_id

ROWS = [
    {"id": "q1", "question": "Who founded Acme?", "reference_answer": "Ada Lovelace.",
     "contexts": ["Ada Lovelace founded Acme.", "Acme sells kettles."]},
    {"id": "q2", "question": "How long is the warranty?", "reference_answer": "Two years.", "contexts": []},
]


def write_jsonl(path, rows) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def test_a_parquet_file_loads_with_lists_and_a_null_cell_left_out(tmp_path) -> None:
    path = tmp_path / "questions.parquet"
    table = pa.table({"id": ["q1", "q2"], "question": [r["question"] for r in ROWS],
                      "reference_answer": ["Ada Lovelace.", None],  # a null cell: no reference
                      "contexts": [ROWS[0]["contexts"], []], "team": ["a", "b"]})
    pq.write_table(table, path)
    first, second = load_dataset(path)
    assert (first.id, first.question, first.reference_answer) == ("q1", "Who founded Acme?", "Ada Lovelace.")
    assert [c.text for c in first.contexts] == ["Ada Lovelace founded Acme.", "Acme sells kettles."]
    assert [c.rank for c in first.contexts] == [1, 2]
    assert second.reference_answer is None and second.contexts == ()
    assert first.metadata == {"team": "a"}  # an unknown column goes to metadata, as in JSONL


def test_a_bad_parquet_row_names_the_file_the_row_and_the_field(tmp_path) -> None:
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"id": ["q1", "q2", "q3"], "question": ["Fine?", "", "Also fine?"]}), path)
    with pytest.raises(DatasetError) as raised:
        load_dataset(path)
    assert str(raised.value) == f"{path}: row 2: field 'question': is empty"
    assert (raised.value.line, raised.value.field, raised.value.unit) == (2, "question", "row")
    skipped = read_dataset(path, on_error=ErrorPolicy.SKIP)
    assert [s.id for s in skipped.samples] == ["q1", "q3"] and [e.line for e in skipped.errors] == [2]


def test_a_file_that_is_not_parquet_is_refused_clearly(tmp_path) -> None:
    path = tmp_path / "fake.parquet"
    path.write_text("id,question\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"fake\.parquet: not a readable Parquet file"):
        load_dataset(path)


def test_a_saved_hugging_face_dataset_loads_from_its_directory(tmp_path) -> None:
    datasets = pytest.importorskip("datasets")
    saved = tmp_path / "hf"
    datasets.Dataset.from_list(ROWS).save_to_disk(str(saved))
    samples = load_dataset(saved)
    assert [s.id for s in samples] == ["q1", "q2"]
    assert [c.text for c in samples[0].contexts] == ROWS[0]["contexts"]
    # a DatasetDict with one split is that split; with two, the error says which directories to give
    datasets.DatasetDict({"test": datasets.Dataset.from_list(ROWS)}).save_to_disk(str(tmp_path / "one"))
    assert [s.id for s in load_dataset(tmp_path / "one")] == ["q1", "q2"]
    both = datasets.DatasetDict({"train": datasets.Dataset.from_list(ROWS[:1]),
                                 "test": datasets.Dataset.from_list(ROWS[1:])})
    both.save_to_disk(str(tmp_path / "two"))
    with pytest.raises(DatasetError, match="the splits train, test: give one split's directory"):
        load_dataset(tmp_path / "two")
    assert [s.id for s in load_dataset(tmp_path / "two" / "test")] == ["q2"]


def test_a_directory_that_is_no_saved_dataset_is_refused(tmp_path) -> None:
    with pytest.raises(DatasetError, match="is not a regular file, nor a saved Hugging Face dataset"):
        load_dataset(tmp_path)


def test_a_datasets_object_loads_in_python_with_a_column_map(tmp_path) -> None:
    datasets = pytest.importorskip("datasets")
    dataset = datasets.Dataset.from_list([{"qid": 7, "query_text": "Who founded Acme?", "gt": "Ada Lovelace."}])
    (sample,) = read_dataset(dataset, column_map={"id": "qid", "question": "query_text",
                                                  "reference_answer": "gt"}).samples
    assert (sample.id, sample.question, sample.reference_answer) == ("7", "Who founded Acme?", "Ada Lovelace.")
    with pytest.raises(DatasetError) as raised:
        read_dataset(datasets.Dataset.from_list([{"qid": 7, "query_text": 3}]),
                     column_map={"id": "qid", "question": "query_text"})
    # the field as the user's data names it, not ours
    assert str(raised.value) == "datasets.Dataset: row 1: field 'query_text': must be a string, got number"


RAGAS_ROWS = [
    {"user_input": "Who founded Acme?", "retrieved_contexts": ["Ada Lovelace founded Acme.", "Acme's kettles."],
     "response": "Ada Lovelace founded it.", "reference": "Ada Lovelace."},
    {"user_input": "How long is the kettle warranty?", "retrieved_contexts": ["Two-year warranty."],
     "response": "Two years.", "reference": "Two years.", "reference_contexts": ["The kettle: two years."]},
]


def check_ragas(samples) -> None:
    first, second = samples
    assert first.question == "Who founded Acme?" and first.answer == "Ada Lovelace founded it."
    assert first.reference_answer == "Ada Lovelace."
    assert [c.text for c in first.contexts] == ["Ada Lovelace founded Acme.", "Acme's kettles."]
    assert [c.text for c in second.gold_documents] == ["The kettle: two years."]
    # no id in RAGAS rows: derived from question and reference, so a re-load gives the same ids
    assert first.id == content_id("ragas", "Who founded Acme?", "Ada Lovelace.")


def test_a_ragas_evaluation_dataset_as_to_jsonl_writes_it(tmp_path) -> None:
    path = tmp_path / "ragas.jsonl"
    write_jsonl(path, RAGAS_ROWS)
    check_ragas(load_dataset(path))


def test_a_ragas_evaluation_dataset_as_to_csv_writes_it(tmp_path) -> None:
    """to_csv is csv.DictWriter over the samples' dicts: a list cell holds Python's repr of the list."""
    path = tmp_path / "ragas.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=["user_input", "retrieved_contexts", "response", "reference",
                                                    "reference_contexts"])
        writer.writeheader()
        writer.writerows(RAGAS_ROWS)
    assert ",['Two-year warranty.'],Two years." in path.read_text(encoding="utf-8")
    check_ragas(load_dataset(path))
    assert load_dataset(path, format="ragas") == load_dataset(path)


def test_a_ragas_multi_turn_sample_gives_the_history_and_the_question(tmp_path) -> None:
    path = tmp_path / "multi.jsonl"
    write_jsonl(path, [{"user_input": [{"content": "Tell me about Acme.", "type": "human"},
                                       {"content": "Acme makes kettles.", "type": "ai"},
                                       {"content": "Who founded it?", "type": "human"}],
                        "reference": "Ada Lovelace."},
                       {"user_input": [{"content": "Hi", "type": "tool"}], "reference": "x"}])
    with pytest.raises(DatasetError) as raised:
        load_dataset(path)
    assert str(raised.value) == (f"{path}:2: field 'user_input[0].type': must be 'human' or 'ai' (a question and "
                                 "its history), got 'tool'")
    (sample,) = read_dataset(path, on_error=ErrorPolicy.SKIP).samples
    assert sample.question == "Who founded it?"
    assert [(t.role, t.content) for t in sample.history] == [("user", "Tell me about Acme."),
                                                             ("assistant", "Acme makes kettles.")]


def test_a_ragas_object_loads_when_ragas_is_installed() -> None:
    ragas = pytest.importorskip("ragas")
    dataset = ragas.EvaluationDataset.from_list(RAGAS_ROWS)
    check_ragas(read_dataset(dataset).samples)


LANGSMITH = [
    {"id": "0b1c9c2e-1111-4a5b-9c1d-000000000001", "name": "#1", "dataset_id": "d-1",
     "created_at": "2025-01-02T03:04:05Z", "inputs": {"question": "Who founded Acme?"},
     "outputs": {"answer": "Ada Lovelace."}, "metadata": {"team": "support"}},
    {"id": "0b1c9c2e-1111-4a5b-9c1d-000000000002", "inputs": {"prompt": "How long is the warranty?",
     "locale": "en"}, "outputs": {"output": "Two years."}, "metadata": None},
]


def test_a_langsmith_export_loads_its_inputs_and_reference_outputs(tmp_path) -> None:
    path = tmp_path / "langsmith.jsonl"
    write_jsonl(path, LANGSMITH[:1])
    (sample,) = load_dataset(path)
    assert sample.id == LANGSMITH[0]["id"] and sample.question == "Who founded Acme?"
    assert sample.reference_answer == "Ada Lovelace." and sample.answer is None  # outputs are references
    assert sample.metadata == {"team": "support", "langsmith": {"name": "#1", "dataset_id": "d-1",
                                                                "created_at": "2025-01-02T03:04:05Z"}}
    # a JSON list (the CLI's export) reads the same
    listed = tmp_path / "langsmith.json"
    listed.write_text(json.dumps(LANGSMITH[:1]), encoding="utf-8")
    assert load_dataset(listed) == load_dataset(path)


def test_a_langsmith_input_without_a_known_name_needs_a_map_and_gets_it(tmp_path) -> None:
    path = tmp_path / "langsmith.jsonl"
    write_jsonl(path, LANGSMITH)
    with pytest.raises(DatasetError) as raised:
        load_dataset(path)
    assert str(raised.value) == (f"{path}:2: field 'inputs': has no question: name it with a column map, e.g. "
                                 "question=inputs.NAME (inputs: inputs.prompt, inputs.locale)")
    samples = load_dataset(path, column_map=parse_column_map("question=inputs.prompt"))
    assert [s.question for s in samples] == ["Who founded Acme?", "How long is the warranty?"]
    assert samples[1].reference_answer == "Two years." and samples[1].metadata == {"inputs.locale": "en"}


def test_a_column_map_renames_a_users_columns_in_csv_with_list_cells(tmp_path) -> None:
    path = tmp_path / "mine.csv"
    path.write_text("qid,query,gt_answer,passages\n"
                    "a1,Who founded Acme?,Ada Lovelace.,Ada Lovelace founded Acme.|Acme sells kettles.\n",
                    encoding="utf-8")
    mapping = parse_column_map(["id=qid,question=query", "reference_answer=gt_answer", "contexts=passages"])
    assert mapping == {"id": "qid", "question": "query", "reference_answer": "gt_answer", "contexts": "passages"}
    (sample,) = load_dataset(path, column_map=mapping)
    assert (sample.id, sample.question, sample.reference_answer) == ("a1", "Who founded Acme?", "Ada Lovelace.")
    assert [c.text for c in sample.contexts] == ["Ada Lovelace founded Acme.", "Acme sells kettles."]


def test_a_column_map_with_a_mistake_is_refused_before_reading() -> None:
    with pytest.raises(ValueError, match="'questoin' is not a sample field"):
        parse_column_map("questoin=query")
    with pytest.raises(ValueError, match="write FIELD=COLUMN"):
        parse_column_map("question")
    with pytest.raises(ValueError, match="column 'q' is mapped to both 'question' and 'answer'"):
        parse_column_map("question=q,answer=q")


def test_a_mapped_column_beside_the_field_it_replaces_is_an_error(tmp_path) -> None:
    path = tmp_path / "both.jsonl"
    write_jsonl(path, [{"id": "1", "question": "A?", "query": "B?"}])
    with pytest.raises(DatasetError) as raised:
        load_dataset(path, column_map={"question": "query"})
    assert str(raised.value) == (f"{path}:1: field 'question': is given beside 'query', which the column map "
                                 "reads as 'question'; keep one")


def test_a_named_format_overrides_detection(tmp_path) -> None:
    path = tmp_path / "plain.jsonl"
    write_jsonl(path, ROWS)
    assert [s.id for s in load_dataset(path, format=DatasetFormat.RAGCOURT)] == ["q1", "q2"]
    with pytest.raises(DatasetError, match=r"plain\.jsonl:1: field 'inputs': is missing"):
        load_dataset(path, format="langsmith")


def test_a_mapped_format_warns_only_about_what_its_mapping_leaves(tmp_path) -> None:
    path = tmp_path / "ragas.jsonl"
    path.write_text(json.dumps({"user_input": "Who?", "response": "Ada", "qestion": "x"}) + "\n")
    result = read_dataset(path)
    assert [w.field for w in result.warnings] == ["qestion"]
    assert "did you mean 'question'?" in result.warnings[0].message
