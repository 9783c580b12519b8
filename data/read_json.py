"""JSON datasets: one document, a list of samples or an object with a "samples" list. A JSON document is only
known to be valid once it is parsed whole, so this format is read whole (use JSONL for a dataset too large for
memory); each element is then converted on its own, with the line it starts on."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

from ragcourt.data.errors import DatasetError
from ragcourt.data.reading import Rows
from ragcourt.data.text_input import (
    decode,
    json_array_items,
    json_document,
    json_value,
    read_bytes,
    skip_whitespace,
    type_name,
)


def json_rows(path: Path) -> Rows:
    """(line, parse) of each sample of the document; DatasetError when it is unreadable or of another shape."""
    text = decode(path, read_bytes(path))
    document = json_document(path, text)
    for line, offset in json_samples_array(path, text, document):
        yield line, partial(json_row, text, offset)


def json_samples_array(path: Path, text: str, value: Any) -> Iterator[tuple[int, int]]:
    """Elements of a top-level list, or of the list under "samples" of a top-level object, with lines."""
    start = skip_whitespace(text, 0)
    if isinstance(value, list):
        yield from json_array_items(text, start)
        return
    if isinstance(value, dict) and isinstance(value.get("samples"), list):
        # Walk the top-level object to the position of the "samples" array; other keys are ignored.
        # With a repeated "samples" key Python keeps the last one, and so does this walk.
        pos = skip_whitespace(text, start + 1)
        samples_at = -1
        while text[pos] != "}":
            key, pos = json_value(text, pos, unique_keys=False)
            pos = skip_whitespace(text, skip_whitespace(text, pos) + 1)  # past the colon
            if key == "samples":
                samples_at = pos
            _, pos = json_value(text, pos, unique_keys=False)
            pos = skip_whitespace(text, pos)
            if text[pos] == ",":
                pos = skip_whitespace(text, pos + 1)
        yield from json_array_items(text, samples_at)
        return
    found = type_name(value) if not isinstance(value, dict) else "an object without a 'samples' list"
    raise DatasetError(
        path, f"expected a JSON list of samples or an object with a 'samples' list, got {found}"
    )



def json_row(text: str, offset: int) -> Any:
    return json_value(text, offset)[0]

