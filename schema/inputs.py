"""What makes a piece of a user's input usable: the rules every entry point applies, in one place.

A dataset file, the Python API, the LangChain callback handler and the live handler all end in a `Sample`
(schema.records), whose validators apply these rules, so each refuses the same input with the same words;
the file loaders add the file, line and field. Messages are the part after the field: "is empty",
"contains the control character U+000A; ids must be printable text".
This module imports nothing of ours.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterator
from typing import Any

from pydantic import ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

INPUT_ERROR = "invalid_input"  # the pydantic error type of every problem found here
# Unicode categories Cc (C0 and C1 controls, DEL) and Zl / Zp (U+2028, U+2029): each breaks or forges a line.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")

Loc = tuple[str | int, ...]


def shows_something(text: str) -> bool:
    """Whether `text` has a character that shows: not whitespace and not an invisible format character
    (Unicode category Cf: zero-width spaces and joiners, the BOM, direction marks). Stops at the first one."""
    if text[:1].isalnum():  # nearly every text: decided by its first character
        return True
    return any(not ch.isspace() and unicodedata.category(ch) != "Cf" for ch in text)


def shown_or_empty(text: str) -> str:
    """Optional text as kept: text that shows nothing is empty text (""), whatever invisible characters it held."""
    return text if shows_something(text) else ""


def required_text_problem(text: str) -> str | None:
    """Why `text` cannot stand where text is required (a question, a chunk's text, a turn), if it cannot."""
    if not text.strip():
        return "is empty"
    if not shows_something(text):
        return "is empty: it holds only invisible characters (zero-width spaces, joiners, marks)"
    return None


def id_problem(text: str) -> str | None:
    """Why `text` cannot be an id, if it cannot. An id is printed in result lines and tables: a newline (or a
    line separator) would forge a line, an escape colour the terminal."""
    if not shows_something(text):
        return "is empty" if not text.strip() else "is empty: it holds only invisible characters"
    control = _CONTROL.search(text)
    if control is not None:
        return f"contains the control character U+{ord(control.group()):04X}; ids must be printable text"
    return None


def text_problem(text: str) -> str | None:
    """What makes a string unusable as text anywhere, if anything: a lone surrogate (not encodable as UTF-8,
    it would break every store downstream) or a NUL character (an escaped "\\u0000" in JSON gets here)."""
    if text.isascii() and "\x00" not in text:  # nearly every string: no copy made
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "contains a lone surrogate (not valid Unicode text)"
    if "\x00" in text:
        return "contains a NUL character (\\u0000)"
    return None


def value_problem(value: Any, *, finite: bool = True) -> str | None:
    """The problem of one scalar (a string, a number, None), if any: see `text_problem`, and with `finite` a NaN
    or an infinity (which JSON does not allow, and a store would keep as null)."""
    if isinstance(value, str):
        return text_problem(value)
    if finite and isinstance(value, float) and not math.isfinite(value):
        return f"is {value}, not a finite number (JSON has no NaN or Infinity); write null or a number"
    return None


def value_problems(value: Any, loc: Loc = (), *, finite: bool = True) -> Iterator[tuple[Loc, str, Any]]:
    """(location, problem, value) of every scalar of `value`, nested in mappings and lists, that `value_problem`
    refuses; a mapping's key is refused at the mapping's location."""
    if isinstance(value, dict):  # JSON objects; not Mapping: its ABC check costs more than the walk
        for key, item in value.items():
            if isinstance(key, str) and (problem := text_problem(key)) is not None:
                yield loc, problem, key
            yield from value_problems(item, (*loc, str(key)), finite=finite)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from value_problems(item, (*loc, index), finite=finite)
    elif (problem := value_problem(value, finite=finite)) is not None:
        yield loc, problem, value


def input_error(message: str) -> PydanticCustomError:
    """A problem of one field as pydantic reports it: its words exactly, under the type INPUT_ERROR."""
    return PydanticCustomError(INPUT_ERROR, "{message}", {"message": message})


def line_error(loc: Loc, message: str, given: Any) -> InitErrorDetails:
    """A problem found by a model validator, at `loc` (pydantic prefixes the location of the record itself)."""
    return InitErrorDetails(type=input_error(message), loc=loc, input=given)


def field_name(loc: Loc) -> str | None:
    """A pydantic location in the loaders' words: ('contexts', 1, 'id') -> contexts[1].id."""
    name = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc).lstrip(".")
    return name or None


def refusal(error: ValidationError) -> str:
    """A sample's first refused field in the loaders' words, without their file and line:
    "field 'contexts[1].id': repeats the id 'c' of contexts[0]; ...". One line, whatever the input held."""
    first = error.errors(include_url=False)[0]
    name = field_name(first["loc"])
    return first["msg"] if name is None else f"field '{name}': {first['msg']}"
