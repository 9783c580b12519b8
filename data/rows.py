"""The rules of a sample row, whatever file or table it comes from: which fields (and which spellings of them),
of which JSON types, mapped to a `Sample` whose own validators (schema.records, schema.inputs) decide what the
values must hold; the longest text a field may hold (`FieldLimits`); and pydantic's problems worded as the readers
word theirs. Every problem is a RowError naming the field as the row spells it: the reader adds file and line."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, get_args

from pydantic import BaseModel, ValidationError

from ragcourt.data.errors import RowError
from ragcourt.data.text_input import type_name
from ragcourt.schema import Chunk, Sample
from ragcourt.schema.inputs import (
    field_name,
    id_problem,
    required_text_problem,
    shown_or_empty,
    value_problems,
)
from ragcourt.schema.records import paragraph_id


def pick_field(row: Mapping[str, Any], name: str, aliases: tuple[str, ...], used: set[str]) -> tuple[str, Any]:
    """The value of a field that may be spelled several ways; two spellings at once is an error."""
    present = [key for key in (name, *aliases) if key in row]
    if len(present) > 1:
        raise RowError(present[1], f"repeats '{present[0]}' (both spell '{name}'); keep one")
    used.update(present)
    if not present:
        return name, None
    return present[0], row[present[0]]


def string_value(field: str, value: Any) -> str | None:
    """A text field's value as given (None: not given), or RowError when it is no string. What the text must
    hold is the Sample's rule (schema.inputs), so a file and the Python API refuse the same text."""
    if value is not None and not isinstance(value, str):
        raise RowError(field, f"must be a string, got {type_name(value)}")
    return value


def text_value(field: str, value: Any, *, required: bool = False) -> str | None:
    """Text of a record that is no Sample (a HotpotQA paragraph, a RAGChecker pair, a corpus chunk), checked by
    the Sample's rules: required text must show something, optional text that shows nothing is ""."""
    if value is None:
        if required:
            raise RowError(field, "is missing")
        return None
    text = string_value(field, value)
    assert text is not None
    problem = required_text_problem(text) if required else None
    if problem is not None:
        raise RowError(field, problem)
    return shown_or_empty(text)


def id_value(field: str, value: Any) -> str:
    """An id as given, a string or an integer (the Sample says what an id may hold)."""
    if value is None:
        raise RowError("id", "is missing; every sample needs an 'id' (or 'question_id')")
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise RowError(field, f"must be a string or an integer, got {type_name(value)}")
    return str(value)


def record_id(field: str, value: Any) -> str:
    """The id of a record that is no Sample, checked by the Sample's rule for ids."""
    text = id_value(field, value)
    problem = id_problem(text)
    if problem is not None:
        raise RowError(field, problem)
    return text


