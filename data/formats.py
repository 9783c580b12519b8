"""Datasets as they come: Parquet files, saved Hugging Face datasets (and `datasets.Dataset` objects), RAGAS
`EvaluationDataset`s and LangSmith exports beside the loaders' JSONL / JSON / CSV, with a column map so a
user's own column names work.

Every row, whatever its source, ends in the loaders' `sample_of_row` and is checked as theirs are: errors name
the file, the line (text files) or row (Parquet, Hugging Face) and the field, as the user's file spells it
(`inputs.question`, `user_input`, a mapped column).

Formats (`DatasetFormat`), detected from the first row when not named:
- ragcourt: the loaders' own fields (id, question, reference_answer, contexts, answer, ...; see load_samples);
- ragas: a RAGAS EvaluationDataset as `to_jsonl` / `to_csv` / `to_list` write it: user_input -> question,
  retrieved_contexts -> contexts, response -> answer, reference -> reference_answer, reference_contexts ->
  gold_documents; a multi-turn user_input (a list of messages) gives the history and, from its last human
  message, the question. RAGAS rows have no id: one is derived from the question and reference, so the same
  row always gets the same id (rows repeating both are refused as duplicate ids);
- langsmith: a LangSmith dataset export, one example per line (or a JSON list): {id, inputs, outputs,
  metadata, ...}. The question is inputs.question (or input, query, user_input, or the only input); the
  reference answer is outputs.answer (or output, reference, expected, ground_truth, or the only output): in
  LangSmith an example's outputs are the reference outputs. Other inputs and outputs go to metadata under
  their dotted names, which a column map can name too (`question=inputs.prompt`);
- hotpotqa: HotpotQA in the IRCoT format (loaders.load_hotpotqa).

pyarrow is imported only to read Parquet and Hugging Face files; `datasets` and `ragas` are never imported
(their objects are read through their own methods).
"""

from __future__ import annotations

import ast
import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import partial
from pathlib import Path
from typing import Any

from ragcourt.data.errors import DatasetError, ErrorPolicy, RowError
from ragcourt.data.loaders import file_stream, hotpotqa_stream, is_hotpotqa
from ragcourt.data.read_csv import csv_value
from ragcourt.data.read_hf import saved_hf_rows
from ragcourt.data.read_parquet import given_fields, parquet_rows
from ragcourt.data.reading import LoadResult, Rows, SampleStream, collect_rows
from ragcourt.data.rows import DEFAULT_LIMITS, LIST_FIELDS, SAMPLE_FIELDS, FieldLimits, sample_of_row
from ragcourt.schema import Sample, content_id


class DatasetFormat(StrEnum):
    AUTO = "auto"  # from the first row's fields (and a HotpotQA file from its first bytes)
    RAGCOURT = "ragcourt"
    RAGAS = "ragas"
    LANGSMITH = "langsmith"
    HOTPOTQA = "hotpotqa"


TEXT_SUFFIXES = (".jsonl", ".json", ".csv")
PARQUET_SUFFIXES = (".parquet", ".pq")

RAGAS_FIELDS = {"user_input": "question", "retrieved_contexts": "contexts", "response": "answer",
                "reference": "reference_answer", "reference_contexts": "gold_documents"}
LANGSMITH_QUESTION = ("question", "input", "query", "user_input")
LANGSMITH_REFERENCE = ("answer", "output", "reference", "expected", "ground_truth", "reference_answer")
# An export's bookkeeping of each example: kept together in metadata["langsmith"].
LANGSMITH_BOOKKEEPING = ("name", "created_at", "modified_at", "dataset_id", "source_run_id", "split",
                         "attachment_urls", "runs")
_RAGAS_ROLES = {"human": "user", "ai": "assistant"}


# --------------------------------------------------------------------------- column map


def parse_column_map(specs: str | Iterable[str] | None) -> dict[str, str]:
    """`question=query,reference_answer=gt_answer` (or several such strings, as repeated --map options) ->
    {our field: the user's column}. ValueError naming the bad part: not FIELD=COLUMN, an unknown field, a field
    or a column given twice."""
    parts = [specs] if isinstance(specs, str) else list(specs or ())
    mapping: dict[str, str] = {}
    for part in (piece.strip() for spec in parts for piece in spec.split(",")):
        if not part:
            continue
        target, equals, column = (text.strip() for text in part.partition("="))
        if not equals or not target or not column:
            raise ValueError(f"--map {part!r}: write FIELD=COLUMN, e.g. question=query")
        check_target(target)
        if target in mapping:
            raise ValueError(f"--map: field '{target}' is mapped twice ({mapping[target]!r} and {column!r})")
        mapping[target] = column
    return check_column_map(mapping)


