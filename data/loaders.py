"""Loading evaluation data: user files (JSONL / JSON / CSV), HotpotQA (IRCoT format), RAGChecker pairs.

Every problem a loader finds is a `DatasetError` naming the file, the 1-based line and the field, so a
person can open the file at that line and fix it. Row-level problems can be collected instead of raised
(`ErrorPolicy.SKIP`); file-level problems (unreadable, empty, not valid JSON as a whole, bad CSV header)
always raise, because no row can be trusted after them.

What is accepted on purpose:
- very large fields (a whole book in `reference_answer`): no size limit is applied; the CSV reader's field
  size limit is lifted for the duration of a load;
- arbitrary nested JSON in `metadata` (it is the caller's data); nesting so deep that the JSON parser
  itself gives up (about 1000 levels) is reported as an error rather than crashing;
- any Unicode text (Chinese, emoji, right-to-left); lone surrogates (`"\\ud800"`) are rejected because
  they cannot be encoded as UTF-8 and would break every store downstream.
"""

from __future__ import annotations

import csv
import difflib
import functools
import io
import json
import re
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from enum import StrEnum
from functools import partial
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar, get_args

from pydantic import BaseModel, ValidationError

from ragcourt.schema import Chunk, Label, Sample, content_id
from ragcourt.schema.inputs import (
    field_name,
    id_problem,
    required_text_problem,
    shown_or_empty,
    shows_something,
    value_problems,
)
from ragcourt.schema.records import paragraph_id

HOTPOTQA_SOURCE = "hotpotqa"
RAGCHECKER_SOURCE = "ragchecker"
CSV_LIST_SEPARATOR = "|"
# csv's field limit is a process-wide setting; lifted only while a CSV file is read (see _read_csv).
_CSV_FIELD_LIMIT = 2**31 - 1
_UTF8_BOM = b"\xef\xbb\xbf"


# --------------------------------------------------------------------------- errors and results


class DatasetError(ValueError):
    """A problem in an input file, located by file, 1-based line (None: whole file) and field.

    `unit` names what `line` counts: "line" for text files (`file:3: ...`), "row" for Parquet files and saved
    Hugging Face datasets, which have no lines (`file: row 3: ...`).
    """

    def __init__(self, file: str | Path, message: str, *, line: int | None = None, field: str | None = None,
                 unit: str = "line"):
        self.file = str(file)
        self.line = line
        self.field = field
        self.message = message
        self.unit = unit
        super().__init__(str(self))

    def __str__(self) -> str:
        if self.line is None:
            where = self.file
        else:
            where = f"{self.file}:{self.line}" if self.unit == "line" else f"{self.file}: {self.unit} {self.line}"
        what = self.message if self.field is None else f"field '{self.field}': {self.message}"
        return f"{where}: {what}"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_error, (self.file, self.message, self.line, self.field, self.unit))


def _rebuild_error(file: str, message: str, line: int | None, field: str | None, unit: str = "line") -> DatasetError:
    return DatasetError(file, message, line=line, field=field, unit=unit)


class DatasetErrors(DatasetError):
    """Every problem found in one input file, in line order, each a DatasetError naming file, line and field.

    `file`, `line`, `field` and `message` are the first problem's, so code that reports one error still
    reports something true; str() is every problem, one per line.
    """

    def __init__(self, errors: Sequence[DatasetError]):
        if not errors:
            raise ValueError("DatasetErrors needs at least one error")
        self.errors = tuple(errors)
        first = self.errors[0]
        super().__init__(first.file, first.message, line=first.line, field=first.field, unit=first.unit)

    def __str__(self) -> str:
        return "\n".join(str(error) for error in self.errors)

    def __reduce__(self) -> tuple[Any, ...]:
        return (DatasetErrors, (self.errors,))

    @property
    def n_lines(self) -> int:
        """How many distinct lines have a problem (file-level problems count as none)."""
        return len({error.line for error in self.errors if error.line is not None})


class ErrorPolicy(StrEnum):
    RAISE = "raise"  # raise the first row error
    SKIP = "skip"  # collect row errors in LoadResult.errors and leave those rows out


@dataclass(frozen=True, slots=True)
class LoadResult:
    samples: tuple[Sample, ...]
    errors: tuple[DatasetError, ...] = ()
    warnings: tuple[DatasetError, ...] = ()  # accepted but worth a look: a top-level field no sample has


class RowError(Exception):
    """A problem inside one row; the caller adds file and line (data.formats raises it from its row adapters)."""

    def __init__(self, field: str | None, message: str):
        super().__init__(message)
        self.field = field
        self.message = message


# --------------------------------------------------------------------------- reading text


def _refuse_special_file(path: Path) -> None:
    # stat, not open: opening a FIFO would wait for a writer forever
    if path.exists() and not stat.S_ISREG(path.stat().st_mode):
        raise DatasetError(path, "is not a regular file (a directory, FIFO or device): give a dataset file")


def _read_bytes(path: Path) -> bytes:
    try:
        _refuse_special_file(path)
        data = path.read_bytes()
    except OSError as exc:
        raise DatasetError(path, f"cannot read file: {exc.strerror or exc}") from exc
    if not data.removeprefix(_UTF8_BOM).strip():
        raise DatasetError(path, "file is empty")
    return data


def _line_of(data: bytes | str, offset: int) -> int:
    newline: Any = b"\n" if isinstance(data, bytes) else "\n"
    return data.count(newline, 0, offset) + 1


