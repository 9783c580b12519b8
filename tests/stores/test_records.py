"""The SQLite record store: round trips, idempotency, versions, concurrency, crashes, frames."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ragcourt.schema import (
    CLOSED_BOOK,
    NORMAL,
    SCHEMA_VERSION,
    Answer,
    Check,
    CheckKind,
    Chunk,
    Condition,
    ConditionKind,
    Decomposition,
    DecompositionKind,
    ElementOutcome,
    ElementStatus,
    Label,
    MetricValue,
    Reconciled,
    ReconcileMethod,
    Retrieval,
    Review,
    ReviewAction,
    RunInfo,
    Sample,
    SampleDiagnostics,
    SampleStatus,
    TokenUsage,
    UnscoredReason,
    Verdict,
    VerdictStatus,
)
from ragcourt.stores import CacheEntry, RecordStore, StoreUnavailableError, StoreVersionError

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
CHUNK = Chunk(id="c1", text="Paris is the capital of France.", title="Paris", score=0.9, rank=1)


def check(n: int, sample_id: str = "s1") -> Check:
    return Check(
        kind=CheckKind.CLAIM_SUPPORTED,
        sample_id=sample_id,
        condition=NORMAL,
        subject_id=f"claim{n}",
        subject_text=f"claim {n}",
        target_id="c1",
        target_text=CHUNK.text,
    )


def verdict(check_id: str, judge_id: str = "j1", label: Label = Label.YES) -> Verdict:
    return Verdict(
        check_id=check_id,
        judge_id=judge_id,
        status=VerdictStatus.OK,
        label=label,
        probabilities={Label.YES: 0.8, Label.NO: 0.2},
        usage=TokenUsage(prompt_tokens=10, calls=1),
    )


def reconciled(check_id: str, escalated: bool, run_id: str = "r1") -> Reconciled:
    return Reconciled(
        run_id=run_id,
        check_id=check_id,
        kind=CheckKind.CLAIM_SUPPORTED,
        sample_id="s1",
        label=Label.YES,
        agreement=0.5,
        method=ReconcileMethod.MAJORITY,
        n_scored=2,
        n_unscored=0,
        escalated=escalated,
        provisional=escalated,
    )


def review(check_id: str, action: ReviewAction, minutes: int, label: Label | None = None) -> Review:
    return Review(
        run_id="r1",
        check_id=check_id,
        reviewer="ann",
        action=action,
        label=label,
        created_at=T0 + timedelta(minutes=minutes),
    )


@pytest.fixture
def store(store_location: str):  # type: ignore[no-untyped-def]
    """Every backend (tests/stores/conftest.py): the tests on this fixture are part of the store contract; the
    tests on files (crashes, versions, concurrency between processes) are SQLite's own."""
    with RecordStore(store_location) as opened:
        yield opened


def test_round_trip_of_every_record_type(store: RecordStore) -> None:
    run = RunInfo(
        run_id="r1", created_at=T0, dataset="hotpot", system="sys", config={"k": 5, "nested": {"a": [1]}}
    )
    sample = Sample(id="s1", question="Capital of France?", gold_answers=("Paris",), gold_documents=(CHUNK,))
    retrieval = Retrieval(run_id="r1", sample_id="s1", condition=NORMAL, chunks=(CHUNK,), k=5, made_by="test")
    answer = Answer(
        run_id="r1",
        sample_id="s1",
        condition=Condition(kind=ConditionKind.REMOVE, chunk_id="c1"),
        text="Paris",
        used_chunk_ids=("c1",),
        confidence=0.7,
    )
    decomposition = Decomposition(
        id="d1",
        kind=DecompositionKind.ELEMENTS,
        source_text="Paris.",
        items=("Paris",),
        prompt_hash="p",
        model_id="m",
    )
    a_check = check(1)
    unscored = Verdict(
        check_id=a_check.id,
        judge_id="j2",
        status=VerdictStatus.UNSCORED,
        unscored_reason=UnscoredReason.PARSE_FAILURE,
        detail="no JSON",
    )
    diagnostics = SampleDiagnostics(
        run_id="r1",
        sample_id="s1",
        question="Capital of France?",
        metrics=(
            MetricValue(name="f1", value=1.0, n=1),
            MetricValue(name="cprec", value=None, na_reason="no k"),
        ),
        elements=(
            ElementOutcome(
                element_id="e1",
                text="Paris",
                in_context=True,
                in_loose_context=None,
                in_answer=True,
                status=ElementStatus.ANSWERED,
            ),
        ),
        created_at=T0,
    )
    a_review = review(a_check.id, ReviewAction.OVERRIDE, 1, Label.NO)
    store.put(
        run,
        retrieval,
        answer,
        decomposition,
        a_check,
        verdict(a_check.id),
        unscored,
        reconciled(a_check.id, True),
        a_review,
        diagnostics,
    )
    store.put_samples("r1", [sample])
    store.link_checks("r1", "s1", [a_check.id])

    assert store.get_run("r1") == run and store.get_run("nope") is None
    assert store.list_runs() == [run]
    assert store.get_samples("r1") == [sample]
    assert store.get_retrievals("r1") == [retrieval] and store.get_retrievals("r1", "other") == []
    assert store.get_answers("r1", "s1") == [answer]
    assert store.get_decomposition("d1") == decomposition
    assert store.get_checks([a_check.id, "missing"]) == [a_check]
    assert store.checks_for("r1", "s1") == [a_check] and store.checks_for("r2") == []
    assert store.get_verdicts([a_check.id]) == [verdict(a_check.id), unscored]
    assert store.get_verdicts([a_check.id], judge_id="j2") == [unscored]
    assert store.get_reconciled("r1", "s1") == [reconciled(a_check.id, True)]
    assert store.latest_reviews("r1") == {a_check.id: a_review}
    assert store.get_diagnostics("r1") == [diagnostics]
    loaded = store.get_diagnostics("r1")[0]
    assert loaded.metric("cprec") == MetricValue(name="cprec", value=None, na_reason="no k")