def check_target(target: str) -> None:
    if target not in SAMPLE_FIELDS:
        raise ValueError(f"--map: '{target}' is not a sample field (fields: {', '.join(SAMPLE_FIELDS)})")


def check_column_map(mapping: Mapping[str, str]) -> dict[str, str]:
    """The map as a dict, with its fields checked and no column read for two fields."""
    seen: dict[str, str] = {}
    for target, column in mapping.items():
        check_target(target)
        if column in seen:
            raise ValueError(f"--map: column '{column}' is mapped to both '{seen[column]}' and '{target}'")
        seen[column] = target
    return dict(mapping)


# --------------------------------------------------------------------------- one row to a sample


@dataclass
class RowAdapter:
    """One parsed row of any format -> a Sample (raising RowError with the field as the file names it).

    The format is detected from the first row given when it is AUTO; `from_csv` says cells are text, so a
    mapped list column is parsed as the CSV loader parses its own list columns, and a RAGAS list cell as the
    Python list `to_csv` writes.
    """

    format: DatasetFormat = DatasetFormat.AUTO
    column_map: Mapping[str, str] = field(default_factory=dict)
    from_csv: bool = False

    def __call__(self, row: dict[str, Any]) -> Sample:
        if self.format is DatasetFormat.AUTO:
            self.format = detect_format(row)
        spelled: dict[str, str] = {}  # our field -> how the file spells it, for error messages
        if self.format is DatasetFormat.LANGSMITH:
            row = _langsmith_flat(row)
        row = _mapped(row, self.column_map, spelled, self.from_csv)
        if self.format is DatasetFormat.LANGSMITH:
            row = _langsmith_defaults(row, spelled)
        elif self.format is DatasetFormat.RAGAS:
            row = _ragas_row(row, spelled, self.from_csv)
        try:
            return sample_of_row(row)
        except RowError as error:
            raise RowError(_spelled_as(error.field, spelled), error.message) from None


def detect_format(row: Mapping[str, Any]) -> DatasetFormat:
    """LangSmith: an `inputs` object and no `question`; RAGAS: a `user_input`; else the loaders' own fields."""
    if isinstance(row.get("inputs"), dict) and "question" not in row:
        return DatasetFormat.LANGSMITH
    if "user_input" in row:
        return DatasetFormat.RAGAS
    return DatasetFormat.RAGCOURT


def _spelled_as(name: str | None, spelled: Mapping[str, str]) -> str | None:
    """`contexts[2].text` as the file names it (`retrieved_contexts[2].text`)."""
    if name is None:
        return None
    for target, source in spelled.items():
        if name == target or name.startswith((f"{target}[", f"{target}.")):
            return source + name[len(target):]
    return name


def _mapped(row: dict[str, Any], column_map: Mapping[str, str], spelled: dict[str, str],
            from_csv: bool) -> dict[str, Any]:
    """The row with each mapped column under our field's name (a column the row lacks is left out)."""
    if not column_map:
        return row
    out = dict(row)
    for target, column in column_map.items():
        if target in row and target != column and target not in column_map.values():
            raise RowError(target, f"is given beside '{column}', which the column map reads as '{target}'; "
                                   "keep one")
    moved = {target: out.pop(column) for target, column in column_map.items() if column in out}
    for target, value in moved.items():
        spelled[target] = column_map[target]
        if from_csv and isinstance(value, str) and target in LIST_FIELDS:
            try:
                value = csv_value(target, value)
            except RowError as error:
                raise RowError(column_map[target], error.message) from None
        out[target] = value
    return out


def _ragas_row(row: dict[str, Any], spelled: dict[str, str], from_csv: bool) -> dict[str, Any]:
    out = dict(row)
    for source, target in RAGAS_FIELDS.items():
        if source not in out or target in spelled:
            continue
        if target in out:
            raise RowError(source, f"is given beside '{target}', which means the same; keep one")
        value = out.pop(source)
        spelled[target] = source
        if from_csv and target in ("contexts", "gold_documents") and isinstance(value, str):
            value = _python_list(source, value)
        out[target] = value
    question = out.get("question")
    if isinstance(question, list):  # a multi-turn sample: the conversation, ending with the question
        out["question"], out["history"] = _ragas_conversation(spelled.get("question", "user_input"), question)
    if "id" not in out and "question_id" not in out:
        out["id"] = content_id("ragas", out.get("question"), out.get("reference_answer"))
    return out


def _python_list(column: str, cell: str) -> Any:
    """A list cell as RAGAS's to_csv writes it (Python's repr: ['a', 'b']), or JSON; literals only."""
    try:
        value = ast.literal_eval(cell)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        try:
            value = json.loads(cell)
        except ValueError:
            raise RowError(column, "must be a list of strings, as ['first', 'second'] or JSON") from None
    if not isinstance(value, list):
        raise RowError(column, f"must be a list of strings, got {type(value).__name__}")
    return value