def string_list(field: str, value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise RowError(field, f"must be a list of strings, got {type_name(value)}")
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise RowError(f"{field}[{index}]", f"must be a string, got {type_name(item)}")
    return tuple(value)


def chunk_of(field: str, value: Any, *, rank: int | None) -> Chunk:
    """A chunk from a plain string or from {id?, title?, text, score?, ...}; other keys go to metadata. Its id,
    text and score are checked by the Sample it goes into (repeated ids too)."""
    if isinstance(value, str):
        return Chunk(id=paragraph_id(None, value), text=value, rank=rank)
    if not isinstance(value, dict):
        raise RowError(field, f"must be a string or an object with 'text', got {type_name(value)}")
    text = string_value(f"{field}.text", value.get("text"))
    if text is None:
        raise RowError(f"{field}.text", "is missing")
    title = text_value(f"{field}.title", value.get("title"))
    raw_id = value.get("id")
    chunk_id = paragraph_id(title, text) if raw_id is None else id_value(f"{field}.id", raw_id)
    score = value.get("score")
    if score is not None and (isinstance(score, bool) or not isinstance(score, int | float)):
        raise RowError(f"{field}.score", f"must be a finite number, got {score!r}")
    extra = {k: v for k, v in value.items() if k not in ("id", "title", "text", "score")}
    return Chunk(id=chunk_id, text=text, title=title, score=score, rank=rank, metadata=extra)


def chunks_of(field: str, value: Any, *, ranked: bool) -> tuple[Chunk, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise RowError(field, f"must be a list, got {type_name(value)}")
    return tuple(chunk_of(f"{field}[{i}]", item, rank=i + 1 if ranked else None) for i, item in enumerate(value))


_TURN_ROLES = ("user", "assistant")


def history_of(field: str, value: Any) -> tuple[dict[str, str], ...]:
    """The conversation before the question: a list of {role, content} turns, oldest first (seed 002, 6); the
    Sample makes them Turns (and refuses a turn that shows nothing)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise RowError(field, f"must be a list of {{role, content}} turns, got {type_name(value)}")
    turns = []
    for index, turn in enumerate(value):
        at = f"{field}[{index}]"
        if not isinstance(turn, dict):
            raise RowError(at, f"must be an object with 'role' and 'content', got {type_name(turn)}")
        unknown = sorted(set(turn) - {"role", "content"})
        if unknown:
            raise RowError(f"{at}.{unknown[0]}", "is not a field of a turn (a turn has 'role' and 'content')")
        role = turn.get("role")
        if role is None:
            raise RowError(f"{at}.role", "is missing")
        if role not in _TURN_ROLES:
            raise RowError(f"{at}.role", f"must be 'user' or 'assistant', got {role!r}")
        content = string_value(f"{at}.content", turn.get("content"))
        if content is None:
            raise RowError(f"{at}.content", "is missing")
        turns.append({"role": role, "content": content})
    return tuple(turns)


def refuse_bad_text(row: Mapping[str, Any]) -> None:
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
UNKNOWN_FIELDS: ContextVar[list[str] | None] = ContextVar("unknown_fields", default=None)
# What the reader calls a row's keys, for a message naming one: "column" in a CSV file.
KEY_WORD: ContextVar[str] = ContextVar("key_word", default="key")


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
        key, value = pick_field(row, name, _KNOWN_FIELDS[name], used)
        spelled[name] = key
        return key, value

    id_field, given_id = pick("id")
    if given_id is None:
        raise RowError("id", "is missing; every sample needs an 'id' (or 'question_id')" + _lookalike(row, "id"))
    sample_id = id_value(id_field, given_id)
    question_field, question = pick("question")
    if question is None:
        raise RowError("question", "is missing (also accepted: 'question_text', 'query')"
                       + _lookalike(row, "question"))
    question_text = string_value(question_field, question)
    reference = string_value(*pick("reference_answer"))
    gold_answers = string_list(*pick("gold_answers"))
    gold_titles = string_list(*pick("gold_titles"))
    gold_documents = chunks_of(*pick("gold_documents"), ranked=False) or ()
    contexts = chunks_of(*pick("contexts"), ranked=True)
    answer = string_value(*pick("answer"))
    history = history_of(*pick("history"))
    metadata_field, metadata = pick("metadata")
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        raise RowError(metadata_field, f"must be an object, got {type_name(metadata)}")
    metadata = dict(metadata)
    unknown = [key for key in row if key not in used]
    for key in unknown:
        if key in metadata:
            raise RowError(key, "given both at top level and inside 'metadata'; keep one")
        metadata[key] = row[key]
    sink = UNKNOWN_FIELDS.get()
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
        _, message = pydantic_problems(exc, Sample)[0]
        raise RowError(field_name(loc), message) from None


def _lookalike(row: Mapping[str, Any], name: str) -> str:
    """For a missing field: the row's key that looks like a misspelling of it, if one does ("; column
    'questoin' looks like 'question'"); no key of the row is a known spelling of a sample field."""
    for key in row:
        if key not in _SPELLINGS and nearest_field(key) in (name, *_KNOWN_FIELDS[name]):
            return f"; {KEY_WORD.get()} '{key}' looks like '{name}'"
    return ""




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


def unknown_field_message(name: str, *, strict: bool = False, lines: int = 1, unit: str = "line") -> str:
    nearest = nearest_field(name)
    guess = f"; did you mean '{nearest}'?" if nearest else ""
    if strict:
        return f"is not a field of a sample{guess} (--strict refuses it; without it, it would go into metadata)"
    where = "" if lines == 1 else f" (on {lines} {unit}s)"
    return (f"is not a field of a sample, so it was kept in metadata{where}{guess}; put it inside 'metadata' to "
            "say so, or --strict to refuse it")



_NUMBER_ERRORS = {"int_type", "int_parsing", "int_from_float", "float_type", "float_parsing"}
_LIST_ERRORS = {"list_type", "tuple_type", "set_type", "frozen_set_type"}


def _mentions_str(annotation: Any) -> bool:
    return annotation is str or any(_mentions_str(arg) for arg in get_args(annotation))


def pydantic_problems(error: ValidationError, model: type[BaseModel]) -> list[tuple[str | None, str]]:
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
            message = f"must be a list{' of strings' * of_strings}, got {type_name(got)}"
        elif kind == "string_type":
            message = f"must be a string, got {type_name(got)}"
        elif kind == "string_too_short" and ctx.get("min_length") == 1:
            message = "is empty"
        elif kind in ("bool_type", "bool_parsing"):
            message = f"must be true or false, got {type_name(got)}"
        elif kind in _NUMBER_ERRORS:
            message = f"must be a number, got {type_name(got)}"
        elif kind == "finite_number":
            message = f"must be a finite number, got {got!r}"
        elif kind in ("enum", "literal_error"):
            allowed = ", ".join(part.strip("'") for part in re.split(r", | or ", ctx["expected"]))
            message = f"must be one of {allowed}, got {repr(got) if isinstance(got, str) else type_name(got)}"
        elif kind == "value_error":
            message = str(ctx["error"])
        else:
            message = item["msg"]
        problems.append((field_name(loc), message))
    return problems

