"""Files of pydantic models (a published data set's own records, a validity set's lines): JSONL, or one JSON list,
read like the sample files: every problem of every line with its file, line and field, then DatasetErrors."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ragcourt.data.errors import DatasetError, DatasetErrors, RowError
from ragcourt.data.rows import pydantic_problems, refuse_bad_text
from ragcourt.data.text_input import (
    decode,
    json_array_items,
    json_document,
    json_value,
    jsonl_lines,
    jsonl_value,
    read_bytes,
    skip_whitespace,
    type_name,
)

_Model = TypeVar("_Model", bound=BaseModel)


def read_jsonl_models(
    path: Path, model: type[_Model], check: Callable[[int, _Model], tuple[str | None, str] | None] | None = None
) -> list[tuple[int, _Model]]:
    """(line, model) for every line of a JSONL file of `model` objects, read like the sample loaders.

    Every problem of every line is collected (see `pydantic_problems`), and `check(line, item)` adds the
    (field, problem) pydantic cannot see on a line that validates. Any problem raises DatasetErrors, so a
    file with one bad line gives nothing.
    """
    path = Path(path)
    try:
        numbered = list(jsonl_lines(path))
    except DatasetError as error:
        raise DatasetErrors([error]) from None
    return _validated_models(path, ((number, partial(jsonl_value, raw)) for number, raw in numbered), model, check)


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
                raise RowError(None, f"expected a JSON object, got {type_name(row)}")
            refuse_bad_text(row)
            item = model.model_validate(row)
            problem = check(number, item) if check is not None else None
            problems = [] if problem is None else [problem]
        except RowError as error:
            problems = [(error.field, error.message)]
        except ValidationError as error:
            problems = pydantic_problems(error, model)
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
        text = decode(path, read_bytes(path))
        document = json_document(path, text)
    except DatasetError as error:
        raise DatasetErrors([error]) from None
    if not isinstance(document, list) or not document:
        found = "an empty list" if isinstance(document, list) else type_name(document)
        raise DatasetErrors([DatasetError(path, f"expected a JSON list of objects, got {found}")])
    rows = ((number, partial(_json_value_at, text, offset))
            for number, offset in json_array_items(text, skip_whitespace(text, 0)))
    return _validated_models(path, rows, model, check)


def _json_value_at(text: str, offset: int) -> Any:
    return json_value(text, offset)[0]

