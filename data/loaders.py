"""Loading evaluation data: user files (JSONL / JSON / CSV), HotpotQA (IRCoT format), RAGChecker pairs, corpora,
and the bundled sample data.

Every problem a loader finds is a `DatasetError` naming the file, the 1-based line and the field, so a
person can open the file at that line and fix it. Row-level problems can be collected instead of raised
(`ErrorPolicy.SKIP`); file-level problems (unreadable, empty, not valid JSON as a whole, bad CSV header)
always raise, because no row can be trusted after them.

The reading itself is data.reading (one reader, whatever the format) and a module per format (data.read_jsonl,
read_json, read_csv, read_parquet, read_hf); the rules of a row are data.rows. The names below are theirs too, so
`ragcourt.data.loaders` keeps naming everything a dataset's reader needs.

What is accepted on purpose:
- very large fields (a whole book in `reference_answer`) up to FieldLimits; the CSV reader's field size limit is
  lifted for the duration of a load;
- arbitrary nested JSON in `metadata` (it is the caller's data); nesting so deep that the JSON parser
  itself gives up (about 1000 levels) is reported as an error rather than crashing;
- any Unicode text (Chinese, emoji, right-to-left); lone surrogates (`"\\ud800"`) are rejected because
  they cannot be encoded as UTF-8 and would break every store downstream.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import partial
from importlib import resources
from pathlib import Path
from typing import Any

from ragcourt.data.errors import DatasetError, DatasetErrors, ErrorPolicy, RowError
from ragcourt.data.read_csv import CSV_LIST_SEPARATOR, csv_rows, csv_value
from ragcourt.data.read_json import json_rows
from ragcourt.data.read_jsonl import jsonl_rows
from ragcourt.data.read_models import read_json_array_models, read_jsonl_models
from ragcourt.data.reading import LoadResult, RowChecker, SampleStream, StreamCheck, collect_rows
from ragcourt.data.rows import (
    DEFAULT_LIMITS,
    LIST_FIELDS,
    SAMPLE_FIELDS,
    FieldLimits,
    nearest_field,
    record_id,
    refuse_bad_text,
    sample_of_row,
    string_list,
    text_value,
)
from ragcourt.data.text_input import (
    decode,
    json_array_items,
    json_document,
    json_value,
    jsonl_lines,
    jsonl_value,
    read_bytes,
    refuse_special_file,
    skip_whitespace,
    type_name,
)
from ragcourt.schema import Chunk, Label, Sample, content_id
from ragcourt.schema.inputs import shows_something
from ragcourt.schema.records import paragraph_id

__all__ = [  # what this module names for the readers around it, beside its own loaders
    "CSV_LIST_SEPARATOR", "DEFAULT_LIMITS", "LIST_FIELDS", "SAMPLE_FIELDS", "DatasetError", "DatasetErrors",
    "ErrorPolicy", "FieldLimits", "LoadResult", "RowError", "SampleStream", "StreamCheck", "collect_rows",
    "csv_value", "nearest_field", "paragraph_id", "read_json_array_models", "read_jsonl_models", "sample_of_row",
    "BundledDataset", "HotpotQA", "HumanAspect", "RagCheckerPair", "bundled", "file_stream", "hotpotqa_sample",
    "hotpotqa_stream", "is_hotpotqa", "label_from_human_score", "load_corpus", "load_corpus_file",
    "load_hotpotqa", "load_ragchecker_pairs", "load_samples",
]

HOTPOTQA_SOURCE = "hotpotqa"
RAGCHECKER_SOURCE = "ragchecker"


# --------------------------------------------------------------------------- corpora and sample files


def _corpus_chunk(path: Path, row: Any) -> Chunk:
    if not isinstance(row, dict):
        raise RowError(None, f"expected a JSON object with 'text', got {type_name(row)}")
    refuse_bad_text(row)
    text = text_value("text", row.get("text"), required=True)
    assert text is not None
    chunk_id = content_id(text) if row.get("id") is None else record_id("id", row["id"])
    return Chunk(id=chunk_id, text=text, title=text_value("title", row.get("title")), source=str(path))


def load_corpus(path: Path) -> tuple[Chunk, ...]:
    """A corpus for `ragcourt index`: JSONL, one {id?, title?, text} object per line (other keys ignored).

    id defaults to a content hash of the text. Errors name the file, the line and the field, like the
    sample loaders': bad UTF-8, NUL bytes, bad JSON, a missing, empty or non-string text, duplicate ids.
    """
    path = Path(path)
    chunks: list[Chunk] = []
    id_lines: dict[str, int] = {}
    for number, raw in jsonl_lines(path):
        try:
            chunk = _corpus_chunk(path, jsonl_value(raw))
        except RowError as exc:
            raise DatasetError(path, exc.message, line=number, field=exc.field) from None
        if chunk.id in id_lines:
            raise DatasetError(path, f"duplicate id '{chunk.id}' (first on line {id_lines[chunk.id]}, again on "
                               f"line {number})", line=number, field="id")
        id_lines[chunk.id] = number
        chunks.append(chunk)
    if not chunks:
        raise DatasetError(path, "file holds no chunks")
    return tuple(chunks)



def load_samples(path: Path, *, on_error: ErrorPolicy = ErrorPolicy.RAISE,
                 limits: FieldLimits = DEFAULT_LIMITS,
                 to_sample: Callable[[dict[str, Any]], Sample] = sample_of_row, strict: bool = False) -> LoadResult:
    """Samples from a .jsonl, .json or .csv file (see the module docstring and README for the fields).

    Fields: id (or question_id; string or integer), question (or question_text, query), reference_answer
    (or gt_answer, answer_reference), gold_answers, gold_titles (lists of strings), gold_documents and
    contexts (lists of strings or {id?, title?, text, score?} objects; contexts are the precomputed
    retrieval, ranked in order), answer (or response: a precomputed answer), metadata (object), history (the
    conversation before the question, oldest first: a list of {role: user|assistant, content} turns; in CSV a
    JSON cell).
    Unknown top-level fields go into metadata, each named once in LoadResult.warnings with its first line and
    the field it most likely misspells; `strict` refuses them instead. Texts longer than `limits` are refused
    (FieldLimits).
    `to_sample` turns one parsed row into a Sample (raising RowError): data.formats passes one that maps a
    user's column names and the RAGAS / LangSmith shapes first.
    """
    return file_stream(path, on_error=on_error, limits=limits, to_sample=to_sample, strict=strict).load()


def file_stream(path: Path, *, on_error: ErrorPolicy = ErrorPolicy.RAISE, limits: FieldLimits = DEFAULT_LIMITS,
                to_sample: Callable[[dict[str, Any]], Sample] = sample_of_row, strict: bool = False,
                limit: int | None = None) -> SampleStream:
    """The samples of a .jsonl, .json or .csv file as load_samples reads them, as a SampleStream: validated in one
    pass and read again each time it is iterated (a JSONL or CSV file is never held whole)."""
    path = Path(path)
    suffix = path.suffix.lower()
    readers = {".jsonl": jsonl_rows, ".json": json_rows, ".csv": csv_rows}
    if suffix not in readers:
        raise DatasetError(path, f"unsupported file type '{suffix}'; use .jsonl, .json or .csv")
    return SampleStream(path, partial(readers[suffix], path), key_word="column" if suffix == ".csv" else "key",
                        to_sample=to_sample, limits=limits, strict=strict, on_error=on_error, limit=limit)



# --------------------------------------------------------------------------- HotpotQA (IRCoT format)


@dataclass(frozen=True, slots=True)
class HotpotQA:
    """HotpotQA questions with their gold paragraphs, and every paragraph of every question as a corpus."""

    samples: tuple[Sample, ...]
    corpus: tuple[Chunk, ...]
    errors: tuple[DatasetError, ...] = ()


def require(row: Mapping[str, Any], field: str) -> Any:
    if field not in row or row[field] is None:
        raise RowError(field, "is missing")
    return row[field]


def _hotpot_paragraphs(contexts: Any) -> list[tuple[Chunk, bool]]:
    if not isinstance(contexts, list) or not contexts:
        raise RowError("contexts", f"must be a non-empty list of paragraphs, got {type_name(contexts)}")
    paragraphs = []
    for index, paragraph in enumerate(contexts):
        field = f"contexts[{index}]"
        if not isinstance(paragraph, dict):
            raise RowError(field, f"must be an object, got {type_name(paragraph)}")
        title = text_value(f"{field}.title", require_in(paragraph, field, "title"), required=True)
        text = text_value(f"{field}.paragraph_text", require_in(paragraph, field, "paragraph_text"))
        supporting = paragraph.get("is_supporting", False)
        if not isinstance(supporting, bool):
            raise RowError(f"{field}.is_supporting", f"must be true or false, got {type_name(supporting)}")
        assert title is not None and text is not None
        chunk = Chunk(id=paragraph_id(title, text), text=text, title=title, source=HOTPOTQA_SOURCE)
        paragraphs.append((chunk, supporting))
    return paragraphs


def require_in(obj: Mapping[str, Any], prefix: str, key: str) -> Any:
    if obj.get(key) is None:
        raise RowError(f"{prefix}.{key}", "is missing")
    return obj[key]


def _hotpot_spans(answers: Any) -> tuple[str, ...]:
    if not isinstance(answers, list) or not answers:
        raise RowError("answers_objects", f"must be a non-empty list, got {type_name(answers)}")
    spans: list[str] = []
    for index, answer in enumerate(answers):
        if not isinstance(answer, dict):
            raise RowError(f"answers_objects[{index}]", f"must be an object, got {type_name(answer)}")
        spans.extend(string_list(f"answers_objects[{index}].spans", answer.get("spans")))
    spans = [span for span in spans if shows_something(span)]  # the first that shows is the reference answer
    if not spans:
        raise RowError("answers_objects", "has no answer span")
    return tuple(spans)


def hotpotqa_record(row: dict[str, Any]) -> tuple[Sample, tuple[Chunk, ...]]:
    """One HotpotQA line as a Sample and every paragraph it gives (the corpus's part); raises RowError."""
    sample_id = record_id("question_id", require(row, "question_id"))
    question = text_value("question_text", require(row, "question_text"), required=True)
    spans = _hotpot_spans(require(row, "answers_objects"))
    paragraphs = _hotpot_paragraphs(require(row, "contexts"))
    gold = tuple(chunk for chunk, supporting in paragraphs if supporting)
    sample = Sample(
        id=sample_id,
        question=question,  # type: ignore[arg-type]
        reference_answer=spans[0],
        gold_answers=spans,
        gold_titles=tuple(dict.fromkeys(chunk.title for chunk in gold if chunk.title)),
        gold_documents=gold,
        metadata={"source": HOTPOTQA_SOURCE},
    )
    return sample, tuple(chunk for chunk, _ in paragraphs)


def hotpotqa_sample(row: dict[str, Any]) -> Sample:
    """One HotpotQA line as a Sample (see load_hotpotqa); raises RowError."""
    return hotpotqa_record(row)[0]


def hotpotqa_stream(path: Path, *, on_error: ErrorPolicy = ErrorPolicy.RAISE, limits: FieldLimits = DEFAULT_LIMITS,
                    limit: int | None = None) -> SampleStream:
    """The samples of a HotpotQA file as load_hotpotqa makes them (without the corpus), as a SampleStream."""
    return SampleStream(path, partial(jsonl_rows, Path(path)), to_sample=hotpotqa_sample, limits=limits,
                        on_error=on_error, limit=limit)


def load_hotpotqa(path: Path, *, on_error: ErrorPolicy = ErrorPolicy.RAISE,
                  limits: FieldLimits = DEFAULT_LIMITS) -> HotpotQA:
    """HotpotQA in the IRCoT processed format (one question per line; see data/README.md).

    Sample: id = question_id, question = question_text, gold_answers = every answer span,
    reference_answer = the first span, gold_titles / gold_documents = the is_supporting paragraphs,
    metadata {"source": "hotpotqa"}. Corpus: all paragraphs, deduplicated by `paragraph_id(title, text)`.
    """
    path = Path(path)
    checker = RowChecker(path, on_error, limits)
    corpus: dict[str, Chunk] = {}
    paragraphs_of_last_row: list[Chunk] = []

    def to_sample(row: dict[str, Any]) -> Sample:
        sample, paragraphs = hotpotqa_record(row)
        paragraphs_of_last_row[:] = paragraphs
        return sample

    def add_to_corpus(_: Sample) -> None:
        # only paragraphs of accepted rows enter the corpus (a skipped row contributes nothing)
        for chunk in paragraphs_of_last_row:
            corpus.setdefault(chunk.id, chunk)

    for number, make in jsonl_rows(path):
        checker.add(number, make, to_sample, add_to_corpus)
    result = checker.result()
    return HotpotQA(samples=result.samples, corpus=tuple(corpus.values()), errors=result.errors)


# --------------------------------------------------------------------------- RAGChecker human-labelled pairs


def is_hotpotqa(path: Path) -> bool:
    """Whether `path` is a HotpotQA IRCoT file (its first 4000 bytes name its fields); DatasetError when it
    cannot be read."""
    try:
        refuse_special_file(path)
        with path.open("rb") as handle:
            head = handle.read(4000)
    except OSError as error:  # a missing or unreadable file: the loaders' message, not a traceback
        raise DatasetError(path, f"cannot read file: {error.strerror or error}") from None
    return b'"question_text"' in head and b'"contexts"' in head


def load_corpus_file(path: Path) -> tuple[Chunk, ...]:
    """The corpus of a file as `ragcourt index` takes it: a HotpotQA file's paragraphs, or {id, title, text}."""
    return load_hotpotqa(path).corpus if is_hotpotqa(path) else load_corpus(path)


def label_from_human_score(score: int) -> Label:
    """Map a RAGChecker human label (-2..+2, positive = model2 better) to a pairwise Label.

    model1 is answer A and model2 is answer B: a negative score (model1 better) is Label.A, a positive
    score (model2 better) is Label.B, and 0 is Label.TIE. The strength (1 or 2) is dropped.
    """
    if score < 0:
        return Label.A
    if score > 0:
        return Label.B
    return Label.TIE


@dataclass(frozen=True, slots=True)
class PairResponse:
    model_name: str
    response: str
    critiques: str | None = None


class HumanAspect(StrEnum):
    """Which of a RAGChecker annotator's three pairwise labels to compare a judge with."""

    OVERALL = "overall"
    CORRECTNESS = "correctness"
    COMPLETENESS = "completeness"


@dataclass(frozen=True, slots=True)
class HumanLabels:
    """One annotator's labels for a pair, each in -2..+2 (positive: model2 better)."""

    line: int
    correctness: int
    completeness: int
    overall: int

    @property
    def overall_label(self) -> Label:
        return label_from_human_score(self.overall)

    def score(self, aspect: HumanAspect) -> int:
        return {HumanAspect.OVERALL: self.overall, HumanAspect.CORRECTNESS: self.correctness,
                HumanAspect.COMPLETENESS: self.completeness}[aspect]


@dataclass(frozen=True, slots=True)
class RagCheckerPair:
    """One answer pair with the labels of every annotator, in file order."""

    instance_id: int
    dataset: str
    query_id: str | None
    query: str
    gt_answer: str
    model1: PairResponse
    model2: PairResponse
    annotations: tuple[HumanLabels, ...]

    @property
    def sample_id(self) -> str:
        return f"{RAGCHECKER_SOURCE}-{self.instance_id}"

    def to_sample(self) -> Sample:
        return Sample(
            id=self.sample_id,
            question=self.query,
            reference_answer=self.gt_answer,
            metadata={
                "source": RAGCHECKER_SOURCE,
                "dataset": self.dataset,
                "query_id": self.query_id,
                "instance_id": self.instance_id,
            },
        )


_HUMAN_LABEL_FIELDS = ("correctness_label", "completeness_label", "overall_label")


def _pair_response(row: Mapping[str, Any], field: str) -> PairResponse:
    value = require(row, field)
    if not isinstance(value, dict):
        raise RowError(field, f"must be an object, got {type_name(value)}")
    name = text_value(f"{field}.model_name", require_in(value, field, "model_name"), required=True)
    response = text_value(f"{field}.response", require_in(value, field, "response"))
    critiques = text_value(f"{field}.critiques", value.get("critiques"))
    assert name is not None and response is not None
    return PairResponse(model_name=name, response=response, critiques=critiques)


def _human_score(row: Mapping[str, Any], field: str) -> int:
    value = require(row, field)
    if isinstance(value, bool) or not isinstance(value, int) or not -2 <= value <= 2:
        raise RowError(field, f"must be an integer from -2 to 2, got {value!r}")
    return value


def load_ragchecker_pairs(path: Path) -> tuple[RagCheckerPair, ...]:
    """RAGChecker human-labelled pairs, grouped by instance_id (first appearance order).

    Records of the same instance must agree on dataset, query, gt_answer and both responses; each record
    adds one annotator's labels. Any problem raises a DatasetError (a partial grouping would skew
    agreement figures).
    """
    path = Path(path)
    text = decode(path, read_bytes(path))
    document = json_document(path, text)
    if not isinstance(document, list):
        raise DatasetError(path, f"expected a JSON list of records, got {type_name(document)}")
    if not document:
        raise DatasetError(path, "file holds no records")
    pairs: dict[int, RagCheckerPair] = {}
    for line, offset in json_array_items(text, skip_whitespace(text, 0)):
        try:
            row, _ = json_value(text, offset)
            if not isinstance(row, dict):
                raise RowError(None, f"expected a JSON object, got {type_name(row)}")
            instance_id = require(row, "instance_id")
            if isinstance(instance_id, bool) or not isinstance(instance_id, int):
                raise RowError("instance_id", f"must be an integer, got {type_name(instance_id)}")
            query_id = row.get("query_id")
            pair = RagCheckerPair(
                instance_id=instance_id,
                dataset=text_value("dataset", require(row, "dataset"), required=True) or "",
                query_id=None if query_id is None else record_id("query_id", query_id),
                query=text_value("query", require(row, "query"), required=True) or "",
                gt_answer=text_value("gt_answer", require(row, "gt_answer"), required=True) or "",
                model1=_pair_response(row, "model1"),
                model2=_pair_response(row, "model2"),
                annotations=(HumanLabels(line, *(_human_score(row, f) for f in _HUMAN_LABEL_FIELDS)),),
            )
            known = pairs.get(instance_id)
            if known is None:
                pairs[instance_id] = pair
                continue
            for field in ("dataset", "query_id", "query", "gt_answer", "model1", "model2"):
                if getattr(known, field) != getattr(pair, field):
                    first = known.annotations[0].line
                    raise RowError(
                        field, f"differs from the record of instance {instance_id} on line {first}"
                    )
            pairs[instance_id] = RagCheckerPair(
                **{f: getattr(known, f) for f in RagCheckerPair.__dataclass_fields__ if f != "annotations"},
                annotations=known.annotations + pair.annotations,
            )
        except RowError as exc:
            raise DatasetError(path, exc.message, line=line, field=exc.field) from None
    return tuple(pairs.values())


# --------------------------------------------------------------------------- bundled data


class BundledDataset(StrEnum):
    """Public sample data shipped in `ragcourt.data` (licences in data/README.md)."""

    HOTPOTQA_DEV_100 = "hotpotqa/dev_sample_100.jsonl"
    RAGCHECKER_PAIRS = "ragchecker_pairs/human_labeled_sample.json"


def bundled(name: BundledDataset) -> Path:
    """File-system path of a bundled data file (the package must be installed unzipped)."""
    resource = resources.files("ragcourt.data").joinpath(*BundledDataset(name).value.split("/"))
    if not isinstance(resource, Path):
        raise DatasetError(str(resource), "bundled data is not on the file system (zipped install)")
    if not resource.is_file():
        raise DatasetError(resource, "bundled data file is missing from the installation")
    return resource