def test_writing_twice_keeps_one_row_and_replaces(store: RecordStore) -> None:
    a_check = check(1)
    store.put(a_check, a_check, verdict(a_check.id))
    store.put(verdict(a_check.id, label=Label.NO))
    store.put_samples("r1", [Sample(id="s1", question="q?")])
    store.put_samples("r1", [Sample(id="s1", question="q changed?")])
    store.put(reconciled(a_check.id, True))
    store.put(reconciled(a_check.id, False))
    store.link_checks("r1", "s1", [a_check.id, a_check.id])
    store.link_checks("r1", "s1", [a_check.id])
    assert store.get_checks([a_check.id]) == [a_check]
    assert [v.label for v in store.get_verdicts([a_check.id])] == [Label.NO]
    assert [s.question for s in store.get_samples("r1")] == ["q changed?"]
    assert [r.escalated for r in store.get_reconciled("r1")] == [False]
    assert store.checks_for("r1") == [a_check]
    assert len(store.to_frame(Verdict)) == 1


def test_retrievals_are_keyed_by_condition(store: RecordStore) -> None:
    normal = Retrieval(run_id="r1", sample_id="s1", condition=NORMAL, chunks=(CHUNK,), made_by="x")
    closed = Retrieval(run_id="r1", sample_id="s1", condition=CLOSED_BOOK, chunks=(), made_by="x")
    store.put(normal, closed, normal)
    assert store.get_retrievals("r1", "s1") == [normal, closed]


def test_edited_decomposition_is_not_overwritten_by_a_machine_split(store: RecordStore) -> None:
    machine = Decomposition(
        id="d1", kind=DecompositionKind.ELEMENTS, source_text="t", items=("a",), prompt_hash="p", model_id="m"
    )
    edited = machine.model_copy(update={"items": ("a", "b"), "edited": True})
    store.put(machine)
    store.put(edited)
    store.put(machine)
    assert store.get_decomposition("d1") == edited


def test_samples_need_put_samples_and_unknown_types_are_refused(store: RecordStore) -> None:
    with pytest.raises(TypeError, match="put_samples"):
        store.put(Sample(id="s1", question="q?"))
    with pytest.raises(TypeError, match="TokenUsage"):
        store.put(TokenUsage())  # type: ignore[arg-type]


def test_reviews_are_all_kept_and_pending_escalations_ignore_skips(store: RecordStore) -> None:
    decided, skipped, untouched, calm = check(1), check(2), check(3), check(4)
    store.put(*(reconciled(c.id, escalated=c is not calm) for c in (decided, skipped, untouched, calm)))
    store.add_review(review(decided.id, ReviewAction.SKIP, 1))
    store.add_review(review(decided.id, ReviewAction.ACCEPT, 5, Label.YES))
    store.add_review(review(decided.id, ReviewAction.OVERRIDE, 3, Label.NO))
    store.add_review(review(skipped.id, ReviewAction.SKIP, 2))
    assert len(store.to_frame(Review)) == 4
    latest = store.latest_reviews("r1")
    assert latest[decided.id].action is ReviewAction.ACCEPT
    assert latest[skipped.id].action is ReviewAction.SKIP
    assert set(latest) == {decided.id, skipped.id}
    assert [r.check_id for r in store.pending_escalations("r1")] == [skipped.id, untouched.id]
    # one sample's checks only (what reconciliation reads): the newest by time, not by insertion
    assert store.latest_reviews("r1", [decided.id, untouched.id]) == {decided.id: latest[decided.id]}
    assert store.latest_reviews("r1", []) == {} and store.latest_reviews("other-run", [decided.id]) == {}


