"""sent_schema.compact_schema: the JSON schema a model is sent (tool parameters, json_schema, the JSON-mode instruction)
takes fewer tokens and accepts exactly the instances the full schema accepts."""

from __future__ import annotations

import json
from typing import Any, Literal

import pytest
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, Field

from ragcourt.judging.combined_checks import CombinedJudgements, CombinedReferenceJudgements
from ragcourt.judging.decomposers import JointSplit
from ragcourt.llm.sent_schema import compact_schema, openai_tool, sent_schema


class Inner(BaseModel):
    title: str = Field(description="a property named title")
    default: int | None = None


class Reply(BaseModel):
    """A reply."""

    decision: Literal["yes", "no"] | None = Field(default=None, description="the decision")
    ids: list[str] | None = None
    inner: Inner | None = None
    count: int = 3


def test_titles_below_the_root_and_null_defaults_go_descriptions_and_property_names_stay() -> None:
    schema = compact_schema(Reply.model_json_schema())
    assert schema["title"] == "Reply" and schema["description"] == "A reply."
    assert schema["$defs"]["Inner"] == {  # "title" and "default" here are property names, not keywords
        "properties": {"title": {"description": "a property named title", "type": "string"},
                       "default": {"anyOf": [{"type": "integer"}, {"type": "null"}]}},
        "required": ["title"], "type": "object"}
    assert schema["properties"]["count"] == {"default": 3, "type": "integer"}  # a real default is kept


def test_a_nullable_enum_is_one_enum_with_null_and_other_nullables_keep_their_any_of() -> None:
    properties = compact_schema(Reply.model_json_schema())["properties"]
    assert properties["decision"] == {"description": "the decision", "enum": ["yes", "no", None]}
    # No type lists: llama.cpp's grammar reads ["array", "null"] as any array or null, dropping "items".
    assert properties["ids"] == {"anyOf": [{"items": {"type": "string"}, "type": "array"}, {"type": "null"}]}
    assert properties["inner"] == {"anyOf": [{"$ref": "#/$defs/Inner"}, {"type": "null"}]}


def test_the_tool_keeps_its_name_drops_the_developers_docstring_and_sends_compacted_parameters() -> None:
    full = convert_to_openai_tool(JointSplit)
    tool = openai_tool(JointSplit)
    assert tool["type"] == "function" and set(tool["function"]) == {"name", "parameters"}
    assert tool["function"]["name"] == "JointSplit"
    assert tool["function"]["parameters"] == compact_schema(full["function"]["parameters"])
    assert len(json.dumps(tool)) < len(json.dumps(full))


INSTANCES: list[dict[str, Any]] = [
    {},
    {"elements": [], "subqueries": [], "claims": []},
    {"elements": [{"item_id": "E1", "reasoning": "r", "in_context": "yes", "in_answer": None, "chunk_ids": ["ctx_0"]}]},
    {"elements": [{"item_id": "E1", "reasoning": "r", "in_context": "maybe"}]},
    {"elements": [{"item_id": "E1", "reasoning": "r", "in_answer": 1}]},
    {"subqueries": [{"item_id": "Q1", "reasoning": "r", "chunk_ids": None, "answered": "no"}]},
    {"subqueries": [{"item_id": "Q1", "reasoning": "r", "chunk_ids": [0]}]},
    {"subqueries": [{"item_id": "Q1", "chunk_ids": []}]},
    {"claims": [{"item_id": "C1", "reasoning": "r", "supporting_chunk_ids": [], "served_subquery_ids": ["Q1"],
                 "in_reference": "no"}]},
    {"claims": [{"item_id": "C1", "reasoning": "r", "in_reference": "No"}]},
    {"claims": None},
]


@pytest.mark.parametrize("schema", [CombinedJudgements, CombinedReferenceJudgements, JointSplit, Reply])
def test_the_compacted_schema_accepts_exactly_what_the_full_one_accepts(schema: type[BaseModel]) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    full, sent = schema.model_json_schema(), sent_schema(schema)
    tool_full = convert_to_openai_tool(schema)["function"]["parameters"]
    tool_sent = openai_tool(schema)["function"]["parameters"]
    instances = [*INSTANCES, {"query_type": "multi_step", "sub_queries": ["a"], "elements": None},
                 {"query_type": None}, {"query_type": "other"}, {"decision": None, "ids": ["a"], "count": 1},
                 {"decision": "maybe"}, {"inner": {"title": "t", "default": None}}, {"inner": {"default": 1}}]
    for instance in instances:
        assert jsonschema.Draft202012Validator(full).is_valid(instance) == (
            jsonschema.Draft202012Validator(sent).is_valid(instance)), instance
        assert jsonschema.Draft202012Validator(tool_full).is_valid(instance) == (
            jsonschema.Draft202012Validator(tool_sent).is_valid(instance)), instance
