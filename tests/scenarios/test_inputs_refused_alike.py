"""Every entry point refuses the inputs a dataset file's loader refuses, in the same words: the Python API, the
LangChain callback handler and the live handler's `submit` (the loader adds the file and line)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda, RunnableParallel, RunnablePassthrough
from pydantic import ValidationError

import ragcourt
from ragcourt.data.loaders import DatasetError, load_samples
from ragcourt.live.evaluator import LiveEvaluator
from ragcourt.schema import Chunk, Sample, SampleStatus
from ragcourt.schema.inputs import field_name
from ragcourt.stores.records import RecordStore
from ragcourt.systems import Precomputed

DUPLICATE_CHUNKS = [{"id": "c", "text": "Cherries are red."}, {"id": "c", "text": "Archer1 designed bridge 1."}]
CONTROL_CHUNK = [{"id": "d\n1", "text": "Cherries are red."}]


def loader_words(tmp_path: Path, **row: object) -> str:
    """What the file loader says of a row, after its file and line: "field 'contexts[1].id': repeats ..."."""
    path = tmp_path / "row.jsonl"
    path.write_text(json.dumps({"id": "q1", "question": "Who designed bridge 1?", "answer": "Archer1.", **row})
                    + "\n", encoding="utf-8")
    with pytest.raises(DatasetError) as caught:
        load_samples(path)
    assert str(caught.value).startswith(f"{path}:1: field '")
    return str(caught.value).removeprefix(f"{path}:1: ")


def test_the_loader_names_file_line_and_field_of_each_refusal(tmp_path: Path) -> None:
    assert loader_words(tmp_path, contexts=DUPLICATE_CHUNKS) == (
        "field 'contexts[1].id': repeats the id 'c' of contexts[0]; give each chunk its own id, or drop the repeat")
    assert loader_words(tmp_path, contexts=CONTROL_CHUNK) == (
        "field 'contexts[0].id': contains the control character U+000A; ids must be printable text")
    assert loader_words(tmp_path, id="q\nq2") == (
        "field 'id': contains the control character U+000A; ids must be printable text")


@pytest.mark.parametrize(("row", "given"), [
    ({"contexts": DUPLICATE_CHUNKS}, {"contexts": tuple(Chunk(**c) for c in DUPLICATE_CHUNKS)}),
    ({"contexts": CONTROL_CHUNK}, {"contexts": tuple(Chunk(**c) for c in CONTROL_CHUNK)}),
    ({"id": "q\nq2"}, {"id": "q\nq2"}),
], ids=["duplicate-chunk-id", "control-character-chunk-id", "control-character-sample-id"])
def test_the_python_api_refuses_what_the_loader_refuses_in_its_words(tmp_path: Path, row: dict, given: dict) -> None:
    words = loader_words(tmp_path, **row)
    fields = {"id": "q1", "question": "Who designed bridge 1?", "answer": "Archer1.", **given}
    with pytest.raises(ValidationError) as built:  # the record itself refuses: no such Sample exists
        ragcourt.evaluate([Sample(**fields)], Precomputed(), home=tmp_path / "home")
    field, _, message = words.removeprefix("field '").partition("': ")
    (error,) = built.value.errors()
    assert (field_name(error["loc"]), error["msg"]) == (field, message)
    # one made without its validators (model_copy skips them) is validated again, and refused before any run
    unchecked = Sample(id="q1", question="Who designed bridge 1?", answer="Archer1.").model_copy(update=given)
    with pytest.raises(ValueError) as caught:
        ragcourt.evaluate([unchecked], Precomputed(), home=tmp_path / "home")
    assert str(caught.value) == f"samples[0]: {words}"
    assert not (tmp_path / "home" / "store.sqlite").exists()


def test_the_python_api_refuses_one_sample_id_given_twice(tmp_path: Path) -> None:
    sample = Sample(id="q1", question="Who?", answer="Ada.", contexts=(Chunk(id="c", text="Ada."),))
    with pytest.raises(ValueError, match=r"^samples\[1\]: field 'id': duplicate id 'q1' \(first at samples\[0\]"):
        ragcourt.evaluate([sample, sample], Precomputed(), home=tmp_path)


def app_retrieving(documents: list[Document]):
    retriever = RunnableLambda(lambda question: documents).with_config(run_name="retriever")
    return RunnableParallel(context=retriever, question=RunnablePassthrough()) | RunnableLambda(
        lambda x: {"answer": "Archer1.", "context": x["context"]})


def failures(home: Path) -> list[str]:
    with RecordStore(home / "store.sqlite") as store:
        return [d.error or "" for d in store.get_diagnostics("r") if d.status is SampleStatus.FAILED]


def test_the_langchain_callback_refuses_what_the_loader_refuses_in_its_words(tmp_path: Path) -> None:
    duplicate = [Document(page_content=c["text"], metadata={"id": c["id"]}) for c in DUPLICATE_CHUNKS]
    control = [Document(id=c["id"], page_content=c["text"]) for c in CONTROL_CHUNK]
    home = tmp_path / "home"
    with LiveEvaluator(home=home, run_id="r", sample_rate=1.0) as live:
        for documents in (duplicate, control):
            assert app_retrieving(documents).invoke("Who designed bridge 1?", config={"callbacks": [live.handler]})[
                "answer"] == "Archer1."  # the app is never touched
        assert live.flush(timeout=60)
    counts = live.counts()
    assert (counts.failed, counts.evaluated, counts.handler_errors) == (2, 0, 0)
    assert sorted(failures(home)) == sorted([
        f"ValueError: refused: {loader_words(tmp_path, contexts=DUPLICATE_CHUNKS)}",
        f"ValueError: refused: {loader_words(tmp_path, contexts=CONTROL_CHUNK)}"])


def test_the_live_handler_refuses_what_the_loader_refuses_in_its_words(tmp_path: Path) -> None:
    duplicate = [Document(id=c["id"], page_content=c["text"]) for c in DUPLICATE_CHUNKS]
    home = tmp_path / "home"
    with LiveEvaluator(home=home, run_id="r", worker="thread") as live:
        with pytest.raises(ValueError) as caught:
            live.submit("Who designed bridge 1?", duplicate[:1], "Archer1.", request_id="q\nq2")
        assert str(caught.value) == "refused: " + loader_words(tmp_path, id="q\nq2")
        assert live.submit("Who designed bridge 1?", duplicate, "Archer1.", request_id="q1")
        assert live.flush(timeout=60)
    assert failures(home) == [f"ValueError: refused: {loader_words(tmp_path, contexts=DUPLICATE_CHUNKS)}"]
    assert (live.counts().requests, live.counts().failed) == (1, 1)
