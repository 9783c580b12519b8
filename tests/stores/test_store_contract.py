"""The store contract: every backend (SQLite file, PostgreSQL database) gives the same answers.

Each test runs once per backend (`store_location`, tests/stores/conftest.py); test_records.py's store
tests and test_records_aggregates.py run the same way. Here: pinned splits, the JSON-path reads, the LLM
cache, two stores on one location (two processes), version refusal, and LangGraph checkpoints.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from ragcourt.schema import (
    CLOSED_BOOK,
    NORMAL,
    SCHEMA_VERSION,
    Answer,
    Check,
    CheckKind,
    Chunk,
    Decomposition,
    DecompositionKind,
    Label,
    Reconciled,
    ReconcileMethod,
    Retrieval,
    Sample,
    SampleDiagnostics,
    UnscoredReason,
    Verdict,
    VerdictStatus,
)
from ragcourt.stores import (
    CacheEntry,
    RecordStore,
    StoreVersionError,
    async_saver,
    is_postgres_url,
    postgres_saver,
    sqlite_saver,
)


def _check(n: int, sample_id: str = "s1") -> Check:
    return Check(kind=CheckKind.CLAIM_SUPPORTED, sample_id=sample_id, condition=NORMAL, subject_id=f"c{n}",
                 subject_text=f"claim {n}", target_id="chunk", target_text="text")


def _split(text: str, kind: DecompositionKind = DecompositionKind.CLAIMS, *items: str) -> Decomposition:
    return Decomposition(id=f"{kind}-{text}", kind=kind, source_text=text, items=items or (text,),
                         prompt_hash="p", model_id="m")


@pytest.fixture
def store(store_location: str) -> Iterator[RecordStore]:
    with RecordStore(store_location) as opened:
        yield opened


def test_the_location_picks_the_backend(store: RecordStore, store_location: str) -> None:
    if is_postgres_url(store_location):
        assert store.path is None and store.url == store_location
    else:
        assert store.url is None and str(store.path) == store_location


async def test_pinned_splits_keep_the_first_unless_replaced_and_copy_to_another_run(store: RecordStore) -> None:
    first, second, elements = _split("a"), _split("b"), _split("e", DecompositionKind.ELEMENTS)
    await store.apin_split("r1", "s1", first)
    await store.apin_split("r1", "s1", second)  # the first pinned stays
    await store.apin_split("r1", "s1", elements)
    await store.apin_split("r1", "s2", first)
    assert store.pinned_splits("r1", "s1") == [first, elements]  # ordered by kind
    await store.apin_split("r1", "s1", second, replace=True)
    assert store.pinned_splits("r1", "s1") == [second, elements]
    assert store.pinned_sample_ids("r1") == {"s1", "s2"}
    assert store.pinned_split_kinds("r1") == {"s1": {"claims", "elements"}, "s2": {"claims"}}
    store.copy_pinned_splits("r1", "r2", ["s1", "missing"])
    store.copy_pinned_splits("r1", "r2", ["s1"])  # again: no duplicate, no error
    assert store.pinned_splits("r2", "s1") == [second, elements] and store.pinned_sample_ids("r2") == {"s1"}


def test_frozen_split_keeps_the_first_machine_split_and_takes_an_edit(store: RecordStore) -> None:
    machine = _split("t", DecompositionKind.ELEMENTS, "a")
    other = machine.model_copy(update={"items": ("z",)})
    edited = machine.model_copy(update={"items": ("a", "b"), "edited": True})
    store.put(machine)
    store.put(other)
    assert store.get_decomposition(machine.id) == machine
    store.put(edited)
    store.put(other)
    assert store.get_decomposition(machine.id) == edited


def test_json_path_reads(store: RecordStore) -> None:
    samples = [Sample(id=f"s{n}", question=f"question {n}? ünïcode") for n in (3, 1, 2)]
    store.put_samples("r1", samples)
    assert store.sample_questions("r1") == [(s.id, s.question) for s in samples]  # stored order
    assert store.get_samples("r1", ["s2", "s3"]) == [samples[0], samples[2]]
    ok = Answer(run_id="r1", sample_id="s1", condition=NORMAL, text="yes")
    timeout = Answer(run_id="r1", sample_id="s2", condition=NORMAL, text="", status=VerdictStatus.UNSCORED,
                     unscored_reason=UnscoredReason.TIMEOUT)
    parse = Answer(run_id="r1", sample_id="s3", condition=NORMAL, text="", status=VerdictStatus.UNSCORED,
                   unscored_reason=UnscoredReason.PARSE_FAILURE)
    checks = [_check(1, "s1"), _check(2, "s3")]
    store.put(ok, timeout, parse, *checks)
    store.link_checks("r1", "s1", [checks[0].id])
    store.link_checks("r1", "s3", [checks[1].id])
    store.put(Verdict(check_id=checks[1].id, judge_id="j", status=VerdictStatus.UNSCORED,
                      unscored_reason=UnscoredReason.ERROR),
              Verdict(check_id=checks[0].id, judge_id="other", status=VerdictStatus.UNSCORED,
                      unscored_reason=UnscoredReason.TIMEOUT))
    assert store.answered_sample_ids("r1", NORMAL) == {"s1"}
    # s2: a timed-out answer; s3: the jury's verdict failed with an error; s1's timeout is another judge's
    assert store.transient_sample_ids("r1", ["j"]) == {"s2", "s3"}
    assert store.checks_of_samples("r1", ["s3", "s1"]) == checks
    graph = {"nodes": [{"id": "n1"}], "edges": []}
    with_graph = SampleDiagnostics(run_id="r1", sample_id="s1", question="q", alignment_graph=graph)
    store.put(with_graph)
    assert store.get_diagnostics("r1")[0].alignment_graph == graph
    assert store.get_diagnostics_without_graphs("r1") == [with_graph.model_copy(update={"alignment_graph": None})]


def test_empty_answers_count_the_scored_normal_answers_that_show_nothing(store: RecordStore) -> None:
    def answer(sample_id: str, text: str, **fields: object) -> Answer:
        return Answer(run_id="r1", sample_id=sample_id, condition=fields.pop("condition", NORMAL), text=text,
                      **fields)

    store.put(answer("s1", ""), answer("s2", "\u200b \u200e"), answer("s3", "Paris"),
              answer("s4", "", status=VerdictStatus.UNSCORED, unscored_reason=UnscoredReason.TIMEOUT),
              answer("s5", "", condition=CLOSED_BOOK), Answer(run_id="r2", sample_id="s1", condition=NORMAL, text=""))
    assert [a.text for a in store.get_answers("r1", "s2")] == [""]  # one empty answer, however it was written
    assert store.count_empty_answers("r1") == 2  # not the failed answer, not another condition, not another run


async def test_checks_stored_and_linked_together_or_linked_alone_from_async_code(store: RecordStore) -> None:
    checks = [_check(1), _check(2)]
    await asyncio.gather(store.aput_checks("r1", "s1", checks), store.aput_checks("r1", "s2", []))  # one commit
    await store.alink_checks("r2", "s1", [checks[1].id, checks[1].id])
    await store.alink_checks("r2", "s1", [])
    assert store.checks_for("r1", "s1") == checks and store.checks_for("r1", "s2") == []
    assert store.checks_for("r2") == [checks[1]]  # linked once, stored by the first run


def test_reconciled_of_checks_in_stored_order(store: RecordStore) -> None:
    checks = [_check(n) for n in range(3)]
    reconciled = [Reconciled(run_id="r1", check_id=c.id, kind=c.kind, sample_id="s1", label=Label.YES,
                             method=ReconcileMethod.MAJORITY, n_scored=1, n_unscored=0) for c in checks]
    store.put(*reconciled)
    assert store.reconciled_of_checks("r1", [checks[2].id, checks[0].id, "missing"]) == [reconciled[0], reconciled[2]]


async def test_llm_cache_async_and_frame(store: RecordStore) -> None:
    await asyncio.gather(*(store.acache_put(f"k{n}", f"v{n}") for n in range(50)))
    await store.acache_put("k7", "seven")
    assert await store.acache_get("k7") == "seven" and await store.acache_get("absent") is None
    assert store.cache_count() == 50
    frame = store.to_frame(CacheEntry)
    assert len(frame) == 50 and dict(zip(frame["key"], frame["value"], strict=True))["k7"] == "seven"


CHUNK = "The Langston Hughes Medal has been awarded annually since 1978 to a writer of the African diaspora."


def _stored_bytes(store: RecordStore, table: str) -> str:
    return " ".join(str(row[0]) for row in store.query(f"SELECT payload FROM {table}"))


async def test_a_chunk_read_by_many_checks_and_a_retrieval_is_stored_once(store: RecordStore) -> None:
    checks = [Check(kind=CheckKind.ELEMENT_IN_CONTEXT, sample_id="s1", condition=NORMAL, subject_id=f"e{n}",
                    subject_text=f"element {n}", target_id="chunk-1", target_text=CHUNK) for n in range(10)]
    retrieval = Retrieval(run_id="r1", sample_id="s1", condition=NORMAL, made_by="retrieve k=2",
                          chunks=(Chunk(id="chunk-1", text=CHUNK, rank=1), Chunk(id="chunk-2", text="short", rank=2)))
    await store.aput_checks("r1", "s1", checks)
    store.put(retrieval, Verdict(check_id=checks[0].id, judge_id="j", status=VerdictStatus.OK, label=Label.YES,
                                 raw_output=CHUNK + " (the judge's reply)"))
    assert store.query("SELECT COUNT(*) FROM texts") == [(2,)]  # the chunk once, and the reply
    assert CHUNK not in _stored_bytes(store, "checks") + _stored_bytes(store, "retrievals")
    assert "short" in _stored_bytes(store, "retrievals")  # a short text stays in its record
    assert store.checks_for("r1") == checks and store.get_checks([checks[3].id]) == [checks[3]]
    assert store.get_retrievals("r1") == [retrieval]
    assert store.get_verdicts([checks[0].id])[0].raw_output == CHUNK + " (the judge's reply)"
    assert store.checks_of_samples("r1", ["s1"]) == checks


def test_a_diagnostics_graph_is_stored_apart_and_left_out_by_the_read_without_graphs(store: RecordStore) -> None:
    graph = {"nodes": [{"id": "chunk:1", "kind": "chunk", "text": CHUNK}], "links": []}
    with_graph = SampleDiagnostics(run_id="r1", sample_id="s1", question="q", alignment_graph=graph)
    store.put(with_graph)
    assert CHUNK not in _stored_bytes(store, "diagnostics")
    assert store.get_diagnostics("r1") == [with_graph]
    assert store.diagnostics_of_samples("r1", ["s1"]) == [with_graph]
    assert store.get_diagnostics_without_graphs("r1") == [with_graph.model_copy(update={"alignment_graph": None})]


async def test_split_texts_are_shared_by_the_stored_and_the_pinned_split(store: RecordStore) -> None:
    split = _split(CHUNK, DecompositionKind.CLAIMS, CHUNK)
    store.put(split)
    await store.apin_split("r1", "s1", split)
    assert store.query("SELECT COUNT(*) FROM texts") == [(1,)]  # the text, its one item, the pinned copy: once
    assert store.get_decomposition(split.id) == split and store.pinned_splits("r1", "s1") == [split]


def test_llm_cache_replies_are_stored_compressed(store: RecordStore) -> None:
    reply = '{"choices": [{"message": {"content": "' + "yes, the chunk supports the claim. " * 20 + '"}}]}'
    store.cache_put("k", reply)
    ((value, body),) = store.query("SELECT value, body FROM llm_cache")
    assert value == "" and len(bytes(body)) < len(reply) / 5
    assert store.cache_get("k") == reply


def test_two_stores_on_one_location_share_writes(store: RecordStore, store_location: str) -> None:
    """Two processes (here two stores) on one location: each sees what the other committed; writers racing on
    shared rows (checks are content addressed, cache keys shared) in opposite orders all commit."""
    checks = [_check(n) for n in range(200)]
    with RecordStore(store_location) as second:
        def write(target: RecordStore, order: list[Check]) -> None:
            for start in range(0, len(order), 20):
                target.put(*order[start:start + 20])
                target.cache_put(order[start].id, "v")

        threads = [threading.Thread(target=write, args=(store, checks)),
                   threading.Thread(target=write, args=(second, checks[::-1]))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert store.get_checks([c.id for c in checks]) == second.get_checks([c.id for c in checks]) == checks
        assert store.cache_count() == second.cache_count() == 20


def test_a_store_of_another_schema_version_is_refused(store: RecordStore, store_location: str) -> None:
    store._write([("UPDATE meta SET value = ? WHERE key = 'schema_version'", [(str(SCHEMA_VERSION + 41),)])])
    with pytest.raises(StoreVersionError) as error:
        RecordStore(store_location)
    assert f"schema version {SCHEMA_VERSION + 41}" in str(error.value)
    assert store.location in str(error.value)


def test_an_unreachable_postgres_store_is_named_without_its_password() -> None:
    url = "postgresql://ann:secret@127.0.0.1:1/none?connect_timeout=2"
    with pytest.raises(Exception, match=r"cannot open record store postgresql://ann:\*\*\*@127\.0\.0\.1:1/none") as error:
        RecordStore(url)
    assert "secret" not in str(error.value)


def _checkpoint_config(thread: str) -> dict:
    return {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}


def _checkpoint_of(sample: Sample) -> tuple[dict, dict]:
    """A checkpoint holding a record in a channel, and its new channel versions (PostgreSQL stores the
    channel values apart, by version)."""
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"sample": sample}
    checkpoint["channel_versions"] = {"sample": "1"}
    return checkpoint, {"sample": "1"}  # type: ignore[return-value]


def test_sync_checkpointer_revives_records(store_location: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    sample = Sample(id="s1", question="q?")
    checkpoint, versions = _checkpoint_of(sample)
    if is_postgres_url(store_location):
        with postgres_saver(store_location) as saver:
            saver.put(_checkpoint_config("r:s1"), checkpoint, {}, versions)
            revived = saver.get(_checkpoint_config("r:s1"))
    else:
        saver = sqlite_saver(tmp_path / "checkpoints.sqlite")
        saver.put(_checkpoint_config("r:s1"), checkpoint, {}, versions)
        revived = saver.get(_checkpoint_config("r:s1"))
        saver.conn.close()
    assert revived is not None and revived["channel_values"]["sample"] == sample


async def test_async_checkpointer_of_a_run_lives_with_its_store(store: RecordStore, tmp_path) -> None:  # type: ignore[no-untyped-def]
    sample = Sample(id="s1", question="q?")
    checkpoint, versions = _checkpoint_of(sample)
    path = tmp_path / "checkpoints.sqlite"
    async with async_saver(store.url, path) as saver:
        await saver.aput(_checkpoint_config("r:s1"), checkpoint, {}, versions)
    async with async_saver(store.url, path) as saver:  # opened again: setup twice is harmless
        revived = await saver.aget(_checkpoint_config("r:s1"))
    assert revived is not None and revived["channel_values"]["sample"] == sample
    assert path.exists() is (store.url is None)  # PostgreSQL: nothing on the local disk
