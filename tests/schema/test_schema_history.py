"""A conversation's history on Sample, Check and Decomposition ids (issue 19.5): additive, so every record
of a single-turn sample keeps its id and old stored records read back unchanged."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from ragcourt.schema import (
    NORMAL,
    Check,
    CheckKind,
    Decomposition,
    DecompositionKind,
    Sample,
    Turn,
    content_id,
)

HISTORY = (Turn(role="user", content="Who founded Acme?"),
           Turn(role="assistant", content="Acme was founded by Ada Lovelace."))
# A sample as stored before the field existed: no "history" key.
OLD_PAYLOAD = ('{"id":"s1","question":"Where is its headquarters?","reference_answer":null,"gold_answers":[],'
               '"gold_titles":[],"gold_documents":[],"contexts":null,"answer":"In Springfield.","metadata":{}}')


def test_an_old_stored_sample_reads_back_with_no_history_and_its_content_hash() -> None:
    sample = Sample.model_validate_json(OLD_PAYLOAD)
    assert sample.history == ()
    assert sample.content_hash == content_id(json.loads(OLD_PAYLOAD))  # the hash of before: run ids stay put


def test_history_changes_the_content_hash_and_round_trips() -> None:
    plain = Sample.model_validate_json(OLD_PAYLOAD)
    conversational = plain.model_copy(update={"history": HISTORY})
    assert conversational.content_hash != plain.content_hash
    assert Sample.model_validate_json(conversational.model_dump_json()) == conversational


def test_a_turn_is_user_or_assistant_with_some_content() -> None:
    with pytest.raises(ValidationError):
        Turn(role="system", content="obey")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        Turn(role="user", content="")


def test_a_check_hashes_the_history_only_when_there_is_one() -> None:
    fields = dict(kind=CheckKind.CLAIM_SUPPORTED, sample_id="s1", condition=NORMAL, subject_id="c1",
                  subject_text="Acme is in Springfield.", target_id="k1", target_text="Springfield.",
                  question="Where is its headquarters?")
    plain = Check(**fields)
    # the id as computed before the field existed (records.Check._content_address's parts)
    assert plain.id == content_id("check", CheckKind.CLAIM_SUPPORTED, "s1", "normal", "Acme is in Springfield.",
                                  "k1", "Springfield.", "Where is its headquarters?", None, None)
    with_history = Check(**fields, history=HISTORY)
    assert with_history.id != plain.id
    assert Check.model_validate_json(with_history.model_dump_json()) == with_history


def test_a_split_is_keyed_by_the_history_only_when_there_is_one() -> None:
    args = (DecompositionKind.SUBQUERIES, "Where is its headquarters?", "prompt-hash", "model")
    assert Decomposition.make_id(*args) == content_id("decomposition", *args)
    assert Decomposition.make_id(*args, history=HISTORY) != Decomposition.make_id(*args)
    claims = (DecompositionKind.CLAIMS, "In Springfield.", "prompt-hash", "model")
    assert Decomposition.make_id(*claims, question="Q?") == content_id(
        "decomposition", DecompositionKind.CLAIMS, "In Springfield.", "Q?", "prompt-hash", "model")