def _ragas_conversation(field_name: str, messages: list[Any]) -> tuple[Any, list[dict[str, Any]]]:
    """(question, history) of a RAGAS multi-turn user_input: the last human message is the question, the turns
    before it the history; a tool message has no place in a question-answering history."""
    turns = []
    for index, message in enumerate(messages):
        at = f"{field_name}[{index}]"
        if not isinstance(message, dict):
            raise RowError(at, "must be a message object with 'content' and 'type'")
        kind = message.get("type")
        if kind not in _RAGAS_ROLES:
            raise RowError(f"{at}.type", f"must be 'human' or 'ai' (a question and its history), got {kind!r}")
        turns.append({"role": _RAGAS_ROLES[kind], "content": message.get("content")})
    if not turns or turns[-1]["role"] != "user":
        raise RowError(field_name, "must end with a human message: the question")
    return turns[-1]["content"], turns[:-1]


def _langsmith_flat(row: dict[str, Any]) -> dict[str, Any]:
    """An example with its inputs and outputs as top-level `inputs.NAME` / `outputs.NAME` fields."""
    out = {key: value for key, value in row.items()
           if key not in ("inputs", "outputs", *LANGSMITH_BOOKKEEPING)}
    for part in ("inputs", "outputs"):
        value = row.get(part)
        if value is None:
            if part == "inputs":
                raise RowError("inputs", "is missing")
            continue
        if not isinstance(value, dict):
            raise RowError(part, f"must be an object, got {type(value).__name__}")
        out.update({f"{part}.{key}": item for key, item in value.items()})
    bookkeeping = {key: row[key] for key in LANGSMITH_BOOKKEEPING if row.get(key) is not None}
    if bookkeeping:
        metadata = out.get("metadata")
        if metadata is not None and not isinstance(metadata, dict):
            raise RowError("metadata", f"must be an object, got {type(metadata).__name__}")
        out["metadata"] = {**(metadata or {}), "langsmith": bookkeeping}
    return out


def _langsmith_defaults(row: dict[str, Any], spelled: dict[str, str]) -> dict[str, Any]:
    out = dict(row)
    for target, part, names in (("question", "inputs", LANGSMITH_QUESTION),
                                ("reference_answer", "outputs", LANGSMITH_REFERENCE)):
        if target in out:
            continue
        given = [key for key in out if key.startswith(f"{part}.")]
        found = next((f"{part}.{name}" for name in names if f"{part}.{name}" in out), None)
        if found is None and len(given) == 1:
            found = given[0]
        if found is None:
            if target == "question":
                shown = ", ".join(given) or "none"
                raise RowError("inputs", f"has no question: name it with a column map, e.g. "
                                         f"question=inputs.NAME (inputs: {shown})")
            continue
        out[target] = out.pop(found)
        spelled[target] = found
    return out


# --------------------------------------------------------------------------- sources


def read_dataset(
    source: str | os.PathLike[str] | Any,
    *,
    format: DatasetFormat = DatasetFormat.AUTO,
    column_map: Mapping[str, str] | None = None,
    limits: FieldLimits = DEFAULT_LIMITS,
    on_error: ErrorPolicy = ErrorPolicy.RAISE,
    strict: bool = False,
) -> LoadResult:
    """The samples of a dataset in any of the formats above.

    `source`: a .jsonl / .json / .csv / .parquet file, a directory written by a Hugging Face dataset's
    `save_to_disk` (a DatasetDict's with one split, or one split's directory), or in Python a
    `datasets.Dataset` or a RAGAS `EvaluationDataset` object. `column_map`: our field -> the source's column
    (parse_column_map). DatasetError names the file (or the object's type), the line or row, and the field.
    A top-level field no sample has is kept in metadata and named in the result's warnings (`strict`: refused).
    """
    mapping = check_column_map(column_map or {})
    format = DatasetFormat(format)
    if not isinstance(source, str | os.PathLike):
        return _read_object(source, format, mapping, limits, on_error, strict)
    return stream_dataset(source, format=format, column_map=mapping, limits=limits, on_error=on_error,
                          strict=strict).load()