def _decode(path: Path, data: bytes) -> str:
    """The whole file as text; invalid UTF-8 and NUL bytes are reported at their line."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = _line_of(data, exc.start)
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise DatasetError(
            path, f"invalid UTF-8 (byte 0x{data[exc.start]:02x} at column {column})", line=line
        ) from None
    nul = text.find("\x00")
    if nul >= 0:
        column = nul - (text.rfind("\n", 0, nul) + 1) + 1
        raise DatasetError(path, f"NUL byte at column {column}", line=_line_of(text, nul))
    return text.removeprefix("\ufeff")


class _DuplicateKey(Exception):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _object_without_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise _DuplicateKey(key)
        obj[key] = value
    return obj


_DECODER = json.JSONDecoder(object_pairs_hook=_object_without_duplicate_keys)
# The whole-document pass of a .json file only checks syntax; duplicate keys are reported per row later.
_LENIENT_DECODER = json.JSONDecoder()


class _BadJson(RowError):
    """Text that is not JSON; lineno / colno are relative to the text handed to the parser."""

    def __init__(self, reason: str, lineno: int | None = None, colno: int | None = None):
        super().__init__(None, f"not valid JSON: {reason}")
        self.reason = reason
        self.lineno = lineno
        self.colno = colno


def _json_value(text: str, start: int = 0, *, unique_keys: bool = True) -> tuple[Any, int]:
    """One JSON value at `start` (after whitespace); returns (value, end). Raises RowError on bad JSON."""
    start = _skip_whitespace(text, start)
    try:
        return (_DECODER if unique_keys else _LENIENT_DECODER).raw_decode(text, start)
    except json.JSONDecodeError as exc:
        raise _BadJson(exc.msg, exc.lineno, exc.colno) from None
    except _DuplicateKey as exc:
        raise RowError(exc.key, "key appears twice in the same object") from None
    except RecursionError:
        raise _BadJson("nested too deeply to parse") from None
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        raise _BadJson(str(exc)) from None


def _skip_whitespace(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _json_document(path: Path, text: str) -> Any:
    """Parse a whole JSON document; errors carry the line and column the JSON parser stopped at."""
    try:
        value, end = _json_value(text, unique_keys=False)
    except _BadJson as exc:
        column = "" if exc.colno is None else f" (column {exc.colno})"
        raise DatasetError(path, f"not valid JSON: {exc.reason}{column}", line=exc.lineno) from None
    except RowError as exc:
        raise DatasetError(path, exc.message, field=exc.field) from None
    end = _skip_whitespace(text, end)
    if end != len(text):
        raise DatasetError(path, "not valid JSON: extra data after the document", line=_line_of(text, end))
    return value


def _json_array_items(text: str, array_start: int) -> Iterator[tuple[int, int]]:
    """(line, offset) of each element of the JSON array at `array_start`; the text is known to be valid."""
    pos = _skip_whitespace(text, array_start + 1)
    if text[pos] == "]":
        return
    while True:
        pos = _skip_whitespace(text, pos)
        _, end = _json_value(text, pos, unique_keys=False)
        yield _line_of(text, pos), pos
        pos = _skip_whitespace(text, end)
        if text[pos] == "]":
            return
        pos += 1  # the comma


def _json_samples_array(path: Path, text: str, value: Any) -> Iterator[tuple[int, int]]:
    """Elements of a top-level list, or of the list under "samples" of a top-level object, with lines."""
    start = _skip_whitespace(text, 0)
    if isinstance(value, list):
        yield from _json_array_items(text, start)
        return
    if isinstance(value, dict) and isinstance(value.get("samples"), list):
        # Walk the top-level object to the position of the "samples" array; other keys are ignored.
        # With a repeated "samples" key Python keeps the last one, and so does this walk.
        pos = _skip_whitespace(text, start + 1)
        samples_at = -1
        while text[pos] != "}":
            key, pos = _json_value(text, pos, unique_keys=False)
            pos = _skip_whitespace(text, _skip_whitespace(text, pos) + 1)  # past the colon
            if key == "samples":
                samples_at = pos
            _, pos = _json_value(text, pos, unique_keys=False)
            pos = _skip_whitespace(text, pos)
            if text[pos] == ",":
                pos = _skip_whitespace(text, pos + 1)
        yield from _json_array_items(text, samples_at)
        return
    found = _type_name(value) if not isinstance(value, dict) else "an object without a 'samples' list"
    raise DatasetError(
        path, f"expected a JSON list of samples or an object with a 'samples' list, got {found}"
    )


# --------------------------------------------------------------------------- field checks


def _type_name(value: Any) -> str:
    return {dict: "object", list: "list", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number" if isinstance(value, int | float) else type(value).__name__
    )


def _pick(row: Mapping[str, Any], name: str, aliases: tuple[str, ...], used: set[str]) -> tuple[str, Any]:
    """The value of a field that may be spelled several ways; two spellings at once is an error."""
    present = [key for key in (name, *aliases) if key in row]
    if len(present) > 1:
        raise RowError(present[1], f"repeats '{present[0]}' (both spell '{name}'); keep one")
    used.update(present)
    if not present:
        return name, None
    return present[0], row[present[0]]


def _string(field: str, value: Any) -> str | None:
    """A text field's value as given (None: not given), or RowError when it is no string. What the text must
    hold is the Sample's rule (schema.inputs), so a file and the Python API refuse the same text."""
    if value is not None and not isinstance(value, str):
        raise RowError(field, f"must be a string, got {_type_name(value)}")
    return value