def test_a_runs_reviews_come_oldest_first_and_are_dropped_by_check(store: RecordStore) -> None:
    first, second, third = check(1), check(2), check(3)
    store.add_review(review(first.id, ReviewAction.OVERRIDE, 4, Label.NO))
    store.add_review(review(first.id, ReviewAction.SKIP, 2))
    store.add_review(review(second.id, ReviewAction.ACCEPT, 3, Label.YES))
    store.add_review(review(third.id, ReviewAction.OVERRIDE, 1, Label.YES))
    store.add_review(review(second.id, ReviewAction.OVERRIDE, 5, Label.NO).model_copy(update={"run_id": "r2"}))
    assert [(r.check_id, r.action) for r in store.get_reviews("r1")] == [
        (third.id, ReviewAction.OVERRIDE), (first.id, ReviewAction.SKIP), (second.id, ReviewAction.ACCEPT),
        (first.id, ReviewAction.OVERRIDE)]
    store.drop_reviews("r1", [first.id, third.id, "unknown"])
    assert [r.check_id for r in store.get_reviews("r1")] == [second.id]
    assert [r.check_id for r in store.get_reviews("r2")] == [second.id]  # another run's are its own
    store.drop_reviews("r1", [])
    assert len(store.get_reviews("r1")) == 1


def test_linked_check_ids_are_those_of_the_given_ids_the_run_links(store: RecordStore) -> None:
    first, second, third = check(1), check(2), check(3)
    store.put(first, second, third)
    store.link_checks("r1", "s1", [first.id, second.id])
    store.link_checks("r2", "s1", [third.id])
    assert store.linked_check_ids("r1", [third.id, second.id, "unknown", second.id]) == {second.id}
    assert store.linked_check_ids("r2", [first.id, third.id]) == {third.id}
    assert store.linked_check_ids("r1", []) == set()


def test_sample_payloads_are_the_stored_json_of_the_held_ids_only(store: RecordStore) -> None:
    first, second = Sample(id="s1", question="q1?"), Sample(id="s2", question="q2?", answer="a")
    store.put_samples("r1", [first, second])
    store.put_samples("r2", [Sample(id="s1", question="another run's s1?")])
    held = store.sample_payloads("r1", ["s2", "s1", "missing", "s2"])
    assert held == {"s1": first.model_dump_json(), "s2": second.model_dump_json()}
    assert store.sample_payloads("r1", []) == {} and store.sample_payloads("r3", ["s1"]) == {}


async def test_async_reads_stay_on_the_loop_for_a_file_and_go_to_a_thread_for_a_server(store: RecordStore) -> None:
    """A SQLite read takes microseconds, less than a thread hop; a PostgreSQL read is a round trip."""
    loop_thread = threading.get_ident()
    assert (await store.aread(threading.get_ident) == loop_thread) is (store.url is None)
    store.put_samples("r1", [Sample(id="s1", question="q?")])
    assert await store.aread(store.sample_payloads, "r1", ["s1"]) == store.sample_payloads("r1", ["s1"])


def test_finished_samples_are_those_with_ok_diagnostics(store: RecordStore) -> None:
    store.put(
        SampleDiagnostics(run_id="r1", sample_id="s1", question="q"),
        SampleDiagnostics(
            run_id="r1", sample_id="s2", question="q", status=SampleStatus.FAILED, error="boom"
        ),
        SampleDiagnostics(run_id="r2", sample_id="s3", question="q"),
    )
    assert store.finished_sample_ids("r1") == {"s1"}


def test_llm_cache(store: RecordStore) -> None:
    assert store.cache_get("k") is None
    store.cache_put("k", '{"text": "hi"}')
    store.cache_put("k", '{"text": "hello"}')
    store.cache_put("k2", "v2")
    assert store.cache_get("k") == '{"text": "hello"}'
    assert store.cache_count() == 2


def test_many_ids_are_queried_in_slices(store: RecordStore) -> None:
    checks = [check(n) for n in range(1200)]
    store.put(*checks)
    ids = [c.id for c in reversed(checks)]
    assert store.get_checks(ids) == list(reversed(checks))


