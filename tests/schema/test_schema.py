"""The shared records: content-addressed ids, condition keys, verdict and metric validation, immutability."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from ragcourt.schema import (
    CLOSED_BOOK,
    NORMAL,
    ORACLE,
    Answer,
    Check,
    CheckKind,
    Chunk,
    Condition,
    ConditionKind,
    ConfidenceSource,
    Decomposition,
    DecompositionKind,
    Label,
    MetricValue,
    PerturbationEffect,
    Sample,
    TokenUsage,
    TraceSource,
    UnscoredReason,
    Verdict,
    VerdictStatus,
    content_id,
)

CHECK_INPUTS: dict[str, Any] = {
    "kind": CheckKind.CLAIM_SUPPORTED,
    "sample_id": "s1",
    "condition": NORMAL,
    "subject_id": "claim-1",
    "subject_text": "Paris is the capital of France.",
    "target_id": "chunk-7",
    "target_text": "Paris has been the French capital since 987.",
    "question": "What is the capital of France?",
    "dimension": None,
    "reference": None,
}


def make_check(**changes: Any) -> Check:
    return Check(**{**CHECK_INPUTS, **changes})


# --------------------------------------------------------------------------- content ids


def test_content_id_is_16_hex_digits_and_ignores_dict_key_order() -> None:
    first = content_id("x", {"a": 1, "b": 2})
    assert len(first) == 16 and int(first, 16) >= 0
    assert content_id("x", {"b": 2, "a": 1}) == first
    assert content_id({"a": 1, "b": 2}, "x") != first  # order of parts matters


def test_check_id_is_the_same_for_the_same_inputs() -> None:
    assert make_check().id == make_check().id
    assert len(make_check().id) == 16


@pytest.mark.parametrize(
    "change",
    [
        {"kind": CheckKind.ELEMENT_IN_CONTEXT},
        {"sample_id": "s2"},
        {"condition": CLOSED_BOOK},
        {"condition": Condition(kind=ConditionKind.REMOVE, chunk_id="chunk-7")},
        {"subject_text": "Paris is the capital of Spain."},
        {"target_id": "chunk-8"},
        {"target_text": "Lyon is a city in France."},
        {"question": "Which city is the capital of France?"},
        {"dimension": "relevance"},
        {"reference": "Paris"},
    ],
    ids=lambda change: next(iter(change)),
)
def test_check_id_changes_with_every_hashed_input(change: dict[str, Any]) -> None:
    assert make_check(**change).id != make_check().id


def test_check_id_is_the_hash_of_its_inputs() -> None:
    expected = content_id(
        "check", CheckKind.CLAIM_SUPPORTED, "s1", "normal", "Paris is the capital of France.", "chunk-7",
        "Paris has been the French capital since 987.", "What is the capital of France?", None, None,
    )
    assert make_check().id == expected  # no evidence: evidence is not part of the hash
    assert make_check(subject_id="claim-2").id == expected  # the same text is the same check


def test_evidence_changes_the_check_id_only_when_given() -> None:
    with_evidence = make_check(kind=CheckKind.PAIRWISE, evidence="[ctx_0] Paris is the capital.")
    assert with_evidence.id != make_check(kind=CheckKind.PAIRWISE).id
    assert with_evidence.id != make_check(kind=CheckKind.PAIRWISE, evidence="other chunks").id


def test_remove_of_different_chunks_gives_different_check_ids() -> None:
    removed_a = make_check(condition=Condition(kind=ConditionKind.REMOVE, chunk_id="a"))
    removed_b = make_check(condition=Condition(kind=ConditionKind.REMOVE, chunk_id="b"))
    assert removed_a.id != removed_b.id


def test_an_explicit_check_id_is_kept() -> None:
    assert make_check(id="given-id").id == "given-id"


def test_check_round_trips_through_json_with_its_id() -> None:
    check = make_check()
    again = Check.model_validate_json(check.model_dump_json())
    assert again == check and again.id == check.id


def test_decomposition_make_id_is_stable_and_input_sensitive() -> None:
    base = ("Paris. France.", "hash-1", "model-a")
    first = Decomposition.make_id(DecompositionKind.ELEMENTS, *base)
    assert first == Decomposition.make_id(DecompositionKind.ELEMENTS, *base)
    assert first == content_id("decomposition", DecompositionKind.ELEMENTS, *base)
    variants = {
        Decomposition.make_id(DecompositionKind.CLAIMS, *base),
        Decomposition.make_id(DecompositionKind.ELEMENTS, "Paris.", "hash-1", "model-a"),
        Decomposition.make_id(DecompositionKind.ELEMENTS, "Paris. France.", "hash-2", "model-a"),
        Decomposition.make_id(DecompositionKind.ELEMENTS, "Paris. France.", "hash-1", "model-b"),
    }
    assert first not in variants and len(variants) == 4


def test_sample_content_hash_follows_the_content() -> None:
    sample = Sample(id="s1", question="Who?")
    assert sample.content_hash == Sample(id="s1", question="Who?").content_hash
    assert sample.content_hash != Sample(id="s1", question="Who?", answer="Me").content_hash


# --------------------------------------------------------------------------- conditions


@pytest.mark.parametrize(
    ("key", "kind", "chunk_id"),
    [
        ("normal", ConditionKind.NORMAL, None),
        ("loose", ConditionKind.LOOSE, None),
        ("closed_book", ConditionKind.CLOSED_BOOK, None),
        ("oracle", ConditionKind.ORACLE, None),
        ("remove:doc-3", ConditionKind.REMOVE, "doc-3"),
        ("replace:doc-3", ConditionKind.REPLACE, "doc-3"),
        ("duplicate:a:b", ConditionKind.DUPLICATE, "a:b"),  # only the first ':' separates
    ],
)
def test_condition_parse_and_key_round_trip(key: str, kind: ConditionKind, chunk_id: str | None) -> None:
    condition = Condition.parse(key)
    assert (condition.kind, condition.chunk_id) == (kind, chunk_id)
    assert condition.key == key and str(condition) == key
    assert Condition.parse(condition.key) == condition


def test_condition_constants() -> None:
    assert (NORMAL.key, CLOSED_BOOK.key, ORACLE.key) == ("normal", "closed_book", "oracle")


@pytest.mark.parametrize("key", ["remove", "replace:", "duplicate"])
def test_a_perturbation_needs_a_chunk_id(key: str) -> None:
    with pytest.raises(ValidationError, match="needs a chunk_id"):
        Condition.parse(key)


@pytest.mark.parametrize("kind", [ConditionKind.NORMAL, ConditionKind.ORACLE, ConditionKind.LOOSE])
def test_a_plain_condition_refuses_a_chunk_id(kind: ConditionKind) -> None:
    with pytest.raises(ValidationError, match="takes no chunk_id"):
        Condition(kind=kind, chunk_id="doc-1")


def test_an_unknown_condition_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="'shuffle' is not a valid ConditionKind"):
        Condition.parse("shuffle:doc-1")


def test_only_remove_replace_duplicate_are_perturbations() -> None:
    assert {k for k in ConditionKind if k.is_perturbation} == {
        ConditionKind.REMOVE, ConditionKind.REPLACE, ConditionKind.DUPLICATE,
    }


# --------------------------------------------------------------------------- verdicts and metrics


def test_unscored_verdict_needs_a_reason() -> None:
    with pytest.raises(ValidationError, match="needs a reason"):
        Verdict(check_id="c", judge_id="j", status=VerdictStatus.UNSCORED)


@pytest.mark.parametrize("decision", [{"label": Label.NO}, {"score": 0.0}])
def test_unscored_verdict_carries_no_label_or_score(decision: dict[str, Any]) -> None:
    with pytest.raises(ValidationError, match="carries no label or score"):
        Verdict(
            check_id="c", judge_id="j", status=VerdictStatus.UNSCORED,
            unscored_reason=UnscoredReason.PARSE_FAILURE, **decision,
        )


def test_scored_verdict_needs_a_label_or_a_score() -> None:
    with pytest.raises(ValidationError, match="needs a label or a score"):
        Verdict(check_id="c", judge_id="j", status=VerdictStatus.OK)


def test_valid_verdicts() -> None:
    labelled = Verdict(check_id="c", judge_id="j", status=VerdictStatus.OK, label=Label.YES)
    scored = Verdict(check_id="c", judge_id="j", status=VerdictStatus.OK, score=7.0)
    unscored = Verdict(
        check_id="c", judge_id="j", status=VerdictStatus.UNSCORED, unscored_reason=UnscoredReason.TIMEOUT
    )
    assert (labelled.scored, scored.scored, unscored.scored) == (True, True, False)
    assert scored.score == 7.0 and unscored.label is None and unscored.score is None


def test_metric_na_needs_a_reason() -> None:
    with pytest.raises(ValidationError, match="metric c_prec is n/a without a reason"):
        MetricValue(name="c_prec", value=None)
    with pytest.raises(ValidationError, match="n/a without a reason"):
        MetricValue(name="c_prec", value=None, na_reason="")
    na = MetricValue(name="c_prec", value=None, na_reason="no chunks retrieved")
    assert na.value is None and na.na_reason == "no chunks retrieved"
    assert MetricValue(name="c_prec", value=0.0).value == 0.0  # zero is a value, not n/a


# --------------------------------------------------------------------------- immutability and usage


@pytest.mark.parametrize(
    ("record", "field", "value"),
    [
        (Chunk(id="c", text="t"), "text", "u"),
        (NORMAL, "kind", ConditionKind.ORACLE),
        (make_check(), "subject_text", "other"),
        (Verdict(check_id="c", judge_id="j", status=VerdictStatus.OK, label=Label.YES), "label", Label.NO),
        (TokenUsage(), "calls", 3),
        (MetricValue(name="m", value=1.0), "value", 2.0),
    ],
    ids=lambda item: type(item).__name__ if not isinstance(item, str | int | float) else str(item),
)
def test_records_are_frozen(record: Any, field: str, value: Any) -> None:
    with pytest.raises(ValidationError, match="frozen"):
        setattr(record, field, value)


def test_records_refuse_unknown_fields() -> None:
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        Chunk(id="c", text="t", colour="red")


def test_token_usage_addition() -> None:
    total = TokenUsage(prompt_tokens=10, completion_tokens=3, calls=1) + TokenUsage(
        prompt_tokens=5, completion_tokens=2, calls=1, cached_calls=4
    )
    assert total == TokenUsage(prompt_tokens=15, completion_tokens=5, calls=2, cached_calls=4)
    assert TokenUsage() + TokenUsage() == TokenUsage()


# --------------------------------------------------------------------------- CUE-R trace and confidence sources


def test_an_answer_stored_before_the_sources_reads_as_the_systems_report() -> None:
    old = '{"run_id": "r", "sample_id": "s", "condition": {"kind": "normal"}, "text": "x", "used_chunk_ids": ["c1"]}'
    answer = Answer.model_validate_json(old)
    assert (answer.trace_source, answer.confidence_source) == (TraceSource.REPORTED, ConfidenceSource.NONE)
    with_confidence = Answer.model_validate_json(old[:-1] + ', "confidence": 0.4}')
    assert with_confidence.confidence_source is ConfidenceSource.REPORTED
    effect = PerturbationEffect.model_validate_json('{"condition": {"kind": "remove", "chunk_id": "c1"}}')
    assert (effect.trace_source, effect.grounding, effect.trace_unscored) == (TraceSource.REPORTED, None, 0)


@pytest.mark.parametrize("fields", [
    {"trace_source": TraceSource.JUDGED},  # judged by the scorer, never by the system
    {"trace_source": TraceSource.NONE, "used_chunk_ids": ("c1",)},
    {"confidence": 0.5, "confidence_source": ConfidenceSource.NONE},
])
def test_answer_sources_must_match_their_values(fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Answer(run_id="r", sample_id="s", condition=NORMAL, text="x", **fields)
