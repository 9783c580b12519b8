"""The context-length guard and the grammar bounds of llm.local, with character counts as tokens
(so every expected string and budget below is computed by hand)."""

from __future__ import annotations

import pytest

from ragcourt.llm.local import (
    TEMPLATE_TOKENS_PER_MESSAGE,
    ContextOverflowError,
    ShownIds,
    Truncation,
    bounded_schema,
    fit_to_context,
    shown_ids,
)
from ragcourt.prompts.library import untrusted

PER_MESSAGE = TEMPLATE_TOKENS_PER_MESSAGE


def _note(removed: int, original: int) -> str:
    return (f"[... truncated by ragcourt: {removed} of {original} characters removed to fit the model's "
            "context window]")


def _cut(block: str, text: str, keep: int) -> str:
    """A block made by untrusted(text, ...) with its text cut to `keep` characters and marked."""
    start, end = block.split("\n")[0], block.split("\n")[-1]
    kept = text[:keep]
    return f"{start}\n{kept}{chr(10) if kept else ''}{_note(len(text) - keep, len(text))}\n{end}"


QUESTION = "what is X?"
LONG, SHORT = "A" * 1000, "B" * 450
Q_BLOCK, LONG_BLOCK, SHORT_BLOCK = untrusted(QUESTION, "QUESTION"), untrusted(LONG, "CHUNK"), untrusted(SHORT, "CHUNK")
SYSTEM = "You judge."
USER = f"Question:\n{Q_BLOCK}\nChunks:\n[ctx_0] {LONG_BLOCK}\n[ctx_1] {SHORT_BLOCK}\nAnswer as JSON."


def test_a_prompt_that_fits_is_sent_unchanged() -> None:
    budget = len(SYSTEM) + len(USER) + 2 * PER_MESSAGE
    assert fit_to_context([SYSTEM, USER], len, budget) == ([SYSTEM, USER], [])


def test_longest_evidence_blocks_are_cut_from_their_end_to_a_common_cap_and_marked() -> None:
    # With a cap of 300 characters: the 1000-character chunk keeps 300, the 450-character one keeps 300,
    # the question (a kept label) is untouched, instructions and ids are untouched.
    expected_user = USER.replace(LONG_BLOCK, _cut(LONG_BLOCK, LONG, 300)).replace(
        SHORT_BLOCK, _cut(SHORT_BLOCK, SHORT, 300)
    )
    budget = len(SYSTEM) + len(expected_user) + 2 * PER_MESSAGE
    contents, cuts = fit_to_context([SYSTEM, USER], len, budget)
    assert contents == [SYSTEM, expected_user]
    assert cuts == [Truncation(1, "CHUNK", 300, 1000), Truncation(1, "CHUNK", 300, 450)]
    assert Q_BLOCK in contents[1]
    # One character less of budget: the cap drops to 299 (each block loses one more character).
    smaller = USER.replace(LONG_BLOCK, _cut(LONG_BLOCK, LONG, 299)).replace(
        SHORT_BLOCK, _cut(SHORT_BLOCK, SHORT, 299)
    )
    assert fit_to_context([SYSTEM, USER], len, budget - 1)[0] == [SYSTEM, smaller]


def test_a_short_block_under_the_cap_stays_whole() -> None:
    # Cap 500: the 450-character chunk is shorter, so only the long one is cut.
    expected_user = USER.replace(LONG_BLOCK, _cut(LONG_BLOCK, LONG, 500))
    budget = len(SYSTEM) + len(expected_user) + 2 * PER_MESSAGE
    contents, cuts = fit_to_context([SYSTEM, USER], len, budget)
    assert contents == [SYSTEM, expected_user]
    assert cuts == [Truncation(1, "CHUNK", 500, 1000)]


def test_kept_labels_are_cut_only_when_emptying_the_evidence_is_not_enough() -> None:
    items = untrusted("C" * 600, "ITEM")
    evidence = untrusted("D" * 200, "TARGET")
    user = f"Items:\n[C1] {items}\nEvidence:\n{evidence}"
    # Evidence emptied, then the item cut to 250 characters.
    expected = user.replace(evidence, _cut(evidence, "D" * 200, 0)).replace(items, _cut(items, "C" * 600, 250))
    budget = len(expected) + PER_MESSAGE
    contents, cuts = fit_to_context([user], len, budget)
    assert contents == [expected]
    assert cuts == [Truncation(0, "TARGET", 0, 200), Truncation(0, "ITEM", 250, 600)]  # evidence first


def test_instructions_that_alone_exceed_the_budget_raise_a_clear_error() -> None:
    with pytest.raises(ContextOverflowError, match="use a larger n_ctx"):
        fit_to_context(["x" * 50, USER], len, 40)


def test_bounded_schema_bounds_only_unbounded_strings_and_lists() -> None:
    schema = {
        "type": "object",
        "properties": {
            "judgements": {"type": "array", "items": {"$ref": "#/$defs/Item"}},
            "tags": {"type": "array", "maxItems": 3, "items": {"type": "string", "maxLength": 9}},
            "verdict": {"type": "string", "enum": ["yes", "no"]},
        },
        "$defs": {"Item": {"type": "object", "properties": {"reasoning": {"type": "string"}}}},
    }
    bounded = bounded_schema(schema, max_string_chars=400, max_list_items=24)
    assert bounded["properties"]["judgements"]["maxItems"] == 24
    assert bounded["properties"]["tags"] == {"type": "array", "maxItems": 3, "items": {"type": "string", "maxLength": 9}}
    assert bounded["properties"]["verdict"] == {"type": "string", "enum": ["yes", "no"]}
    assert bounded["$defs"]["Item"]["properties"]["reasoning"] == {"type": "string", "maxLength": 400}
    assert "maxItems" not in schema["properties"]["judgements"]  # the input is not changed


def test_ids_shown_in_the_prompt_bound_the_reply() -> None:
    prompt = (f"Question:\n{untrusted('q', 'QUESTION')}\nClaims:\n[C1] {untrusted('a', 'ITEM')}\n"
              f"[C2] {untrusted('b', 'ITEM')}\nChunks:\n[ctx_0] title: Paris\n{untrusted('x', 'CHUNK')}\n\n"
              f"[ctx_1]\n{untrusted('y', 'CHUNK')}")
    shown = shown_ids(["You judge.", prompt])
    assert shown == ShownIds(items=("C1", "C2"), targets=("ctx_0", "ctx_1"))
    schema = {
        "type": "object",
        "properties": {"judgements": {"type": "array", "items": {"$ref": "#/$defs/Links"}}},
        "$defs": {"Links": {"type": "object", "properties": {
            "item_id": {"type": "string"}, "ids": {"type": "array", "items": {"type": "string"}},
        }}},
    }
    bounded = bounded_schema(schema, max_string_chars=300, max_list_items=8, shown=shown)
    assert bounded["properties"]["judgements"]["maxItems"] == 2
    assert bounded["$defs"]["Links"]["properties"] == {
        "item_id": {"type": "string", "enum": ["C1", "C2"]},
        "ids": {"type": "array", "items": {"type": "string", "enum": ["ctx_0", "ctx_1"]}, "maxItems": 2},
    }
    # Without ids in the prompt, only the default bounds apply.
    plain = bounded_schema(schema, max_string_chars=300, max_list_items=8)
    assert plain["properties"]["judgements"]["maxItems"] == 8
    assert plain["$defs"]["Links"]["properties"]["item_id"] == {"type": "string", "maxLength": 300}
