"""The rules of input (schema.inputs) and the records that apply them: Sample, Chunk, Turn, Answer."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from ragcourt.schema import NORMAL, Answer, Chunk, Sample, Turn
from ragcourt.schema.inputs import (
    field_name,
    id_problem,
    refusal,
    required_text_problem,
    shown_or_empty,
    value_problems,
)


@pytest.mark.parametrize(("text", "problem"), [
    ("q1", None), ("问题-1 ✓", None), ("a\u200bb", None),
    ("", "is empty"), ("  ", "is empty"), ("\u200b\u200d", "is empty: it holds only invisible characters"),
    ("q1\nq2", "contains the control character U+000A; ids must be printable text"),
    ("q\x1b[31m", "contains the control character U+001B; ids must be printable text"),
    ("c1\x85", "contains the control character U+0085; ids must be printable text"),
    ("q\u2028x", "contains the control character U+2028; ids must be printable text"),
])
def test_an_id_is_printable_text_that_shows_something(text: str, problem: str | None) -> None:
    assert id_problem(text) == problem


def test_text_that_shows_nothing_is_refused_where_required_and_empty_where_optional() -> None:
    assert required_text_problem("Who?") is None and required_text_problem(" \t") == "is empty"
    assert required_text_problem("\ufeff\u2060") == (
        "is empty: it holds only invisible characters (zero-width spaces, joiners, marks)")
    assert (shown_or_empty("\u200b \u200e"), shown_or_empty("Pa\u200bris")) == ("", "Pa\u200bris")


def test_value_problems_name_every_bad_value_by_its_location() -> None:
    value = {"a": [1.0, float("nan")], "b": {"c": "ok\x00"}, "\ud800": 1, "d": float("-inf")}
    assert [(field_name(loc), problem.split(" (")[0]) for loc, problem, _ in value_problems(value)] == [
        ("a[1]", "is nan, not a finite number"), ("b.c", "contains a NUL character"),
        (None, "contains a lone surrogate"), ("d", "is -inf, not a finite number")]
    assert list(value_problems({"x": float("nan")}, finite=False)) == []


def test_a_sample_is_refused_with_the_field_and_words_of_each_problem() -> None:
    with pytest.raises(ValidationError) as caught:
        Sample(id="q", question="Who?", contexts=(Chunk(id="c", text="a"), Chunk(id="c", text="\u200b")),
               metadata={"score": float("inf")})
    assert [(field_name(e["loc"]), e["msg"].split(";")[0]) for e in caught.value.errors()] == [
        ("contexts[1].text", "is empty: it holds only invisible characters (zero-width spaces, joiners, marks)"),
        ("contexts[1].id", "repeats the id 'c' of contexts[0]"),
        ("metadata.score", "is inf, not a finite number (JSON has no NaN or Infinity)")]
    assert refusal(caught.value) == ("field 'contexts[1].text': is empty: it holds only invisible characters "
                                     "(zero-width spaces, joiners, marks)")
    with pytest.raises(ValidationError, match="history.1.content\n  is empty"):
        Sample(id="q", question="Who?", history=(Turn(role="user", content="Hi"), {"role": "user", "content": " "}))


def test_what_shows_nothing_is_kept_as_empty_or_left_out() -> None:
    sample = Sample(id="q", question="Who?", reference_answer=" \u200b", answer="\u200e",
                    gold_answers=("\u200b", "Paris"), gold_titles=("\ufeff",),
                    contexts=(Chunk(id="c", text="Paris.", title="\u2060"),))
    assert (sample.reference_answer, sample.answer, sample.gold_answers, sample.gold_titles) == ("", "", ("Paris",), ())
    assert sample.contexts is not None and sample.contexts[0].title == ""
    assert Answer(run_id="r", sample_id="q", condition=NORMAL, text="\u200b\n").text == ""
