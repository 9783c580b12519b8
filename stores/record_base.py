"""What the record store's modules share: timestamps as stored, and the typed base of its mixins.

`RecordStore` (records.py) owns the connections and the tables; its read-back aggregates
(`queries.RecordQueries`) and the LLM cache (`record_cache.RecordCache`) are mixins that reach the file
only through the plumbing `RecordStoreBase` declares and `RecordStore` implements, and spell what SQLite and
PostgreSQL write differently through its `dialect`.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, ParamSpec, TypeVar

from pydantic import BaseModel

from ragcourt.schema import Check, RunInfo, Verdict
from ragcourt.stores.dialect import Dialect
from ragcourt.stores.group_commit import GroupCommit, Statement

R = TypeVar("R", bound=BaseModel)
T = TypeVar("T")
P = ParamSpec("P")


def utc_text(moment: datetime) -> str:
    """A fixed-width UTC timestamp, so text order is time order (naive datetimes are taken as UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class RecordStoreBase(ABC):
    """The plumbing of `RecordStore` that its mixins call (records.py has the implementations)."""

    # Async writes go through it (stores/group_commit.py).
    _group: GroupCommit

    @property
    @abstractmethod
    def dialect(self) -> Dialect:
        """The SQL of the store's backend (stores/dialect.py)."""

    async def aread(self, read: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """One of the store's reads, from async code: on the caller's loop where the dialect reads in process (a
        SQLite file: handing a read of microseconds to a thread cost more CPU than the read, docs/BENCHMARKS.md),
        in a thread where a read is a round trip to a server."""
        if self.dialect.reads_in_process:
            return read(*args, **kwargs)
        return await asyncio.to_thread(read, *args, **kwargs)

    @abstractmethod
    def _write(self, statements: Iterable[Statement]) -> None:
        """Run the statements in one committed transaction."""

    @abstractmethod
    def _select(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """The rows of a query, read on the read connection."""

    @abstractmethod
    def _records(self, record_type: type[R], sql: str, params: Sequence[Any] = ()) -> list[R]:
        """The records whose payloads a query selects (first column)."""

    @abstractmethod
    def _payload_sql(self, record_type: type[BaseModel], alias: str = "") -> str:
        """The SQL expression of a record type's whole payload (table alias optional): what to SELECT."""

    @abstractmethod
    def _listing(self, record_type: type[R], where: dict[str, Any]) -> list[R]:
        """The stored records of a type whose columns equal `where` (None values left out), in table order."""

    @abstractmethod
    def _keeps(self, record_type: type[BaseModel]) -> bool:
        """Whether the store has a table for this record type."""

    @abstractmethod
    def get_verdicts(self, check_ids: Sequence[str], judge_id: str | None = None) -> list[Verdict]:
        """The stored verdicts of these checks (of one judge when given)."""

    @abstractmethod
    def get_run(self, run_id: str) -> RunInfo | None:
        """The stored run, or None."""

    @abstractmethod
    def checks_for(self, run_id: str, sample_id: str | None = None) -> list[Check]:
        """The checks linked to a run (and sample) with `link_checks`."""
