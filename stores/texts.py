"""Texts stored once: the long texts of records (chunks, answers, references, a judge's reply) in the `texts`
table, keyed by their hash, and referred to by that hash from the payloads of checks, verdicts, retrievals
and answers.

A chunk read by ten checks was stored ten times in their payloads, and again in the retrieval that found it;
now each payload holds the hash where the text was, and lists the fields it replaced under `@texts`, so a
reader puts the texts back before the record is validated and every caller gets the record that was written.
A payload without `@texts` (written before texts were shared) reads as it is. A field that holds an object
rather than a string (a diagnostics record's alignment graph) is stored as its JSON text.

`StoredForm` also leaves out of a payload the fields equal to their defaults (the record's validation puts them
back) where no SQL reads that table's payloads by field, and the fields the table's columns hold already (a
check's id, a verdict's judge), which the read puts back from the columns.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

TEXTS_KEY = "@texts"
# A text shorter than this stays in the payload: its hash (16 characters) and its path in `@texts` cost about as
# much as the text.
MIN_SHARED_LENGTH = 48
PUT_TEXT_SQL = "INSERT INTO texts (hash, body) VALUES (?, ?) ON CONFLICT (hash) DO NOTHING"
ZLIB_LEVEL = 6


def text_hash(text: str) -> str:
    """The key of a text in the `texts` table (16 hex digits, as the ids of checks)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def packed(text: str) -> bytes:
    """A text as stored: UTF-8, zlib-compressed (the `texts` table's bodies and the LLM cache's replies)."""
    return zlib.compress(text.encode("utf-8"), ZLIB_LEVEL)


def unpacked(body: bytes | memoryview) -> str:
    return zlib.decompress(body).decode("utf-8")


def _dumped(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class StoredForm:
    """How a record type's payload is written: `shared` are the dotted paths of its long texts (`*` for every
    item of a list, e.g. `chunks.*.text`), none within another (a text shared within an object shared whole
    would be found only once the object is read); `compact` leaves fields equal to their defaults out."""

    shared: tuple[str, ...] = ()
    compact: bool = False
    # top-level fields the table keeps in columns of the same name: left out, put back by the read (in SQL)
    in_columns: tuple[str, ...] = ()

    def encode(self, record: BaseModel) -> tuple[str, dict[str, str]]:
        """The payload, and the texts it refers to by hash -> text."""
        data = record.model_dump(mode="json", exclude_defaults=self.compact, exclude=set(self.in_columns))
        texts: dict[str, str] = {}
        paths: list[str] = []
        for pattern in self.shared:
            for path, parent, key in _places(data, pattern.split(".")):
                value = parent[key]
                text = value if isinstance(value, str) else _dumped(value) if value is not None else None
                if text is None or len(text) < MIN_SHARED_LENGTH:
                    continue
                digest = text_hash(text)
                texts[digest] = text
                parent[key] = digest if isinstance(value, str) else {"@json": digest}
                paths.append(path)
        if paths:
            data[TEXTS_KEY] = paths
        return _dumped(data), texts


def _places(node: Any, parts: Sequence[str], prefix: str = "") -> Iterable[tuple[str, Any, Any]]:
    """(path, container, key) of every value the pattern's parts reach in `node`."""
    head, rest = parts[0], parts[1:]
    if head == "*":
        items: Iterable[tuple[Any, Any]] = enumerate(node) if isinstance(node, list) else ()
    else:
        items = [(head, node[head])] if isinstance(node, dict) and head in node else []
    for key, value in items:
        path = f"{prefix}{key}"
        if rest:
            yield from _places(value, rest, path + ".")
        else:
            yield path, node, key


def _walk(node: Any, path: str) -> tuple[Any, Any] | None:
    """(container, key) of a concrete path, or None when the payload no longer holds it (a field a query left
    out, such as the alignment graph)."""
    parts = path.split(".")
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node.get(part) if isinstance(node, dict) else None
        if node is None:
            return None
    key: Any = int(parts[-1]) if isinstance(node, list) else parts[-1]
    if isinstance(node, dict) and key in node or isinstance(node, list) and key < len(node):
        return node, key
    return None


def shared_hashes(payload: dict[str, Any]) -> set[str]:
    """The hashes a parsed payload refers to."""
    found: set[str] = set()
    for path in payload.get(TEXTS_KEY, ()):
        place = _walk(payload, path)
        if place is not None:
            value = place[0][place[1]]
            found.add(value["@json"] if isinstance(value, dict) else value)
    return found


def restore(payload: dict[str, Any], texts: Mapping[str, str]) -> dict[str, Any]:
    """The payload with its texts put back (in place) and `@texts` removed."""
    for path in payload.pop(TEXTS_KEY, ()):
        place = _walk(payload, path)
        if place is None:
            continue
        parent, key = place
        value = parent[key]
        parent[key] = json.loads(texts[value["@json"]]) if isinstance(value, dict) else texts[value]
    return payload


def refers_to_texts(payload: str) -> bool:
    return f'"{TEXTS_KEY}"' in payload


def read_payloads(payloads: Sequence[str], lookup: Callable[[Sequence[str]], Mapping[str, str]]) -> list[Any]:
    """Each payload as the record's JSON text (str) when it refers to no text, else as a parsed dict with its
    texts put back; `lookup` gives the texts of a list of hashes."""
    parsed = {index: json.loads(payload) for index, payload in enumerate(payloads) if refers_to_texts(payload)}
    if not parsed:
        return list(payloads)
    wanted = sorted(set().union(*(shared_hashes(data) for data in parsed.values())))
    texts = lookup(wanted)
    missing = [digest for digest in wanted if digest not in texts]
    if missing:
        raise LookupError(f"the record store lacks {len(missing)} stored text(s), e.g. {missing[0]}")
    return [restore(parsed[index], texts) if index in parsed else payload for index, payload in enumerate(payloads)]