def test_version_mismatch_names_file_and_versions(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    RecordStore(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (SCHEMA_VERSION + 41,))
    with pytest.raises(StoreVersionError) as error:
        RecordStore.open(path)
    message = str(error.value)
    assert str(path) in message
    assert (
        f"schema version {SCHEMA_VERSION + 41}" in message and f"schema version {SCHEMA_VERSION}" in message
    )


def test_to_frame_flattens_nested_fields(store: RecordStore) -> None:
    a_check = check(1)
    store.put(a_check, verdict(a_check.id), verdict(check(2).id, judge_id="j9"))
    store.link_checks("r1", "s1", [a_check.id])
    store.put_samples("r1", [Sample(id="s1", question="q?", gold_answers=("A", "B"))])
    store.put_samples("r2", [Sample(id="s9", question="other?")])
    store.cache_put("key1", "value1")

    verdicts = store.to_frame(Verdict, run_id="r1")  # only verdicts of checks linked to r1
    assert verdicts["judge_id"].tolist() == ["j1"]
    assert verdicts["probabilities.yes"].tolist() == [0.8] and verdicts["usage.prompt_tokens"].tolist() == [
        10
    ]
    assert verdicts["label"].tolist() == ["yes"]
    assert len(store.to_frame(Verdict)) == 2

    checks = store.to_frame(Check)
    assert checks.loc[0, "condition.kind"] == "normal" and checks.loc[0, "id"] == a_check.id

    samples = store.to_frame(Sample, run_id="r1")
    assert samples[["run_id", "id", "question"]].values.tolist() == [["r1", "s1", "q?"]]
    assert samples.loc[0, "gold_answers"] == ["A", "B"]
    assert store.to_frame(Sample)["run_id"].tolist() == ["r1", "r2"]

    cache = store.to_frame(CacheEntry)
    assert cache.to_dict("records") == [{"key": "key1", "value": "value1"}]

    empty = store.to_frame(Answer, run_id="r1")
    assert len(empty) == 0 and "condition" in empty.columns and "text" in empty.columns
    with pytest.raises(ValueError, match="belong to no run"):
        store.to_frame(Decomposition, run_id="r1")


async def test_200_concurrent_async_writers(store: RecordStore) -> None:
    checks = [check(n) for n in range(200)]

    async def write(n: int) -> None:
        await store.aput(checks[n], verdict(checks[n].id))
        await store.acache_put(f"key{n}", f"value{n}")
        await store.aput_samples("r1", [Sample(id=f"s{n}", question=f"q{n}?")])

    await asyncio.gather(*(write(n) for n in range(200)))
    assert store.cache_count() == 200
    assert await store.acache_get("key137") == "value137"
    assert len(await store.aget_verdicts([c.id for c in checks])) == 200
    assert len(store.get_samples("r1")) == 200


# Writes the given number of checks one by one, printing how many are committed after each write.
WRITER = """
import sys
from ragcourt.schema import Check, CheckKind, NORMAL
from ragcourt.stores.records import RecordStore
store = RecordStore(sys.argv[1])
for n in range(int(sys.argv[2])):
    store.put(Check(kind=CheckKind.CLAIM_SUPPORTED, sample_id="s1", condition=NORMAL, subject_id=f"claim{n}",
                    subject_text=f"claim {n}", target_id="c1", target_text="Paris is the capital of France."))
    print(n + 1, flush=True)
"""


def test_killed_writer_loses_no_committed_record(tmp_path: Path) -> None:
    path = tmp_path / "records.sqlite"
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), "100000"], stdout=subprocess.PIPE, text=True
    )
    assert writer.stdout is not None
    reported = 0
    for line in writer.stdout:
        reported = int(line)
        if reported >= 300:
            break
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait(timeout=30)
    assert writer.returncode == -signal.SIGKILL
    with RecordStore(path) as reopened:
        wanted = [check(n).id for n in range(reported)]
        assert len(reopened.get_checks(wanted)) == reported
        assert reopened.to_frame(Check).shape[0] >= reported
        integrity = reopened._select("PRAGMA integrity_check")
    assert integrity == [("ok",)]


def test_second_process_reads_while_first_writes(tmp_path: Path) -> None:
    path = tmp_path / "records.sqlite"
    RecordStore(path).close()
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path), "400"], stdout=subprocess.DEVNULL)
    seen: list[int] = []
    with RecordStore(path) as reader:
        while writer.poll() is None:
            seen.append(len(reader.to_frame(Check)))
            reader.cache_put(f"reader{len(seen)}", "also writing")  # a write from this process meanwhile
        assert writer.wait(timeout=60) == 0
        seen.append(len(reader.to_frame(Check)))
    assert seen == sorted(seen)  # the reader never sees committed rows disappear
    assert seen[-1] == 400
    assert len(seen) > 2


def test_a_file_that_is_no_database_is_named_in_the_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.sqlite"
    path.write_text("these are not the pages of a database\n" * 200)
    with pytest.raises(StoreUnavailableError, match="notes.sqlite"):
        RecordStore(path)


def test_missing_parent_folders_are_created(tmp_path: Path) -> None:
    with RecordStore(tmp_path / "runs" / "r1" / "records.sqlite") as store:
        store.cache_put("k", "v")
    assert (tmp_path / "runs" / "r1" / "records.sqlite").exists()
