"""Group commit: concurrent async writes share transactions; a failure is its own writer's only."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

from ragcourt.schema import Sample
from ragcourt.stores.group_commit import GroupCommit, Statement
from ragcourt.stores.records import RecordStore


class RecordingWrite:
    """A write function that keeps each transaction's statements and takes a little time, like a commit."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.transactions: list[list[Statement]] = []
        self.fail_on = fail_on
        self._lock = threading.Lock()

    def __call__(self, statements: list[Statement]) -> None:
        time.sleep(0.005)
        if self.fail_on is not None and any(sql == self.fail_on for sql, _ in statements):
            raise ValueError(f"cannot write {self.fail_on}")
        with self._lock:
            self.transactions.append(list(statements))

    @property
    def written(self) -> list[str]:
        return [sql for transaction in self.transactions for sql, _ in transaction]


async def test_concurrent_writes_share_transactions_and_all_are_committed() -> None:
    write = RecordingWrite()
    group = GroupCommit(write)
    await asyncio.gather(*(group.submit([(f"row {n}", [])]) for n in range(50)))
    assert sorted(write.written) == sorted(f"row {n}" for n in range(50))
    assert [len(t) for t in write.transactions] == [50]  # all arrived before the first commit: one transaction

    first = asyncio.ensure_future(group.submit([("first", [])]))
    await asyncio.sleep(0.002)  # its commit is under way (each takes 5 ms here)
    await asyncio.gather(group.submit([("second", [])]), group.submit([("third", [])]), first)
    assert [len(t) for t in write.transactions[1:]] == [1, 2]  # the two that waited went together


async def test_a_failing_write_fails_only_its_own_caller() -> None:
    write = RecordingWrite(fail_on="bad")
    group = GroupCommit(write)
    outcomes = await asyncio.gather(group.submit([("first", [])]), group.submit([("good", [])]),
                                    group.submit([("bad", [])]), group.submit([("also good", [])]),
                                    return_exceptions=True)
    assert outcomes[:2] == [None, None] and outcomes[3] is None
    assert isinstance(outcomes[2], ValueError) and "cannot write bad" in str(outcomes[2])
    assert write.written == ["first", "good", "also good"]  # the shared transaction failed; retried one by one


async def test_a_cancelled_writer_still_has_its_rows_written() -> None:
    write = RecordingWrite()
    group = GroupCommit(write)
    first = asyncio.ensure_future(group.submit([("first", [])]))
    await asyncio.sleep(0)
    cancelled = asyncio.ensure_future(group.submit([("cancelled", [])]))
    await asyncio.sleep(0)
    cancelled.cancel()
    await first
    await group.submit([("after", [])])
    assert write.written == ["first", "cancelled", "after"]


def test_one_group_serves_event_loops_one_after_another() -> None:
    write = RecordingWrite()
    group = GroupCommit(write)
    asyncio.run(group.submit([("loop one", [])]))
    asyncio.run(group.submit([("loop two", [])]))
    assert write.written == ["loop one", "loop two"]


async def test_store_writes_from_many_samples_are_all_readable(tmp_path: Path) -> None:
    with RecordStore(tmp_path / "store.sqlite") as store:
        await asyncio.gather(
            *(store.aput_samples(f"run-{n % 3}", [Sample(id=f"s{n}", question=f"question {n}?")]) for n in range(60)),
            *(store.acache_put(f"key{n}", f"value{n}") for n in range(60)),
        )
        assert sum(len(store.get_samples(f"run-{r}")) for r in range(3)) == 60
        assert [store.cache_get(f"key{n}") for n in (0, 59)] == ["value0", "value59"]


async def test_a_bad_record_fails_its_writer_and_not_the_others(tmp_path: Path) -> None:
    with RecordStore(tmp_path / "store.sqlite") as store:
        with pytest.raises(TypeError, match="put_samples"):
            await store.aput(Sample(id="s1", question="q?"))  # refused before anything is queued
        store._conn.execute("CREATE TRIGGER no_poison BEFORE INSERT ON llm_cache WHEN NEW.key = 'poison' "
                            "BEGIN SELECT RAISE(ABORT, 'poisoned key'); END")
        outcomes = await asyncio.gather(store.acache_put("a", "1"), store.acache_put("poison", "x"),
                                        store.acache_put("b", "2"), return_exceptions=True)
        assert outcomes[0] is None and outcomes[2] is None and "poisoned key" in str(outcomes[1])
        assert (store.cache_get("a"), store.cache_get("b"), store.cache_get("poison")) == ("1", "2", None)
