"""Loaders: every bad input gives a DatasetError at the right file, line and field."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import pickle
import tempfile
from pathlib import Path

import pytest
from fixtures import FIXTURES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict

from ragcourt.data.formats import load_dataset
from ragcourt.data.loaders import (
    BundledDataset,
    DatasetError,
    DatasetErrors,
    ErrorPolicy,
    FieldLimits,
    bundled,
    label_from_human_score,
    load_corpus,
    load_corpus_file,
    load_hotpotqa,
    load_ragchecker_pairs,
    load_samples,
    paragraph_id,
    read_jsonl_models,
)
from ragcourt.schema import Label

DATA = FIXTURES
BAD = DATA / "bad"


# --------------------------------------------------------------------------- the error itself


def test_error_message_names_file_line_and_field() -> None:
    assert str(DatasetError("a.jsonl", "is missing", line=3, field="question")) == (
        "a.jsonl:3: field 'question': is missing"
    )
    assert str(DatasetError("a.jsonl", "not valid JSON", line=3)) == "a.jsonl:3: not valid JSON"
    assert str(DatasetError("a.jsonl", "file is empty")) == "a.jsonl: file is empty"
    error = DatasetError("a.csv", "bad", line=2, field="id")
    assert isinstance(error, ValueError)
    assert (error.file, error.line, error.field, error.message) == ("a.csv", 2, "id", "bad")
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.file, copy.line, copy.field, copy.message) == ("a.csv", 2, "id", "bad")


# --------------------------------------------------------------------------- bad inputs

BAD_CASES = [
    # file, line, field, part of the message
    ("empty.jsonl", None, None, "file is empty"),
    ("blank_lines.jsonl", None, None, "file is empty"),
    ("not_json.jsonl", 2, None, "not valid JSON: Expecting ',' delimiter (column 39)"),
    ("not_object.jsonl", 3, None, "expected a JSON object, got list"),
    ("missing_question.jsonl", 2, "question", "is missing"),
    ("empty_question.jsonl", 1, "question", "is empty"),
    ("question_number.jsonl", 1, "question", "must be a string, got number"),
    ("question_list.jsonl", 1, "question", "must be a string, got list"),
    ("gold_answers_string.jsonl", 1, "gold_answers", "must be a list of strings, got string"),
    ("gold_answers_item.jsonl", 1, "gold_answers[1]", "must be a string, got number"),
    ("missing_id.jsonl", 1, "id", "is missing"),
    ("duplicate_ids.jsonl", 4, "id", "duplicate id 'a' (first on line 1, again on line 4)"),
    ("invalid_utf8.jsonl", 3, None, "invalid UTF-8 (byte 0xe9 at column 29)"),
    ("nul_byte.jsonl", 2, None, "NUL byte at column 27"),
    ("lone_surrogate.jsonl", 1, "question", "lone surrogate"),
    ("two_spellings.jsonl", 1, "query", "repeats 'question'"),
    ("duplicate_key.jsonl", 1, "question", "key appears twice"),
    ("context_without_text.jsonl", 1, "contexts[1].text", "is missing"),
    ("syntax.json", 4, None, "not valid JSON: Expecting property name enclosed in double quotes (column 20)"),
    ("element_not_object.json", 5, None, "expected a JSON object, got string"),
    ("missing_question.json", 3, "question", "is missing"),
    ("not_a_list.json", None, None, "expected a JSON list of samples"),
    ("invalid_utf8.json", 3, None, "invalid UTF-8 (byte 0xc3 at column 17)"),
    ("missing_question.csv", 3, "question", "is missing"),
    ("wrong_cells.csv", 3, None, "row has 3 cells, the header has 2"),
    ("bad_json_cell.csv", 2, "gold_answers", "not valid JSON"),
    ("duplicate_column.csv", 1, "id", "header names column 'id' twice"),
    ("header_only.csv", None, None, "file holds no samples"),
    ("nul_byte.csv", 3, None, "NUL byte at column 4"),
    ("samples.txt", None, None, "unsupported file type '.txt'"),
]


@pytest.mark.parametrize(("name", "line", "field", "message"), BAD_CASES, ids=[c[0] for c in BAD_CASES])
def test_bad_input_is_located(name: str, line: int | None, field: str | None, message: str) -> None:
    path = BAD / name
    with pytest.raises(DatasetError) as caught:
        load_samples(path)
    error = caught.value
    assert (error.file, error.line, error.field) == (str(path), line, field)
    assert message in error.message
    where = f"{path}:{line}" if line is not None else str(path)
    assert str(error).startswith(f"{where}: ")


def test_missing_file_is_a_dataset_error(tmp_path: Path) -> None:
    with pytest.raises(DatasetError) as caught:
        load_samples(tmp_path / "absent.jsonl")
    assert caught.value.line is None
    assert "cannot read file" in caught.value.message


def test_skip_policy_collects_row_errors_and_keeps_good_rows() -> None:
    result = load_samples(BAD / "duplicate_ids.jsonl", on_error=ErrorPolicy.SKIP)
    assert [s.id for s in result.samples] == ["a", "b", "7"]
    assert [(e.line, e.field) for e in result.errors] == [(4, "id")]

    result = load_samples(BAD / "not_object.jsonl", on_error=ErrorPolicy.SKIP)
    assert [s.id for s in result.samples] == ["a"]
    assert [(e.line, e.field) for e in result.errors] == [(3, None)]

    result = load_samples(BAD / "invalid_utf8.jsonl", on_error=ErrorPolicy.SKIP)
    assert [s.id for s in result.samples] == ["a", "b"]
    assert [e.line for e in result.errors] == [3]


def test_skip_policy_still_raises_for_whole_file_problems() -> None:
    with pytest.raises(DatasetError) as caught:
        load_samples(BAD / "syntax.json", on_error=ErrorPolicy.SKIP)
    assert caught.value.line == 4


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str


class _Toy(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tags: tuple[str, ...]
    parts: list[_Part] = []
    label: Label | None = None


def test_jsonl_models_report_every_pydantic_error_in_the_loaders_words(tmp_path: Path) -> None:
    path = tmp_path / "toy.jsonl"
    path.write_text("\n".join([
        '{"tags": ["a"], "label": "Tie", "parts": [{"name": "p"}]}',
        '{"colour": "red"}',
        '{"tags": "a", "parts": {"name": "p"}, "label": ["yes"]}',
        '{"tags": ["a", 3], "parts": [{"name": "p"}, {}], "label": "maybe"}',
    ]) + "\n")
    with pytest.raises(DatasetErrors) as caught:
        read_jsonl_models(path, _Toy)
    assert [str(error).removeprefix(f"{path}:") for error in caught.value.errors] == [
        "2: field 'tags': is missing",
        "2: field 'colour': unknown field (allowed: tags, parts, label)",
        "3: field 'tags': must be a list of strings, got string",
        "3: field 'parts': must be a list, got object",
        "3: field 'label': must be one of yes, no, A, B, Tie, got list",
        "4: field 'tags[1]': must be a string, got number",
        "4: field 'parts[1].name': is missing",
        "4: field 'label': must be one of yes, no, A, B, Tie, got 'maybe'",
    ]
    assert caught.value.n_lines == 3 and str(caught.value) == "\n".join(map(str, caught.value.errors))
    assert str(pickle.loads(pickle.dumps(caught.value))) == str(caught.value)
    path.write_text('{"tags": ["a"]}\n\n{"tags": []}\n')
    assert read_jsonl_models(path, _Toy) == [(1, _Toy(tags=("a",))), (3, _Toy(tags=()))]


# --------------------------------------------------------------------------- good inputs


def test_jsonl_fields_aliases_and_metadata() -> None:
    result = load_samples(DATA / "samples.jsonl")
    assert result.errors == ()
    first, second, third = result.samples
    assert first.id == "q1"
    assert first.gold_answers == ("William Shakespeare", "Shakespeare")
    assert first.reference_answer == "William Shakespeare wrote Hamlet."
    assert first.answer == "Shakespeare"
    assert first.metadata == {"topic": "literature"}  # unknown top-level field
    plain, rich = first.contexts or ()
    assert (plain.rank, plain.text, plain.title) == (1, "Hamlet is a tragedy by William Shakespeare.", None)
    assert plain.id == paragraph_id(None, "Hamlet is a tragedy by William Shakespeare.")
    assert (rich.id, rich.title, rich.score, rich.rank) == ("d7", "Hamlet", 0.5, 2)
    # question_id (an integer), query and gt_answer aliases; Chinese text unchanged
    assert (second.id, second.question, second.reference_answer) == ("2", "北京是哪个国家的首都？", "中国")
    assert second.gold_titles == ("北京",)
    assert second.gold_documents[0].text == "北京是中华人民共和国的首都。"
    assert second.gold_documents[0].id == paragraph_id("北京", "北京是中华人民共和国的首都。")
    assert second.contexts is None
    assert second.metadata == {"lang": "zh"}
    assert (third.id, third.question, third.answer) == ("q3", "What is 2+2?", "4")


def test_json_object_with_samples_list() -> None:
    samples = load_samples(DATA / "samples.json").samples
    assert [(s.id, s.question, s.gold_answers) for s in samples] == [
        ("a", "First?", ()),
        ("b", "Second?", ("yes",)),
    ]


def test_csv_lists_as_json_or_pipes_and_multiline_cells() -> None:
    samples = load_samples(DATA / "samples.csv").samples
    assert [s.id for s in samples] == ["c1", "c2", "c3"]
    c1, c2, c3 = samples
    assert c1.question == "Which city, in France?"
    assert c1.gold_answers == ("Paris",)
    assert c1.gold_titles == ("Paris", "Île-de-France")
    assert c1.metadata == {"extra": "x"}
    assert c2.question == "A question\nover two lines"
    assert c2.gold_answers == ("Lyon", "Rhône")
    assert c2.contexts is not None and (c2.contexts[0].title, c2.contexts[0].text) == (
        "Lyon",
        "Lyon is in France.",
    )
    assert (c3.gold_answers, c3.contexts, c3.metadata) == ((), None, {})


def test_csv_row_after_a_multiline_cell_has_its_own_line(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    path.write_text('id,question\na,"one\ntwo\nthree"\nb,\n', encoding="utf-8")
    with pytest.raises(DatasetError) as caught:
        load_samples(path)
    assert (caught.value.line, caught.value.field) == (5, "question")


def test_very_large_field_is_accepted(tmp_path: Path) -> None:
    big = "word " * 400_000  # 2 MB, far above csv's default 128 kB field limit
    jsonl = tmp_path / "big.jsonl"
    jsonl.write_text(
        json.dumps({"id": "x", "question": "Q?", "reference_answer": big}) + "\n", encoding="utf-8"
    )
    assert load_samples(jsonl).samples[0].reference_answer == big
    table = tmp_path / "big.csv"
    table.write_text(f"id,question,reference_answer\nx,Q?,{big}\n", encoding="utf-8")
    limit_before = csv.field_size_limit()
    assert load_samples(table).samples[0].reference_answer == big
    assert csv.field_size_limit() == limit_before  # the process-wide limit is restored


def test_deeply_nested_metadata_is_accepted_and_absurd_nesting_is_an_error(tmp_path: Path) -> None:
    nested: object = "leaf"
    for _ in range(200):
        nested = {"k": [nested]}
    path = tmp_path / "nested.jsonl"
    path.write_text(json.dumps({"id": "x", "question": "Q?", "metadata": {"junk": nested}}) + "\n")
    assert load_samples(path).samples[0].metadata == {"junk": nested}

    path.write_text('{"id": "x", "question": "Q?", "junk": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    with pytest.raises(DatasetError) as caught:
        load_samples(path)
    assert (caught.value.line, caught.value.message) == (1, "not valid JSON: nested too deeply to parse")


def test_byte_order_mark_and_crlf_are_tolerated(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"id": "a", "question": "Q?"}\r\n{"id": "b", "question": "R?"}\r\n')
    assert [s.id for s in load_samples(path).samples] == ["a", "b"]


# --------------------------------------------------------------------------- fuzz: only DatasetError escapes

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "id",
                    "question",
                    "query",
                    "gold_answers",
                    "contexts",
                    "gold_documents",
                    "metadata",
                    "answer",
                    "reference_answer",
                    "question_id",
                    "text",
                    "title",
                    "score",
                    "samples",
                    "x",
                ]
            ),
            children,
            max_size=5,
        )
    ),
    max_leaves=12,
)
SUFFIXES = (".jsonl", ".json", ".csv")


def _load_or_dataset_error(directory: Path, suffix: str, data: bytes) -> None:
    path = directory / f"fuzz{suffix}"
    path.write_bytes(data)
    for policy in ErrorPolicy:
        try:
            result = load_samples(path, on_error=policy)
        except DatasetError:
            continue
        for sample in result.samples:
            assert sample.content_hash  # every accepted sample survives hashing (valid UTF-8, JSON-able)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=300) | st.text(max_size=300).map(lambda t: t.encode("utf-8")))
def test_fuzz_raw_bytes_only_raise_dataset_error(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as directory:
        for suffix in SUFFIXES:
            _load_or_dataset_error(Path(directory), suffix, data)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(json_values, max_size=4))
def test_fuzz_json_shaped_rows_only_raise_dataset_error(rows: list[object]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        jsonl = "\n".join(json.dumps(row) for row in rows).encode("utf-8")
        _load_or_dataset_error(Path(directory), ".jsonl", jsonl)
        _load_or_dataset_error(Path(directory), ".json", json.dumps(rows, indent=1).encode("utf-8"))
        _load_or_dataset_error(Path(directory), ".json", json.dumps({"samples": rows}).encode("utf-8"))
        header = "id,question,gold_answers,contexts,metadata\n"
        cells = "\n".join(",".join(json.dumps(json.dumps(row)) for _ in range(5)) for row in rows)
        _load_or_dataset_error(Path(directory), ".csv", (header + cells).encode("utf-8"))


# --------------------------------------------------------------------------- HotpotQA


def test_paragraph_id_is_a_stable_content_hash() -> None:
    blob = json.dumps(["paragraph", "T", "P"], separators=(",", ":"))
    assert paragraph_id("T", "P") == hashlib.sha256(blob.encode()).hexdigest()[:16]
    assert paragraph_id("T", "P") != paragraph_id("T", "P ")


def test_hotpotqa_bundled_file() -> None:
    path = bundled(BundledDataset.HOTPOTQA_DEV_100)
    hotpot = load_hotpotqa(path)
    assert len(hotpot.samples) == 100
    assert hotpot.errors == ()
    for sample in hotpot.samples:
        assert len(sample.gold_titles) == 2
        assert len(sample.gold_documents) == 2
        assert tuple(d.title for d in sample.gold_documents) == sample.gold_titles
        assert sample.reference_answer == sample.gold_answers[0]
        assert sample.metadata == {"source": "hotpotqa"}

    first = hotpot.samples[0]
    assert first.id == "5a8c4c625542995e66a475a1"
    assert first.question.startswith("Which airplane was this Major test-flying")
    assert first.gold_answers == ("B-17 Flying Fortress bomber",)
    assert first.gold_titles == ("514th Flight Test Squadron", "Hill Air Force Base")
    assert first.gold_documents[0].text.startswith("The 514th Flight Test Squadron (514 FLTS)")

    # the corpus is every paragraph of every question, deduplicated by (title, text)
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    distinct = {(c["title"], c["paragraph_text"]) for row in rows for c in row["contexts"]}
    print(f"HotpotQA corpus: {len(hotpot.corpus)} distinct paragraphs of {10 * len(rows)}")
    assert len(hotpot.corpus) == len(distinct) == 995
    assert {c.id for c in hotpot.corpus} == {paragraph_id(t, p) for t, p in distinct}
    assert all(c.source == "hotpotqa" for c in hotpot.corpus)
    corpus_ids = {c.id for c in hotpot.corpus}
    assert all(d.id in corpus_ids for s in hotpot.samples for d in s.gold_documents)


def test_hotpotqa_errors_are_located_and_skipped_rows_leave_no_paragraphs() -> None:
    with pytest.raises(DatasetError) as caught:
        load_hotpotqa(BAD / "hotpot_bad.jsonl")
    assert (caught.value.line, caught.value.field) == (2, "contexts[0].is_supporting")
    hotpot = load_hotpotqa(BAD / "hotpot_bad.jsonl", on_error=ErrorPolicy.SKIP)
    assert [s.id for s in hotpot.samples] == ["h1"]
    assert [(c.title, c.text) for c in hotpot.corpus] == [("T", "P")]
    assert [e.line for e in hotpot.errors] == [2]


# --------------------------------------------------------------------------- RAGChecker pairs


def test_human_score_sign_maps_to_pairwise_label() -> None:
    assert [label_from_human_score(s) for s in (-2, -1, 0, 1, 2)] == [
        Label.A,
        Label.A,
        Label.TIE,
        Label.B,
        Label.B,
    ]


def test_ragchecker_pairs_grouped_per_instance() -> None:
    path = bundled(BundledDataset.RAGCHECKER_PAIRS)
    pairs = load_ragchecker_pairs(path)
    assert len(pairs) == 40
    assert all(len(p.annotations) == 2 for p in pairs)
    assert len({p.instance_id for p in pairs}) == 40

    first = pairs[0]
    assert (first.instance_id, first.dataset, first.query_id) == (0, "kiwi", "41")
    assert first.query == "How are pre-training corpora constructed for language models?"
    assert (first.model1.model_name, first.model2.model_name) == ("bm25_llama3_8b", "e5_mistral_gpt_4")
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[1] == " {" and lines[21] == " {"  # the two records of instance 0 start on lines 2 and 22
    assert [(a.line, a.correctness, a.completeness, a.overall) for a in first.annotations] == [
        (2, 1, 1, 1),
        (22, 1, 1, 1),
    ]
    assert [a.overall_label for a in first.annotations] == [Label.B, Label.B]
    second = pairs[1]
    assert second.instance_id == 3
    assert [(a.correctness, a.completeness, a.overall) for a in second.annotations] == [
        (0, 0, 0),
        (0, -1, -1),
    ]
    assert [a.overall_label for a in second.annotations] == [Label.TIE, Label.A]

    sample = first.to_sample()
    assert (sample.id, sample.question, sample.reference_answer) == (
        "ragchecker-0",
        first.query,
        first.gt_answer,
    )
    assert sample.metadata == {"source": "ragchecker", "dataset": "kiwi", "query_id": "41", "instance_id": 0}


@pytest.mark.parametrize(
    ("name", "line", "field", "message"),
    [
        ("ragchecker_bad_label.json", 2, "overall_label", "must be an integer from -2 to 2, got 3"),
        ("ragchecker_mismatch.json", 3, "model1", "differs from the record of instance 1 on line 2"),
    ],
)
def test_ragchecker_errors_are_located(name: str, line: int, field: str, message: str) -> None:
    with pytest.raises(DatasetError) as caught:
        load_ragchecker_pairs(BAD / name)
    assert (caught.value.line, caught.value.field, caught.value.message) == (line, field, message)


def test_bundled_paths_point_into_the_package() -> None:
    for name in BundledDataset:
        path = bundled(name)
        assert path.is_file()
        assert path.parent.parent.name == "data"
        assert path.as_posix().endswith(name.value)


# --------------------------------------------------------------------------- inputs that got in (issue 20, item 4)

ESCAPED_NUL_CASES = [
    ('{"id": "a", "question": "Who?\\u0000", "answer": "x"}', "question"),
    ('{"id": "a", "question": "Who?", "contexts": ["ok", {"id": "c", "text": "bad\\u0000"}], "answer": "x"}',
     "contexts[1].text"),
    ('{"id": "a", "question": "Who?", "answer": "x", "metadata": {"note": "\\u0000"}}', "metadata.note"),
]


@pytest.mark.parametrize(("row", "field"), ESCAPED_NUL_CASES, ids=["question", "context", "metadata"])
def test_an_escaped_nul_is_refused_like_a_raw_nul_byte(tmp_path: Path, row: str, field: str) -> None:
    path = tmp_path / "nul.jsonl"
    path.write_text('{"id": "ok", "question": "Fine?"}\n' + row + "\n", encoding="utf-8")
    with pytest.raises(DatasetError) as caught:
        load_samples(path)
    assert (caught.value.line, caught.value.field) == (2, field)
    assert "contains a NUL character" in caught.value.message


@pytest.mark.parametrize("question", ["\u200b\u200b", "\u200d \ufeff\u2060", "\u200e\t"])
def test_a_question_of_only_invisible_characters_is_refused_like_a_blank_one(tmp_path: Path, question: str) -> None:
    path = tmp_path / "invisible.jsonl"
    path.write_text(json.dumps({"id": "a", "question": question}) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError) as caught:
        load_samples(path)
    assert (caught.value.line, caught.value.field) == (1, "question")
    assert caught.value.message.startswith("is empty")
    visible = tmp_path / "visible.jsonl"  # a zero-width space inside a real question is left alone
    visible.write_text(json.dumps({"id": "a", "question": "Who\u200b wrote it?"}) + "\n", encoding="utf-8")
    assert load_samples(visible).samples[0].question == "Who\u200b wrote it?"


@pytest.mark.timeout(30)
def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "data.jsonl"
    os.mkfifo(fifo)
    for load in (load_samples, load_dataset, load_corpus_file, load_corpus):
        with pytest.raises(DatasetError) as caught:
            load(fifo)
        assert caught.value.file == str(fifo) and "is not a regular file" in caught.value.message
    with pytest.raises(DatasetError, match="is not a regular file"):
        load_dataset(tmp_path)  # a directory given as the dataset


def test_a_text_past_its_field_limit_is_refused_with_its_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    rows = [{"id": "a", "question": "Short?"}, {"id": "b", "question": "Q" * 20_001},
            {"id": "c", "question": "Fine?", "contexts": ["ok", "x" * 101]}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(DatasetError) as caught:
        load_samples(path)
    assert (caught.value.line, caught.value.field) == (2, "question")
    assert caught.value.message == "holds 20,001 characters, more than the limit of 20,000"
    collected = load_samples(path, on_error=ErrorPolicy.SKIP, limits=FieldLimits(chunk=100))
    assert [s.id for s in collected.samples] == ["a"]
    assert [(e.line, e.field) for e in collected.errors] == [(2, "question"), (3, "contexts[1].text")]
    assert [s.id for s in load_samples(path, limits=FieldLimits(question=30_000)).samples] == ["a", "b", "c"]


# --------------------------------------------------------------------------- second round of probes (issue 36)


def write_rows(path: Path, *rows: object) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize(("contexts", "field", "says"), [
    ([{"id": "c", "text": "Cherries are red."}, {"id": "c", "text": "Archer1 designed bridge 1."}],
     "contexts[1].id", "repeats the id 'c' of contexts[0]"),
    (["Cherries are red.", "Bananas are yellow.", "Cherries are red."], "contexts[2]",
     "repeats the text (and title) of contexts[0]"),
])
def test_a_chunk_id_given_twice_in_one_sample_is_refused_with_its_line_and_field(
        tmp_path: Path, contexts: list[object], field: str, says: str) -> None:
    # one id for two chunks made one chunk node: C-Prec 0.50 and nDCG 1.0 where two ids give 0.25 and 0.63
    path = write_rows(tmp_path / "dup.jsonl", {"id": "q0", "question": "Fine?"},
                      {"id": "q1", "question": "Who designed bridge 1?", "contexts": contexts})
    with pytest.raises(DatasetError) as caught:
        load_samples(path)
    assert (caught.value.file, caught.value.line, caught.value.field) == (str(path), 2, field)
    assert caught.value.message.startswith(says)
    gold = write_rows(tmp_path / "gold.jsonl", {"id": "q1", "question": "Who?", "gold_documents": contexts})
    with pytest.raises(DatasetError) as caught:
        load_samples(gold)
    assert caught.value.field == field.replace("contexts", "gold_documents")
    distinct = write_rows(tmp_path / "ok.jsonl", {"id": "q1", "question": "Who?", "contexts": [
        {"id": "c1", "text": "Cherries are red."}, {"id": "c2", "text": "Cherries are red."}]})
    assert [c.id for c in load_samples(distinct).samples[0].contexts or ()] == ["c1", "c2"]


@pytest.mark.parametrize("invisible", ["\u200b\u200b\u200e", "  ", "\ufeff\u2060\t"])
def test_optional_text_of_only_invisible_characters_is_empty_so_its_figures_are_na(tmp_path: Path,
                                                                                   invisible: str) -> None:
    path = write_rows(tmp_path / "invisible.jsonl", {
        "id": "q1", "question": "Who?", "reference_answer": invisible, "answer": invisible,
        "gold_answers": [invisible, "Paris"], "gold_titles": [invisible]})
    (sample,) = load_samples(path).samples
    assert (sample.reference_answer, sample.answer) == ("", "")
    assert (sample.gold_answers, sample.gold_titles) == (("Paris",), ())
    only = write_rows(tmp_path / "only.jsonl", {"id": "q1", "question": "Who?", "gold_answers": [invisible]})
    assert load_samples(only).samples[0].gold_answers == ()  # no gold at all: soft correctness n/a, not 0
    kept = write_rows(tmp_path / "kept.jsonl", {"id": "q1", "question": "Who?", "answer": "Pa\u200bris"})
    assert load_samples(kept).samples[0].answer == "Pa\u200bris"  # a mark inside visible text is left alone


@pytest.mark.parametrize(("row", "field"), [
    ('{"id": "q1", "question": "Who?", "metadata": {"x": NaN}}', "metadata.x"),
    ('{"id": "q1", "question": "Who?", "metadata": {"deep": [1, Infinity]}}', "metadata.deep[1]"),
    ('{"id": "q1", "question": "Who?", "score": -Infinity}', "score"),
    ('{"id": "q1", "question": "Who?", "contexts": [{"text": "a", "score": NaN}]}', "contexts[0].score"),
])
def test_nan_and_infinity_are_refused_with_their_line_and_field(tmp_path: Path, row: str, field: str) -> None:
    path = tmp_path / "nan.jsonl"
    path.write_text('{"id": "q0", "question": "Fine?"}\n' + row + "\n", encoding="utf-8")
    with pytest.raises(DatasetError) as caught:
        load_samples(path)
    assert (caught.value.line, caught.value.field) == (2, field)
    assert "finite number" in caught.value.message


@pytest.mark.parametrize("sample_id", ["q1\nq2", "q1\x1b[31mred", "tab\tid", "bell\x07", "c1\x85", "q\u2028x"])
def test_an_id_with_a_control_character_is_refused(tmp_path: Path, sample_id: str) -> None:
    path = write_rows(tmp_path / "ids.jsonl", {"id": "ok", "question": "Fine?"},
                      {"id": sample_id, "question": "Who?"})
    with pytest.raises(DatasetError) as caught:
        load_samples(path)
    assert (caught.value.line, caught.value.field) == (2, "id")
    assert "ids must be printable text" in caught.value.message
    printable = write_rows(tmp_path / "unicode.jsonl", {"id": "问题-1 ✓", "question": "Who?"})
    assert load_samples(printable).samples[0].id == "问题-1 ✓"


def test_an_id_of_only_invisible_characters_is_refused(tmp_path: Path) -> None:
    path = write_rows(tmp_path / "ids.jsonl", {"id": "\u200b\u200d", "question": "Who?"})
    with pytest.raises(DatasetError, match="only invisible characters") as caught:
        load_samples(path)
    assert caught.value.field == "id"


def test_an_unknown_top_level_field_is_kept_in_metadata_and_named_once_with_the_nearest_field(
        tmp_path: Path) -> None:
    path = write_rows(tmp_path / "typo.jsonl", {"id": "q1", "question": "Who?"},
                      {"id": "q2", "question": "Who?", "refrence_answer": "Ada", "level": "hard"},
                      {"id": "q3", "question": "Who?", "refrence_answer": "Bob", "metadata": {"k": 1}})
    result = load_samples(path)
    assert [s.metadata for s in result.samples] == [{}, {"refrence_answer": "Ada", "level": "hard"},
                                                    {"k": 1, "refrence_answer": "Bob"}]
    assert [s.reference_answer for s in result.samples] == [None, None, None]
    typo, level = result.warnings
    assert (typo.file, typo.line, typo.field) == (str(path), 2, "refrence_answer")
    assert "kept in metadata (on 2 lines); did you mean 'reference_answer'?" in typo.message
    assert (level.line, level.field) == (2, "level") and "did you mean" not in level.message
    with pytest.raises(DatasetError) as caught:
        load_samples(path, strict=True)
    assert (caught.value.line, caught.value.field) == (2, "refrence_answer")
    assert "did you mean 'reference_answer'?" in caught.value.message
    inside = write_rows(tmp_path / "inside.jsonl", {"id": "q1", "question": "Who?", "metadata": {"level": "hard"},
                                                    "gt_answer": "Ada"})
    assert load_samples(inside, strict=True).warnings == ()  # metadata and accepted spellings are known fields



# --------------------------------------------------------------------------- a missing field and its lookalike


@pytest.mark.parametrize(("name", "content", "says"), [
    ("typo.csv", "id,questoin\nq1,Who wrote Hamlet?\n",
     "field 'question': is missing (also accepted: 'question_text', 'query'); column 'questoin' looks like "
     "'question'"),
    ("typo.jsonl", '{"id": "q1", "Question ": "Who wrote Hamlet?"}\n',
     "field 'question': is missing (also accepted: 'question_text', 'query'); key 'Question ' looks like "
     "'question'"),
    ("typo_id.csv", "idd,question\nq1,Who wrote Hamlet?\n",
     "field 'id': is missing; every sample needs an 'id' (or 'question_id'); column 'idd' looks like 'id'"),
])
def test_a_missing_required_field_names_the_column_that_looks_like_its_misspelling(
        tmp_path: Path, name: str, content: str, says: str) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(DatasetError) as caught:
        load_samples(path)
    line = 2 if name.endswith(".csv") else 1  # a CSV file's first row is its header
    assert str(caught.value) == f"{path}:{line}: {says}"
    unlike = tmp_path / "unlike.csv"  # no lookalike: the message as before, without a guess
    unlike.write_text("id,level\nq1,hard\n", encoding="utf-8")
    with pytest.raises(DatasetError) as caught:
        load_samples(unlike)
    assert caught.value.message == "is missing (also accepted: 'question_text', 'query')"
