"""The output schema as a request carries it: the tool's parameters, a json_schema response format, or the
JSON-mode instruction's text. Compacted (compact_schema) to the same valid instances in fewer tokens; replies are
still validated by the pydantic model itself."""

from __future__ import annotations

import functools
from typing import Any

from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel

from ragcourt.llm.cache import schema_json

# Keys whose value is one sub-schema, a name -> sub-schema mapping, or a list of sub-schemas: where compact_schema
# descends. Every other key holds a value (enum, const, default, required, description...), never rewritten, so a
# property named "title" or "default" is kept.
_SUBSCHEMA_KEYS = frozenset({"items", "additionalProperties", "not", "contains", "if", "then", "else"})
_SUBSCHEMA_MAPS = frozenset({"properties", "$defs", "definitions", "patternProperties"})
_SUBSCHEMA_LISTS = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
_NULL = {"type": "null"}


def _nullable_enum(options: list[Any]) -> dict[str, Any] | None:
    """`anyOf: [{enum: [...]}, {type: null}]` as one enum with null among its values, or None for any other anyOf.
    Its `type` goes: an enum's values say their type, and llama.cpp's grammar would read `["string", "null"]` as
    any string or null, dropping the enum (a nullable list or object keeps its anyOf for the same reason)."""
    if len(options) != 2 or _NULL not in options:
        return None
    other = options[1 - options.index(_NULL)]
    values = other.get("enum")
    if not isinstance(values, list) or set(other) - {"enum", "type"}:
        return None
    return {"enum": values if None in values else [*values, None]}


def _compact_node(node: dict[str, Any], *, root: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in node.items():
        if (key == "title" and not root) or (key == "default" and value is None):
            continue  # pydantic's name of a property or definition (its key says it); null, what leaving it out means
        if key in _SUBSCHEMA_KEYS and isinstance(value, dict):
            value = _compact_node(value, root=False)
        elif key in _SUBSCHEMA_MAPS and isinstance(value, dict):
            value = {name: _compact_node(sub, root=False) if isinstance(sub, dict) else sub for name, sub in value.items()}
        elif key in _SUBSCHEMA_LISTS and isinstance(value, list):
            value = [_compact_node(sub, root=False) if isinstance(sub, dict) else sub for sub in value]
        out[key] = value
    folded = _nullable_enum(out["anyOf"]) if isinstance(out.get("anyOf"), list) else None
    if folded is not None:
        out = {**{k: v for k, v in out.items() if k != "anyOf"}, **folded}
    return out


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON schema as a model is sent it (tool parameters, json_schema, the JSON-mode instruction): the same
    instances valid, fewer tokens. Titles below the root go, `default: null` goes, and a nullable enum is one enum
    with null; descriptions (they instruct the model) stay. Replies are still validated by the pydantic model."""
    return _compact_node(schema, root=True)


@functools.cache
def sent_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """compact_schema of the class's JSON schema, made once per class (see cache.schema_json). Do not mutate it."""
    return compact_schema(schema_json(schema))


@functools.cache
def openai_tool(schema: type[BaseModel]) -> dict[str, Any]:
    """The schema as an OpenAI tool, its parameters compacted (compact_schema), made once per class (see
    cache.schema_json). Do not mutate it."""
    # No description: the call names the tool it must use, and the prompt says what to put in it (the class's
    # docstring, which convert_to_openai_tool would send, is written for developers).
    tool = convert_to_openai_tool(schema)
    function = tool["function"]
    return {**tool, "function": {"name": function["name"], "parameters": compact_schema(function["parameters"])}}
