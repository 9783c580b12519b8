"""Readable results of the Python API: EvalResult.to_frame with the inputs beside the metrics, summary() as
the run's headline table (and its Jupyter / rich reprs), and datasets given as they come (a Parquet path with
a column map, a `datasets.Dataset`)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from rich.console import Console

import ragcourt
from ragcourt.analysis.summary import summarize
from ragcourt.schema import Chunk, Sample

CHUNKS = (Chunk(id="acme-doc", text="Ada Lovelace founded Acme.", title="Acme"),
          Chunk(id="kettle-doc", text="The kettle has a two-year warranty.", title="Kettle"))
SAMPLES = [Sample(id="acme", question="Who founded Acme?", reference_answer="Ada Lovelace founded Acme.",
                  contexts=CHUNKS, answer="Ada Lovelace founded Acme."),
           Sample(id="kettle", question="How long is the kettle warranty?", reference_answer="Two years.",
                  contexts=CHUNKS[1:], answer="Two years.")]


@pytest.fixture(scope="module")
def result(tmp_path_factory) -> ragcourt.EvalResult:
    return ragcourt.evaluate(SAMPLES, ragcourt.Precomputed(), home=tmp_path_factory.mktemp("ws"), run_id="r")


def test_the_frame_has_the_inputs_beside_the_metrics(result) -> None:
    frame = result.to_frame()
    assert list(frame.columns[:9]) == ["sample_id", "question", "answer", "reference_answer", "contexts", "status",
                                       "n_checks", "n_unscored", "n_escalated"]
    acme, kettle = frame.to_dict("records")
    assert (acme["question"], acme["answer"], acme["reference_answer"]) == (
        "Who founded Acme?", "Ada Lovelace founded Acme.", "Ada Lovelace founded Acme.")
    assert acme["contexts"] == ["Ada Lovelace founded Acme.", "The kettle has a two-year warranty."]
    assert kettle["contexts"] == ["The kettle has a two-year warranty."] and kettle["answer"] == "Two years."
    # the metric columns are still there, one value per metric of the diagnostics
    for metric in result.diagnostics[0].metrics:
        assert metric.name in frame.columns


def test_summary_is_the_runs_headline_table(result) -> None:
    table = result.summary()
    assert list(table.columns) == ["metric", "mean", "samples", "n/a", "unscored checks", "escalated checks"]
    with ragcourt.Workspace(result.run_dir.parent.parent).open_store() as store:
        expected = summarize(store, "r")
    assert list(table["metric"]) == [row.name for row in expected.metrics]
    assert [None if m != m else m for m in table["mean"]] == [row.mean for row in expected.metrics]
    assert table.attrs["n_samples"] == 2 and table.attrs["n_checks"] == expected.n_checks


def test_jupyter_and_rich_show_the_headline_not_a_list_of_records(result) -> None:
    page = result._repr_html_()
    assert page.startswith("<p><b>run r: 2 samples (0 failed)") and "<table" in page
    assert result.summary()["metric"].iloc[0] in page
    console = Console(width=200, record=True)
    console.print(result)
    shown = console.export_text()
    assert "run r: 2 samples" in shown and "unscored checks" in shown
    assert repr(result) == f"EvalResult(run_id='r', samples=2, run_dir={str(result.run_dir)!r})"


def test_a_parquet_dataset_with_a_column_map_is_evaluated(tmp_path) -> None:
    path = tmp_path / "mine.parquet"
    pq.write_table(pa.table({"qid": ["acme"], "query": ["Who founded Acme?"], "gt": ["Ada Lovelace founded Acme."],
                             "passages": [["Ada Lovelace founded Acme."]], "reply": ["Ada Lovelace founded Acme."]}),
                   path)
    result = ragcourt.evaluate(system=ragcourt.Precomputed(), dataset=path, home=tmp_path / "ws",
                               column_map={"id": "qid", "question": "query", "reference_answer": "gt",
                                           "contexts": "passages", "answer": "reply"})
    (row,) = result.to_frame().to_dict("records")
    assert (row["sample_id"], row["question"], row["contexts"]) == ("acme", "Who founded Acme?",
                                                                     ["Ada Lovelace founded Acme."])


def test_a_datasets_object_is_evaluated(tmp_path) -> None:
    datasets = pytest.importorskip("datasets")
    dataset = datasets.Dataset.from_list([{"user_input": "Who founded Acme?", "reference": "Ada Lovelace.",
                                           "retrieved_contexts": ["Ada Lovelace founded Acme."],
                                           "response": "Ada Lovelace."}])  # a RAGAS shape in a HF dataset
    result = ragcourt.evaluate(system=ragcourt.Precomputed(), dataset=dataset, home=tmp_path)
    (row,) = result.to_frame().to_dict("records")
    assert (row["question"], row["answer"], row["reference_answer"]) == ("Who founded Acme?", "Ada Lovelace.",
                                                                         "Ada Lovelace.")