def _text(field: str, value: Any, *, required: bool = False) -> str | None:
    """Text of a record that is no Sample (a HotpotQA paragraph, a RAGChecker pair, a corpus chunk), checked by
    the Sample's rules: required text must show something, optional text that shows nothing is ""."""
    if value is None:
        if required:
            raise RowError(field, "is missing")
        return None
    text = _string(field, value)
    assert text is not None
    problem = required_text_problem(text) if required else None
    if problem is not None:
        raise RowError(field, problem)
    return shown_or_empty(text)


def _id_value(field: str, value: Any) -> str:
    """An id as given, a string or an integer (the Sample says what an id may hold)."""
    if value is None:
        raise RowError("id", "is missing; every sample needs an 'id' (or 'question_id')")
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise RowError(field, f"must be a string or an integer, got {_type_name(value)}")
    return str(value)


def _sample_id(field: str, value: Any) -> str:
    """The id of a record that is no Sample, checked by the Sample's rule for ids."""
    text = _id_value(field, value)
    problem = id_problem(text)
    if problem is not None:
        raise RowError(field, problem)
    return text


def _string_list(field: str, value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise RowError(field, f"must be a list of strings, got {_type_name(value)}")
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise RowError(f"{field}[{index}]", f"must be a string, got {_type_name(item)}")
    return tuple(value)


def _chunk(field: str, value: Any, *, rank: int | None) -> Chunk:
    """A chunk from a plain string or from {id?, title?, text, score?, ...}; other keys go to metadata. Its id,
    text and score are checked by the Sample it goes into (repeated ids too)."""
    if isinstance(value, str):
        return Chunk(id=paragraph_id(None, value), text=value, rank=rank)
    if not isinstance(value, dict):
        raise RowError(field, f"must be a string or an object with 'text', got {_type_name(value)}")
    text = _string(f"{field}.text", value.get("text"))
    if text is None:
        raise RowError(f"{field}.text", "is missing")
    title = _text(f"{field}.title", value.get("title"))
    raw_id = value.get("id")
    chunk_id = paragraph_id(title, text) if raw_id is None else _id_value(f"{field}.id", raw_id)
    score = value.get("score")
    if score is not None and (isinstance(score, bool) or not isinstance(score, int | float)):
        raise RowError(f"{field}.score", f"must be a finite number, got {score!r}")
    extra = {k: v for k, v in value.items() if k not in ("id", "title", "text", "score")}
    return Chunk(id=chunk_id, text=text, title=title, score=score, rank=rank, metadata=extra)


def _chunks(field: str, value: Any, *, ranked: bool) -> tuple[Chunk, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise RowError(field, f"must be a list, got {_type_name(value)}")
    return tuple(_chunk(f"{field}[{i}]", item, rank=i + 1 if ranked else None) for i, item in enumerate(value))


_TURN_ROLES = ("user", "assistant")


def _history(field: str, value: Any) -> tuple[dict[str, str], ...]:
    """The conversation before the question: a list of {role, content} turns, oldest first (seed 002, 6); the
    Sample makes them Turns (and refuses a turn that shows nothing)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise RowError(field, f"must be a list of {{role, content}} turns, got {_type_name(value)}")
    turns = []
    for index, turn in enumerate(value):
        at = f"{field}[{index}]"
        if not isinstance(turn, dict):
            raise RowError(at, f"must be an object with 'role' and 'content', got {_type_name(turn)}")
        unknown = sorted(set(turn) - {"role", "content"})
        if unknown:
            raise RowError(f"{at}.{unknown[0]}", "is not a field of a turn (a turn has 'role' and 'content')")
        role = turn.get("role")
        if role is None:
            raise RowError(f"{at}.role", "is missing")
        if role not in _TURN_ROLES:
            raise RowError(f"{at}.role", f"must be 'user' or 'assistant', got {role!r}")
        content = _string(f"{at}.content", turn.get("content"))
        if content is None:
            raise RowError(f"{at}.content", "is missing")
        turns.append({"role": role, "content": content})
    return tuple(turns)


def _refuse_bad_text(row: Mapping[str, Any]) -> None:
    """A row of a record that is no Sample (a corpus chunk, a validity set's line) holds no lone surrogate or NUL
    (a Sample's own validator applies the same rule, and refuses NaN and infinity too)."""
    for loc, problem, _ in value_problems(dict(row), finite=False):
        raise RowError(field_name(loc), problem)


_KNOWN_FIELDS: dict[str, tuple[str, ...]] = {
    "id": ("question_id",),
    "question": ("question_text", "query"),
    "reference_answer": ("gt_answer", "answer_reference"),
    "gold_answers": (),
    "gold_titles": (),
    "gold_documents": (),
    "contexts": (),
    "answer": ("response",),
    "metadata": (),
    "history": (),
}


_SPELLINGS = tuple(name for name, aliases in _KNOWN_FIELDS.items() for name in (name, *aliases))
# The top-level fields of each row that are no sample field (kept in metadata), for the collector that reads
# the row: set around one call of a row adapter, which may rename a format's fields before sample_of_row.
_UNKNOWN_FIELDS: ContextVar[list[str] | None] = ContextVar("unknown_fields", default=None)
# What the reader calls a row's keys, for a message naming one: "column" in a CSV file.
_KEY_WORD: ContextVar[str] = ContextVar("key_word", default="key")


def nearest_field(name: str) -> str | None:
    """The sample field (or accepted spelling) `name` most likely misspells, if any is close."""
    match = difflib.get_close_matches(name.lower(), _SPELLINGS, n=1, cutoff=0.75)
    return match[0] if match else None


SAMPLE_FIELDS = tuple(_KNOWN_FIELDS)
"""The fields of a sample row, as the loaders name them (a column map's targets: data.formats)."""
LIST_FIELDS = ("gold_answers", "gold_titles", "gold_documents", "contexts", "metadata", "history")
"""The fields a CSV cell holds as JSON or '|'-separated text (csv_value)."""


def sample_of_row(row: Mapping[str, Any]) -> Sample:
    """Map one row (already parsed into Python values) to a Sample; raises RowError.

    The row's shape (which fields, of which JSON types) is checked here; what the values must hold (printable
    ids, text that shows something, unique chunk ids, no NaN) is the Sample's rule, whose problem comes back
    as a RowError naming the field as the row spells it."""
    used: set[str] = set()
    spelled: dict[str, str] = {}  # our field -> the row's key for it

    def pick(name: str) -> tuple[str, Any]:
        key, value = _pick(row, name, _KNOWN_FIELDS[name], used)
        spelled[name] = key
        return key, value

    id_field, given_id = pick("id")
    if given_id is None:
        raise RowError("id", "is missing; every sample needs an 'id' (or 'question_id')" + _lookalike(row, "id"))
    sample_id = _id_value(id_field, given_id)
    question_field, question = pick("question")
    if question is None:
        raise RowError("question", "is missing (also accepted: 'question_text', 'query')"
                       + _lookalike(row, "question"))
    question_text = _string(question_field, question)
    reference = _string(*pick("reference_answer"))
    gold_answers = _string_list(*pick("gold_answers"))
    gold_titles = _string_list(*pick("gold_titles"))
    gold_documents = _chunks(*pick("gold_documents"), ranked=False) or ()
    contexts = _chunks(*pick("contexts"), ranked=True)
    answer = _string(*pick("answer"))
    history = _history(*pick("history"))
    metadata_field, metadata = pick("metadata")
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        raise RowError(metadata_field, f"must be an object, got {_type_name(metadata)}")
    metadata = dict(metadata)
    unknown = [key for key in row if key not in used]
    for key in unknown:
        if key in metadata:
            raise RowError(key, "given both at top level and inside 'metadata'; keep one")
        metadata[key] = row[key]
    sink = _UNKNOWN_FIELDS.get()
    if sink is not None:
        sink.extend(unknown)
    try:
        return Sample(
            id=sample_id,
            question=question_text,  # type: ignore[arg-type]
            reference_answer=reference,
            gold_answers=gold_answers,
            gold_titles=gold_titles,
            gold_documents=gold_documents,
            contexts=contexts,
            answer=answer,
            metadata=metadata,
            history=history,  # type: ignore[arg-type]
        )
    except ValidationError as exc:
        loc = exc.errors(include_url=False)[0]["loc"]
        # Back to the row's spelling: a top-level field kept in metadata is the row's own field.
        if len(loc) > 1 and loc[0] == "metadata" and loc[1] in unknown:
            loc = loc[1:]
        elif loc and loc[0] in spelled:
            loc = (spelled[str(loc[0])], *loc[1:])
        _, message = _pydantic_problems(exc, Sample)[0]
        raise RowError(field_name(loc), message) from None


def _lookalike(row: Mapping[str, Any], name: str) -> str:
    """For a missing field: the row's key that looks like a misspelling of it, if one does ("; column
    'questoin' looks like 'question'"); no key of the row is a known spelling of a sample field."""
    for key in row:
        if key not in _SPELLINGS and nearest_field(key) in (name, *_KNOWN_FIELDS[name]):
            return f"; {_KEY_WORD.get()} '{key}' looks like '{name}'"
    return ""


# --------------------------------------------------------------------------- collecting rows


@dataclass(frozen=True)
class FieldLimits:
    """The longest text a sample's field may hold, in characters; a longer one is refused with its file, line
    and field (never cut: a figure computed on part of a text would not say so). A 520 KB question kept a run
    busy for minutes without a line of output. The defaults are far above any real question or answer and keep
    a whole long document as one chunk; pass others to the loaders to change them."""

    question: int = 20_000  # what kept the run busy: every check shows the question
    reference_answer: int = 4_000_000
    answer: int = 4_000_000
    chunk: int = 4_000_000  # each context and gold document
    turn: int = 20_000  # each turn of the history: every Q-CARE check shows them, like the question

    def problems(self, sample: Sample) -> Iterator[tuple[str, str]]:
        """(field, message) for every field of `sample` over its limit."""
        for field, text, limit in (("question", sample.question, self.question),
                                   ("reference_answer", sample.reference_answer, self.reference_answer),
                                   ("answer", sample.answer, self.answer)):
            if text is not None and len(text) > limit:
                yield field, f"holds {len(text):,} characters, more than the limit of {limit:,}"
        for index, turn in enumerate(sample.history):
            if len(turn.content) > self.turn:
                yield (f"history[{index}].content",
                       f"holds {len(turn.content):,} characters, more than the limit of {self.turn:,}")
        for field, chunks in (("contexts", sample.contexts or ()), ("gold_documents", sample.gold_documents)):
            for index, chunk in enumerate(chunks):
                if len(chunk.text) > self.chunk:
                    yield (f"{field}[{index}].text",
                           f"holds {len(chunk.text):,} characters, more than the limit of {self.chunk:,}")


DEFAULT_LIMITS = FieldLimits()


class _Collector:
    """Turns row errors into DatasetErrors, applies the error policy and checks ids are unique."""

    def __init__(self, path: Path, on_error: ErrorPolicy, limits: FieldLimits = DEFAULT_LIMITS, unit: str = "line",
                 strict: bool = False):
        self.path = path
        self.on_error = on_error
        self.limits = limits
        self.unit = unit
        self.strict = strict  # an unknown top-level field is an error, not a warning
        self.samples: list[Sample] = []
        self.errors: list[DatasetError] = []
        self.rows = 0
        self._id_lines: dict[str, int] = {}
        self._unknown: dict[str, list[int]] = {}  # unknown top-level field -> the lines that give it

    def fail(self, line: int | None, field: str | None, message: str) -> None:
        error = DatasetError(self.path, message, line=line, field=field, unit=self.unit)
        if self.on_error is ErrorPolicy.RAISE:
            raise error
        self.errors.append(error)

    def add(
        self,
        line: int,
        make: Callable[[], Any],
        to_sample: Callable[[Any], Sample] = sample_of_row,
        on_accept: Callable[[Sample], None] | None = None,
    ) -> None:
        """Parse and convert one row; `make` produces the parsed row (and may raise RowError)."""
        self.rows += 1
        unknown: list[str] = []
        token = _UNKNOWN_FIELDS.set(unknown)
        try:
            row = make()
            if not isinstance(row, dict):
                raise RowError(None, f"expected a JSON object, got {_type_name(row)}")
            sample = to_sample(row)
        except RowError as exc:
            self.fail(line, exc.field, exc.message)
            return
        finally:
            _UNKNOWN_FIELDS.reset(token)
        if unknown and self.strict:
            self.fail(line, unknown[0], _unknown_field_message(unknown[0], strict=True))
            return
        for name in unknown:
            self._unknown.setdefault(name, []).append(line)
        over = next(self.limits.problems(sample), None)
        if over is not None:
            self.fail(line, *over)
            return
        first = self._id_lines.get(sample.id)
        if first is not None:
            self.fail(line, "id", f"duplicate id '{sample.id}' (first on {self.unit} {first}, again on {self.unit} "
                                  f"{line})")
            return
        self._id_lines[sample.id] = line
        self.samples.append(sample)
        if on_accept is not None:
            on_accept(sample)

    def result(self) -> LoadResult:
        if self.rows == 0:
            raise DatasetError(self.path, "file holds no samples")
        return LoadResult(samples=tuple(self.samples), errors=tuple(self.errors), warnings=tuple(
            DatasetError(self.path, _unknown_field_message(name, lines=len(lines), unit=self.unit), line=lines[0],
                         field=name, unit=self.unit)
            for name, lines in self._unknown.items()))


def _unknown_field_message(name: str, *, strict: bool = False, lines: int = 1, unit: str = "line") -> str:
    nearest = nearest_field(name)
    guess = f"; did you mean '{nearest}'?" if nearest else ""
    if strict:
        return f"is not a field of a sample{guess} (--strict refuses it; without it, it would go into metadata)"
    where = "" if lines == 1 else f" (on {lines} {unit}s)"
    return (f"is not a field of a sample, so it was kept in metadata{where}{guess}; put it inside 'metadata' to "
            "say so, or --strict to refuse it")


def _jsonl_rows(
    data: bytes,
    collector: _Collector,
    to_sample: Callable[[Any], Sample] = sample_of_row,
    on_accept: Callable[[Sample], None] | None = None,
) -> None:
    """One object per line, decoded line by line so one bad line does not hide the others."""
    for number, raw in _jsonl_lines(data):
        collector.add(number, functools.partial(_jsonl_value, raw), to_sample, on_accept)


def _jsonl_lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, bytes) of every non-blank line; a UTF-8 byte order mark is dropped."""
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if number == 1:
            raw = raw.removeprefix(_UTF8_BOM)
        if raw.strip():
            yield number, raw


def _jsonl_value(raw: bytes) -> Any:
    """The JSON value of one JSONL line; raises RowError (bad UTF-8, a NUL byte, bad JSON)."""
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RowError(
            None, f"invalid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})"
        ) from None
    nul = line.find("\x00")
    if nul >= 0:
        raise RowError(None, f"NUL byte at column {nul + 1}")
    try:
        value, end = _json_value(line)
    except _BadJson as exc:
        column = "" if exc.colno is None else f" (column {exc.colno})"
        raise RowError(None, f"not valid JSON: {exc.reason}{column}") from None
    end = _skip_whitespace(line, end)
    if end != len(line):
        raise RowError(None, f"not valid JSON: extra data after the value (column {end + 1})")
    return value


# --------------------------------------------------------------------------- JSONL of pydantic models

_Model = TypeVar("_Model", bound=BaseModel)
_NUMBER_ERRORS = {"int_type", "int_parsing", "int_from_float", "float_type", "float_parsing"}
_LIST_ERRORS = {"list_type", "tuple_type", "set_type", "frozen_set_type"}


def _mentions_str(annotation: Any) -> bool:
    return annotation is str or any(_mentions_str(arg) for arg in get_args(annotation))


def _pydantic_problems(error: ValidationError, model: type[BaseModel]) -> list[tuple[str | None, str]]:
    """(field, problem) for every error pydantic found validating `model` from JSON values, worded like the
    loaders' own checks (JSON type names, `elements[1]`), never pydantic's words for Python types."""
    problems = []
    for item in error.errors(include_url=False):
        kind, loc, got, ctx = item["type"], item["loc"], item["input"], item.get("ctx", {})
        if kind == "missing":
            message = "is missing"
        elif kind == "extra_forbidden":
            message = f"unknown field (allowed: {', '.join(model.model_fields)})"
        elif kind in _LIST_ERRORS:
            field = model.model_fields.get(str(loc[0])) if len(loc) == 1 else None
            of_strings = field is not None and _mentions_str(field.annotation)
            message = f"must be a list{' of strings' * of_strings}, got {_type_name(got)}"
        elif kind == "string_type":
            message = f"must be a string, got {_type_name(got)}"
        elif kind == "string_too_short" and ctx.get("min_length") == 1:
            message = "is empty"
        elif kind in ("bool_type", "bool_parsing"):
            message = f"must be true or false, got {_type_name(got)}"
        elif kind in _NUMBER_ERRORS:
            message = f"must be a number, got {_type_name(got)}"
        elif kind == "finite_number":
            message = f"must be a finite number, got {got!r}"
        elif kind in ("enum", "literal_error"):
            allowed = ", ".join(part.strip("'") for part in re.split(r", | or ", ctx["expected"]))
            message = f"must be one of {allowed}, got {repr(got) if isinstance(got, str) else _type_name(got)}"
        elif kind == "value_error":
            message = str(ctx["error"])
        else:
            message = item["msg"]
        problems.append((field_name(loc), message))
    return problems


def read_jsonl_models(
    path: Path, model: type[_Model], check: Callable[[int, _Model], tuple[str | None, str] | None] | None = None
) -> list[tuple[int, _Model]]:
    """(line, model) for every line of a JSONL file of `model` objects, read like the sample loaders.

    Every problem of every line is collected (see `_pydantic_problems`), and `check(line, item)` adds the
    (field, problem) pydantic cannot see on a line that validates. Any problem raises DatasetErrors, so a
    file with one bad line gives nothing.
    """
    path = Path(path)
    try:
        numbered = list(_jsonl_lines(_read_bytes(path)))
    except DatasetError as error:
        raise DatasetErrors([error]) from None
    return _validated_models(path, ((number, partial(_jsonl_value, raw)) for number, raw in numbered), model, check)


def _validated_models(
    path: Path, rows: Iterable[tuple[int, Callable[[], Any]]], model: type[_Model],
    check: Callable[[int, _Model], tuple[str | None, str] | None] | None,
) -> list[tuple[int, _Model]]:
    """(line, model) for every row of a file, each row parsed by its callable (so a parse error is that row's
    problem), its text checked and validated; every problem of every row, then DatasetErrors."""
    items: list[tuple[int, _Model]] = []
    errors: list[DatasetError] = []
    for number, parse in rows:
        try:
            row = parse()
            if not isinstance(row, dict):
                raise RowError(None, f"expected a JSON object, got {_type_name(row)}")
            _refuse_bad_text(row)
            item = model.model_validate(row)
            problem = check(number, item) if check is not None else None
            problems = [] if problem is None else [problem]
        except RowError as error:
            problems = [(error.field, error.message)]
        except ValidationError as error:
            problems = _pydantic_problems(error, model)
        errors.extend(DatasetError(path, message, line=number, field=field) for field, message in problems)
        if not problems:
            items.append((number, item))
    if errors:
        raise DatasetErrors(errors)
    return items


def read_json_array_models(
    path: Path, model: type[_Model], check: Callable[[int, _Model], tuple[str | None, str] | None] | None = None
) -> list[tuple[int, _Model]]:
    """(line, model) for every element of a JSON file that is one list of `model` objects (a published data
    set's own format, e.g. RAGChecker's meta-evaluation files), checked as `read_jsonl_models` checks a JSONL
    file: every problem of every element (its line is the one the element starts on), then DatasetErrors."""
    path = Path(path)
    try:
        text = _decode(path, _read_bytes(path))
        document = _json_document(path, text)
    except DatasetError as error:
        raise DatasetErrors([error]) from None
    if not isinstance(document, list) or not document:
        found = "an empty list" if isinstance(document, list) else _type_name(document)
        raise DatasetErrors([DatasetError(path, f"expected a JSON list of objects, got {found}")])
    rows = ((number, partial(_json_value_at, text, offset))
            for number, offset in _json_array_items(text, _skip_whitespace(text, 0)))
    return _validated_models(path, rows, model, check)


def _json_value_at(text: str, offset: int) -> Any:
    return _json_value(text, offset)[0]


def _corpus_chunk(path: Path, row: Any) -> Chunk:
    if not isinstance(row, dict):
        raise RowError(None, f"expected a JSON object with 'text', got {_type_name(row)}")
    _refuse_bad_text(row)
    text = _text("text", row.get("text"), required=True)
    assert text is not None
    chunk_id = content_id(text) if row.get("id") is None else _sample_id("id", row["id"])
    return Chunk(id=chunk_id, text=text, title=_text("title", row.get("title")), source=str(path))


def load_corpus(path: Path) -> tuple[Chunk, ...]:
    """A corpus for `ragcourt index`: JSONL, one {id?, title?, text} object per line (other keys ignored).

    id defaults to a content hash of the text. Errors name the file, the line and the field, like the
    sample loaders': bad UTF-8, NUL bytes, bad JSON, a missing, empty or non-string text, duplicate ids.
    """
    path = Path(path)
    chunks: list[Chunk] = []
    id_lines: dict[str, int] = {}
    for number, raw in _jsonl_lines(_read_bytes(path)):
        try:
            chunk = _corpus_chunk(path, _jsonl_value(raw))
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


def csv_value(column: str, cell: str) -> Any:
    """A CSV cell as a Python value: empty -> None; list / object fields as JSON or '|'-separated text."""
    if cell == "":
        return None
    if column in LIST_FIELDS:
        if cell.lstrip().startswith(("[", "{")):
            try:
                value, end = _json_value(cell)
            except RowError as exc:
                raise RowError(column, exc.message) from None
            if _skip_whitespace(cell, end) != len(cell):
                raise RowError(column, "not valid JSON: extra data after the value")
            return value
        if column == "metadata":
            raise RowError(column, "must be a JSON object")
        if column == "history":
            raise RowError(column, 'must be a JSON list of turns, e.g. [{"role": "user", "content": "..."}]')
        return [part.strip() for part in cell.split(CSV_LIST_SEPARATOR) if part.strip()]
    return cell


def _csv_rows(path: Path, text: str, collector: _Collector,
              to_sample: Callable[[Any], Sample] = sample_of_row) -> None:
    reader = csv.reader(io.StringIO(text, newline=""))
    previous_limit = csv.field_size_limit(_CSV_FIELD_LIMIT)
    key_word = _KEY_WORD.set("column")
    try:
        try:
            header = next(reader)
        except StopIteration:
            raise DatasetError(path, "file is empty") from None
        except csv.Error as exc:
            raise DatasetError(path, f"bad CSV: {exc}", line=1) from None
        columns = [name.strip() for name in header]
        if not any(columns):
            raise DatasetError(path, "the first row must be a header naming the columns", line=1)
        for index, name in enumerate(columns):
            if not name:
                raise DatasetError(path, f"header column {index + 1} has no name", line=1)
            if name in columns[:index]:
                raise DatasetError(path, f"header names column '{name}' twice", line=1, field=name)
        while True:
            start = reader.line_num + 1
            try:
                cells = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                collector.add(start, _failing(RowError(None, f"bad CSV: {exc}")), to_sample)
                break  # the reader cannot resynchronise after a CSV syntax error
            if not cells or all(cell.strip() == "" for cell in cells):
                continue

            def parse(cells: list[str] = cells) -> dict[str, Any]:
                if len(cells) != len(columns):
                    raise RowError(None, f"row has {len(cells)} cells, the header has {len(columns)}")
                row: dict[str, Any] = {}
                for column, cell in zip(columns, cells, strict=True):
                    value = csv_value(column, cell)
                    if value is not None:
                        row[column] = value
                return row

            collector.add(start, parse, to_sample)
    finally:
        _KEY_WORD.reset(key_word)
        csv.field_size_limit(previous_limit)


def _failing(error: RowError) -> Callable[[], Any]:
    def fail() -> Any:
        raise error

    return fail


def _json_row(text: str, offset: int) -> Any:
    return _json_value(text, offset)[0]


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
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".jsonl", ".json", ".csv"):
        raise DatasetError(path, f"unsupported file type '{suffix}'; use .jsonl, .json or .csv")
    data = _read_bytes(path)
    collector = _Collector(path, on_error, limits, strict=strict)
    if suffix == ".jsonl":
        _jsonl_rows(data, collector, to_sample)
    elif suffix == ".json":
        text = _decode(path, data)
        document = _json_document(path, text)
        for line, offset in _json_samples_array(path, text, document):
            collector.add(line, functools.partial(_json_row, text, offset), to_sample)
    else:
        _csv_rows(path, _decode(path, data), collector, to_sample)
    return collector.result()


def collect_rows(source: str | Path, rows: Iterable[tuple[int, Callable[[], Any]]], *, unit: str = "row",
                 on_error: ErrorPolicy = ErrorPolicy.RAISE, limits: FieldLimits = DEFAULT_LIMITS,
                 to_sample: Callable[[dict[str, Any]], Sample] = sample_of_row, strict: bool = False) -> LoadResult:
    """Samples of rows read by another reader (Parquet, a Hugging Face dataset: data.formats), checked as the
    file loaders check theirs: each (number, make) pair gives the row's 1-based `unit` number and a function
    producing the parsed row (which may raise RowError); errors name `source`, the row and the field, ids must
    be unique, `limits` apply."""
    collector = _Collector(Path(source), on_error, limits, unit, strict)
    key_word = _KEY_WORD.set("column")  # a table's rows, as a CSV file's
    try:
        for number, make in rows:
            collector.add(number, make, to_sample)
    finally:
        _KEY_WORD.reset(key_word)
    return collector.result()


# --------------------------------------------------------------------------- HotpotQA (IRCoT format)


@dataclass(frozen=True, slots=True)
class HotpotQA:
    """HotpotQA questions with their gold paragraphs, and every paragraph of every question as a corpus."""

    samples: tuple[Sample, ...]
    corpus: tuple[Chunk, ...]
    errors: tuple[DatasetError, ...] = ()


def _require(row: Mapping[str, Any], field: str) -> Any:
    if field not in row or row[field] is None:
        raise RowError(field, "is missing")
    return row[field]


def _hotpot_paragraphs(contexts: Any) -> list[tuple[Chunk, bool]]:
    if not isinstance(contexts, list) or not contexts:
        raise RowError("contexts", f"must be a non-empty list of paragraphs, got {_type_name(contexts)}")
    paragraphs = []
    for index, paragraph in enumerate(contexts):
        field = f"contexts[{index}]"
        if not isinstance(paragraph, dict):
            raise RowError(field, f"must be an object, got {_type_name(paragraph)}")
        title = _text(f"{field}.title", _require_in(paragraph, field, "title"), required=True)
        text = _text(f"{field}.paragraph_text", _require_in(paragraph, field, "paragraph_text"))
        supporting = paragraph.get("is_supporting", False)
        if not isinstance(supporting, bool):
            raise RowError(f"{field}.is_supporting", f"must be true or false, got {_type_name(supporting)}")
        assert title is not None and text is not None
        chunk = Chunk(id=paragraph_id(title, text), text=text, title=title, source=HOTPOTQA_SOURCE)
        paragraphs.append((chunk, supporting))
    return paragraphs


def _require_in(obj: Mapping[str, Any], prefix: str, key: str) -> Any:
    if obj.get(key) is None:
        raise RowError(f"{prefix}.{key}", "is missing")
    return obj[key]


def _hotpot_spans(answers: Any) -> tuple[str, ...]:
    if not isinstance(answers, list) or not answers:
        raise RowError("answers_objects", f"must be a non-empty list, got {_type_name(answers)}")
    spans: list[str] = []
    for index, answer in enumerate(answers):
        if not isinstance(answer, dict):
            raise RowError(f"answers_objects[{index}]", f"must be an object, got {_type_name(answer)}")
        spans.extend(_string_list(f"answers_objects[{index}].spans", answer.get("spans")))
    spans = [span for span in spans if shows_something(span)]  # the first that shows is the reference answer
    if not spans:
        raise RowError("answers_objects", "has no answer span")
    return tuple(spans)


def load_hotpotqa(path: Path, *, on_error: ErrorPolicy = ErrorPolicy.RAISE,
                  limits: FieldLimits = DEFAULT_LIMITS) -> HotpotQA:
    """HotpotQA in the IRCoT processed format (one question per line; see data/README.md).

    Sample: id = question_id, question = question_text, gold_answers = every answer span,
    reference_answer = the first span, gold_titles / gold_documents = the is_supporting paragraphs,
    metadata {"source": "hotpotqa"}. Corpus: all paragraphs, deduplicated by `paragraph_id(title, text)`.
    """
    path = Path(path)
    data = _read_bytes(path)
    collector = _Collector(path, on_error, limits)
    corpus: dict[str, Chunk] = {}
    paragraphs_of_last_row: list[Chunk] = []

    def to_sample(row: dict[str, Any]) -> Sample:
        sample_id = _sample_id("question_id", _require(row, "question_id"))
        question = _text("question_text", _require(row, "question_text"), required=True)
        spans = _hotpot_spans(_require(row, "answers_objects"))
        paragraphs = _hotpot_paragraphs(_require(row, "contexts"))
        gold = tuple(chunk for chunk, supporting in paragraphs if supporting)
        paragraphs_of_last_row[:] = [chunk for chunk, _ in paragraphs]
        return Sample(
            id=sample_id,
            question=question,  # type: ignore[arg-type]
            reference_answer=spans[0],
            gold_answers=spans,
            gold_titles=tuple(dict.fromkeys(chunk.title for chunk in gold if chunk.title)),
            gold_documents=gold,
            metadata={"source": HOTPOTQA_SOURCE},
        )

    def add_to_corpus(_: Sample) -> None:
        # only paragraphs of accepted rows enter the corpus (a skipped row contributes nothing)
        for chunk in paragraphs_of_last_row:
            corpus.setdefault(chunk.id, chunk)

    _jsonl_rows(data, collector, to_sample, add_to_corpus)
    result = collector.result()
    return HotpotQA(samples=result.samples, corpus=tuple(corpus.values()), errors=result.errors)


# --------------------------------------------------------------------------- RAGChecker human-labelled pairs


def is_hotpotqa(path: Path) -> bool:
    """Whether `path` is a HotpotQA IRCoT file (its first 4000 bytes name its fields); DatasetError when it
    cannot be read."""
    try:
        _refuse_special_file(path)
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
    value = _require(row, field)
    if not isinstance(value, dict):
        raise RowError(field, f"must be an object, got {_type_name(value)}")
    name = _text(f"{field}.model_name", _require_in(value, field, "model_name"), required=True)
    response = _text(f"{field}.response", _require_in(value, field, "response"))
    critiques = _text(f"{field}.critiques", value.get("critiques"))
    assert name is not None and response is not None
    return PairResponse(model_name=name, response=response, critiques=critiques)


def _human_score(row: Mapping[str, Any], field: str) -> int:
    value = _require(row, field)
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
    text = _decode(path, _read_bytes(path))
    document = _json_document(path, text)
    if not isinstance(document, list):
        raise DatasetError(path, f"expected a JSON list of records, got {_type_name(document)}")
    if not document:
        raise DatasetError(path, "file holds no records")
    pairs: dict[int, RagCheckerPair] = {}
    for line, offset in _json_array_items(text, _skip_whitespace(text, 0)):
        try:
            row, _ = _json_value(text, offset)
            if not isinstance(row, dict):
                raise RowError(None, f"expected a JSON object, got {_type_name(row)}")
            instance_id = _require(row, "instance_id")
            if isinstance(instance_id, bool) or not isinstance(instance_id, int):
                raise RowError("instance_id", f"must be an integer, got {_type_name(instance_id)}")
            query_id = row.get("query_id")
            pair = RagCheckerPair(
                instance_id=instance_id,
                dataset=_text("dataset", _require(row, "dataset"), required=True) or "",
                query_id=None if query_id is None else _sample_id("query_id", query_id),
                query=_text("query", _require(row, "query"), required=True) or "",
                gt_answer=_text("gt_answer", _require(row, "gt_answer"), required=True) or "",
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
