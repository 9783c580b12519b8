"""Reading text input files: their bytes, UTF-8 text, JSON values with the line and column a parser stopped at,
and JSONL lines read one at a time (a file is never held whole to read it line by line).

What is accepted on purpose: arbitrary nested JSON (nesting so deep that the JSON parser itself gives up, about
1000 levels, is reported as an error rather than crashing); any Unicode text (lone surrogates are refused later,
by the records' rules); a UTF-8 byte order mark is dropped.
"""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ragcourt.data.errors import DatasetError, RowError

UTF8_BOM = b"\xef\xbb\xbf"
_READ_SIZE = 1 << 16  # bytes read at a time to find whether a file shows anything


def refuse_special_file(path: Path) -> None:
    # stat, not open: opening a FIFO would wait for a writer forever
    if path.exists() and not stat.S_ISREG(path.stat().st_mode):
        raise DatasetError(path, "is not a regular file (a directory, FIFO or device): give a dataset file")


def read_bytes(path: Path) -> bytes:
    try:
        refuse_special_file(path)
        data = path.read_bytes()
    except OSError as exc:
        raise DatasetError(path, f"cannot read file: {exc.strerror or exc}") from exc
    if not data.removeprefix(UTF8_BOM).strip():
        raise DatasetError(path, "file is empty")
    return data


def line_of(data: bytes | str, offset: int) -> int:
    newline: Any = b"\n" if isinstance(data, bytes) else "\n"
    return data.count(newline, 0, offset) + 1


def decode(path: Path, data: bytes) -> str:
    """The whole file as text; invalid UTF-8 and NUL bytes are reported at their line."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = line_of(data, exc.start)
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise DatasetError(
            path, f"invalid UTF-8 (byte 0x{data[exc.start]:02x} at column {column})", line=line
        ) from None
    nul = text.find("\x00")
    if nul >= 0:
        column = nul - (text.rfind("\n", 0, nul) + 1) + 1
        raise DatasetError(path, f"NUL byte at column {column}", line=line_of(text, nul))
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


class BadJson(RowError):
    """Text that is not JSON; lineno / colno are relative to the text handed to the parser."""

    def __init__(self, reason: str, lineno: int | None = None, colno: int | None = None):
        super().__init__(None, f"not valid JSON: {reason}")
        self.reason = reason
        self.lineno = lineno
        self.colno = colno


def json_value(text: str, start: int = 0, *, unique_keys: bool = True) -> tuple[Any, int]:
    """One JSON value at `start` (after whitespace); returns (value, end). Raises RowError on bad JSON."""
    start = skip_whitespace(text, start)
    try:
        return (_DECODER if unique_keys else _LENIENT_DECODER).raw_decode(text, start)
    except json.JSONDecodeError as exc:
        raise BadJson(exc.msg, exc.lineno, exc.colno) from None
    except _DuplicateKey as exc:
        raise RowError(exc.key, "key appears twice in the same object") from None
    except RecursionError:
        raise BadJson("nested too deeply to parse") from None
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        raise BadJson(str(exc)) from None


def skip_whitespace(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def json_document(path: Path, text: str) -> Any:
    """Parse a whole JSON document; errors carry the line and column the JSON parser stopped at."""
    try:
        value, end = json_value(text, unique_keys=False)
    except BadJson as exc:
        column = "" if exc.colno is None else f" (column {exc.colno})"
        raise DatasetError(path, f"not valid JSON: {exc.reason}{column}", line=exc.lineno) from None
    except RowError as exc:
        raise DatasetError(path, exc.message, field=exc.field) from None
    end = skip_whitespace(text, end)
    if end != len(text):
        raise DatasetError(path, "not valid JSON: extra data after the document", line=line_of(text, end))
    return value


def json_array_items(text: str, array_start: int) -> Iterator[tuple[int, int]]:
    """(line, offset) of each element of the JSON array at `array_start`; the text is known to be valid."""
    pos = skip_whitespace(text, array_start + 1)
    if text[pos] == "]":
        return
    while True:
        pos = skip_whitespace(text, pos)
        _, end = json_value(text, pos, unique_keys=False)
        yield line_of(text, pos), pos
        pos = skip_whitespace(text, end)
        if text[pos] == "]":
            return
        pos += 1  # the comma



def type_name(value: Any) -> str:
    return {dict: "object", list: "list", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number" if isinstance(value, int | float) else type(value).__name__
    )



def open_binary(path: Path) -> Any:
    """The file opened for reading bytes; DatasetError when it is no regular file or cannot be opened."""
    try:
        refuse_special_file(path)
        return path.open("rb")
    except OSError as exc:
        raise DatasetError(path, f"cannot read file: {exc.strerror or exc}") from exc


def refuse_empty_file(path: Path) -> None:
    """DatasetError when the file cannot be read or shows nothing but whitespace (and a byte order mark); reads
    only up to the first byte that shows something."""
    with open_binary(path) as handle:
        head = handle.read(_READ_SIZE).removeprefix(UTF8_BOM)
        while head:
            if head.strip():
                return
            head = handle.read(_READ_SIZE)
    raise DatasetError(path, "file is empty")


def jsonl_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, bytes) of every non-blank line of a file, read one line at a time; a UTF-8 byte
    order mark is dropped. DatasetError when the file cannot be read or is empty."""
    refuse_empty_file(path)
    with open_binary(path) as handle:
        for number, raw in enumerate(handle, start=1):
            raw = raw.removesuffix(b"\n")
            if number == 1:
                raw = raw.removeprefix(UTF8_BOM)
            if raw.strip():
                yield number, raw


def text_lines(path: Path) -> Iterator[str]:
    """The file's text one line at a time (each with its newline), for a reader that parses across lines (CSV);
    invalid UTF-8 and NUL bytes are a DatasetError at their line. A newline byte is never part of a multi-byte
    UTF-8 character, so decoding line by line is decoding the file."""
    refuse_empty_file(path)
    with open_binary(path) as handle:
        for number, raw in enumerate(handle, start=1):
            if number == 1:
                raw = raw.removeprefix(UTF8_BOM)
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DatasetError(path, f"invalid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})",
                                   line=number) from None
            nul = line.find("\x00")
            if nul >= 0:
                raise DatasetError(path, f"NUL byte at column {nul + 1}", line=number)
            yield line


def jsonl_value(raw: bytes) -> Any:
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
        value, end = json_value(line)
    except BadJson as exc:
        column = "" if exc.colno is None else f" (column {exc.colno})"
        raise RowError(None, f"not valid JSON: {exc.reason}{column}") from None
    end = skip_whitespace(line, end)
    if end != len(line):
        raise RowError(None, f"not valid JSON: extra data after the value (column {end + 1})")
    return value

