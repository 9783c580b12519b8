"""Find the JSON schema a client embedded in a prompt (JSON mode has no schema name on the wire)."""

from __future__ import annotations

import json
from typing import Any

_DECODER = json.JSONDecoder()


def find_json_schema(text: str) -> dict[str, Any] | None:
    """The first JSON object in `text` that looks like a JSON schema of an object (has properties)."""
    start = text.find("{")
    while start != -1:
        try:
            candidate, _ = _DECODER.raw_decode(text, start)
        except json.JSONDecodeError:
            candidate = None
        if isinstance(candidate, dict) and isinstance(candidate.get("properties"), dict):
            return candidate
        start = text.find("{", start + 1)
    return None