def stream_dataset(
    source: str | os.PathLike[str],
    *,
    format: DatasetFormat = DatasetFormat.AUTO,
    column_map: Mapping[str, str] | None = None,
    limits: FieldLimits = DEFAULT_LIMITS,
    on_error: ErrorPolicy = ErrorPolicy.RAISE,
    strict: bool = False,
    limit: int | None = None,
) -> SampleStream:
    """The samples of a dataset file or saved Hugging Face directory as read_dataset reads them, as a SampleStream:
    `check()` validates the whole dataset in one pass, and each iteration reads it again (JSONL and CSV a line at
    a time, Parquet and Hugging Face datasets a batch of rows at a time; a JSON document whole), so the memory it
    takes does not grow with the dataset. `limit`: only the first N samples."""
    mapping = check_column_map(column_map or {})
    format = DatasetFormat(format)
    path = Path(source)
    if path.is_dir():
        return _table_stream(path, partial(saved_hf_rows, path), format, mapping, limits, on_error, strict, limit)
    suffix = path.suffix.lower()
    if suffix in PARQUET_SUFFIXES:
        return _table_stream(path, partial(parquet_rows, path), format, mapping, limits, on_error, strict, limit)
    if format is DatasetFormat.HOTPOTQA or (format is DatasetFormat.AUTO and is_hotpotqa(path)):
        if mapping:
            raise ValueError("a column map does not apply to a HotpotQA file (its fields are fixed)")
        return hotpotqa_stream(path, on_error=on_error, limits=limits, limit=limit)
    if suffix not in TEXT_SUFFIXES:
        raise DatasetError(path, f"unsupported file type '{suffix}'; use .jsonl, .json, .csv, .parquet or a "
                                 "saved Hugging Face dataset directory")
    adapter = RowAdapter(format, mapping, from_csv=suffix == ".csv")
    return file_stream(path, on_error=on_error, limits=limits, to_sample=adapter, strict=strict, limit=limit)


def _table_stream(path: Path, rows: Callable[[], Rows], format: DatasetFormat, mapping: Mapping[str, str],
                  limits: FieldLimits, on_error: ErrorPolicy, strict: bool, limit: int | None) -> SampleStream:
    if format is DatasetFormat.HOTPOTQA:
        raise DatasetError(path, "HotpotQA data is read from its IRCoT JSONL file only")
    return SampleStream(path, rows, unit="row", key_word="column", to_sample=RowAdapter(format, mapping),
                        limits=limits, on_error=on_error, strict=strict, limit=limit)


def _read_rows(source: str | Path, rows: Rows, format: DatasetFormat, mapping: Mapping[str, str],
               limits: FieldLimits, on_error: ErrorPolicy, strict: bool = False) -> LoadResult:
    if format is DatasetFormat.HOTPOTQA:
        raise DatasetError(source, "HotpotQA data is read from its IRCoT JSONL file only")
    return collect_rows(source, rows, unit="row", on_error=on_error, limits=limits,
                        to_sample=RowAdapter(format, mapping), strict=strict)


def _read_object(source: Any, format: DatasetFormat, mapping: Mapping[str, str], limits: FieldLimits,
                 on_error: ErrorPolicy, strict: bool = False) -> LoadResult:
    """A `datasets.Dataset` or a RAGAS `EvaluationDataset`, recognised by their module and methods."""
    kind = type(source)
    module, name = kind.__module__.split(".")[0], kind.__name__
    label = f"{module}.{name}"
    if module == "ragas" and hasattr(source, "samples"):
        rows = [sample.model_dump(exclude_none=True) for sample in source.samples]
        chosen = DatasetFormat.RAGAS if format is DatasetFormat.AUTO else format
        return _read_rows(label, _list_rows(rows), chosen, mapping, limits, on_error, strict)
    if module == "datasets" and name == "DatasetDict":
        splits = list(source)
        raise TypeError(f"a DatasetDict holds the splits {', '.join(splits)}: pass one, e.g. dataset['{splits[0]}']")
    if module == "datasets" and hasattr(source, "column_names") and hasattr(source, "to_list"):
        return _read_rows(label, _list_rows(source.to_list()), format, mapping, limits, on_error, strict)
    raise TypeError(f"dataset= takes a file path, a list of Samples, a datasets.Dataset or a RAGAS "
                    f"EvaluationDataset, not {label}")


def _list_rows(rows: Sequence[Mapping[str, Any]]) -> Rows:
    for number, row in enumerate(rows, start=1):
        yield number, given_fields(row)


def load_dataset(path: Path, limits: FieldLimits = DEFAULT_LIMITS, *, format: str = "auto",
                 column_map: Mapping[str, str] | None = None) -> tuple[Sample, ...]:
    """The samples of a dataset as the CLI takes it: a HotpotQA IRCoT file, JSONL / JSON / CSV, Parquet, a saved
    Hugging Face dataset directory, a RAGAS EvaluationDataset file or a LangSmith export (the formats above,
    `format` one of them, `column_map` our field -> the file's column)."""
    return read_dataset(path, format=DatasetFormat(format), column_map=column_map, limits=limits).samples
