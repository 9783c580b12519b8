"""Texts stored once (stores/texts.py): a payload refers to its long texts by hash and reads back whole."""

from __future__ import annotations

import json

import pytest

from ragcourt.schema import NORMAL, Chunk, Retrieval, SampleDiagnostics
from ragcourt.stores.texts import StoredForm, packed, read_payloads, text_hash, unpacked

LONG = "James Mercer Langston Hughes (February 1, 1902 - May 22, 1967) was an American poet."


def _retrieval(*texts: str) -> Retrieval:
    return Retrieval(run_id="r", sample_id="s", condition=NORMAL, made_by="m",
                     chunks=tuple(Chunk(id=f"c{n}", text=text, rank=n) for n, text in enumerate(texts, start=1)))


def test_long_texts_leave_the_payload_and_come_back() -> None:
    retrieval = _retrieval(LONG, "a short one", LONG + " Again.")
    payload, texts = StoredForm(shared=("chunks.*.text",), compact=True).encode(retrieval)
    data = json.loads(payload)
    assert data["@texts"] == ["chunks.0.text", "chunks.2.text"]
    assert [c["text"] for c in data["chunks"]] == [text_hash(LONG), "a short one", text_hash(LONG + " Again.")]
    assert texts == {text_hash(LONG): LONG, text_hash(LONG + " Again."): LONG + " Again."}
    assert "score" not in data["chunks"][0]  # compact: a default is left out
    (read,) = read_payloads([payload], lambda hashes: {h: texts[h] for h in hashes})
    assert Retrieval.model_validate(read) == retrieval


def test_a_payload_without_shared_texts_reads_as_it_is_and_asks_for_none() -> None:
    old = _retrieval(LONG).model_dump_json()

    def no_lookup(hashes: object) -> dict[str, str]:
        raise AssertionError("no text to look up")

    assert read_payloads([old], no_lookup) == [old]


def test_an_object_is_shared_as_its_json_and_skipped_when_a_query_left_it_out() -> None:
    graph = {"nodes": [{"id": "chunk:1", "text": LONG}], "links": []}
    diagnostics = SampleDiagnostics(run_id="r", sample_id="s", question="q", alignment_graph=graph)
    payload, texts = StoredForm(shared=("alignment_graph",)).encode(diagnostics)
    (read,) = read_payloads([payload], lambda hashes: {h: texts[h] for h in hashes})
    assert SampleDiagnostics.model_validate(read) == diagnostics
    without = json.loads(payload)
    del without["alignment_graph"]
    (read,) = read_payloads([json.dumps(without)], lambda hashes: {h: texts[h] for h in hashes})
    assert SampleDiagnostics.model_validate(read).alignment_graph is None


def test_a_missing_text_is_an_error_naming_it() -> None:
    payload, _ = StoredForm(shared=("chunks.*.text",)).encode(_retrieval(LONG))
    with pytest.raises(LookupError, match=text_hash(LONG)):
        read_payloads([payload], lambda hashes: {})


def test_packed_bodies_are_zlib_and_read_back() -> None:
    text = "ünïcode " * 40
    assert len(packed(text)) < len(text) // 4 and unpacked(memoryview(packed(text))) == text
