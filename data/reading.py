"""The one reader of samples, whatever the format: rows in, checked by the rules of a sample row (data.rows), errors
out with file, line (or row) and field, ids unique across the file, texts within their limits.

A format's module gives rows: (1-based line or row number, a function parsing that row), read as the file is read
(data.read_jsonl, read_json, read_csv, read_parquet, read_hf). `RowChecker` checks them one at a time;
`SampleStream` reads a dataset twice without holding it: a validating pass that keeps only what the whole file is
needed for (the ids seen, for duplicates; the lines refused; the fields no sample has), then each iteration a pass
that yields the samples, so the memory of a run does not grow with its dataset.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ragcourt.data.errors import DatasetError, ErrorPolicy, RowError
from ragcourt.data.rows import (
    DEFAULT_LIMITS,
    KEY_WORD,
    UNKNOWN_FIELDS,
    FieldLimits,
    sample_of_row,
    unknown_field_message,
)
from ragcourt.data.text_input import type_name
from ragcourt.schema import Sample

Rows = Iterator[tuple[int, Callable[[], Any]]]
"""A format's rows: (1-based line or row number, a function returning the parsed row or raising RowError)."""
ToSample = Callable[[dict[str, Any]], Sample]


class CountedSamples(Protocol):
    """Samples that can be counted and iterated more than once: a list, or a SampleStream (read again each time)."""

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[Sample]: ...


@dataclass(frozen=True, slots=True)
class LoadResult:
    samples: tuple[Sample, ...]
    errors: tuple[DatasetError, ...] = ()
    warnings: tuple[DatasetError, ...] = ()  # accepted but worth a look: a top-level field no sample has


@dataclass(frozen=True, slots=True)
class StreamCheck:
    """What the validating pass of a SampleStream found: how many samples it yields, the rows refused (with
    ErrorPolicy.SKIP) and the warnings."""

    n_samples: int
    errors: tuple[DatasetError, ...] = ()
    warnings: tuple[DatasetError, ...] = ()


class RowChecker:
    """Turns row errors into DatasetErrors, applies the error policy and checks ids are unique.

    `keep_samples=False` (a validating pass) keeps no sample, and of their ids only a 64-bit digest each: a row
    whose id's digest was seen is left in `unsettled` for the caller, who finds the line the id was first on by
    reading the rows again (SampleStream.check), or learns that two ids shared a digest. `key_word` is what a
    message calls a row's keys ("column" in a CSV file or a table)."""

    def __init__(self, path: Path, on_error: ErrorPolicy, limits: FieldLimits = DEFAULT_LIMITS, unit: str = "line",
                 strict: bool = False, *, key_word: str = "key", keep_samples: bool = True):
        self.path = path
        self.on_error = on_error
        self.limits = limits
        self.unit = unit
        self.strict = strict  # an unknown top-level field is an error, not a warning
        self.key_word = key_word
        self.keep_samples = keep_samples
        self.samples: list[Sample] = []
        self.errors: list[DatasetError] = []
        self.rows = 0
        self.accepted = 0
        self._id_lines: dict[str, int] = {}  # when the samples are kept: what they hold anyway
        self._id_digests: set[int] = set()  # when they are not: a digest an id, whatever its length
        self.unsettled: list[tuple[int, str]] = []  # (line, id) of rows whose id's digest was seen before
        self._unknown: dict[str, tuple[int, int]] = {}  # unknown top-level field -> (first line, lines giving it)

    def fail(self, line: int | None, field: str | None, message: str) -> None:
        error = DatasetError(self.path, message, line=line, field=field, unit=self.unit)
        if self.on_error is ErrorPolicy.RAISE:
            raise error
        self.errors.append(error)

    def convert(self, make: Callable[[], Any], to_sample: ToSample = sample_of_row) -> tuple[Sample, list[str]]:
        """One row parsed and made a Sample, with the top-level fields no sample has; raises RowError."""
        unknown: list[str] = []
        token, key_word = UNKNOWN_FIELDS.set(unknown), KEY_WORD.set(self.key_word)
        try:
            row = make()
            if not isinstance(row, dict):
                raise RowError(None, f"expected a JSON object, got {type_name(row)}")
            return to_sample(row), unknown
        finally:
            KEY_WORD.reset(key_word)
            UNKNOWN_FIELDS.reset(token)

    def add(
        self,
        line: int,
        make: Callable[[], Any],
        to_sample: ToSample = sample_of_row,
        on_accept: Callable[[Sample], None] | None = None,
    ) -> Sample | None:
        """Parse, convert and check one row; `make` produces the parsed row (and may raise RowError). The sample,
        or None when the row is refused."""
        self.rows += 1
        try:
            sample, unknown = self.convert(make, to_sample)
        except RowError as exc:
            self.fail(line, exc.field, exc.message)
            return None
        if unknown and self.strict:
            self.fail(line, unknown[0], unknown_field_message(unknown[0], strict=True))
            return None
        for name in unknown:
            first, count = self._unknown.get(name, (line, 0))
            self._unknown[name] = (first, count + 1)
        over = next(self.limits.problems(sample), None)
        if over is not None:
            self.fail(line, *over)
            return None
        if self.keep_samples:
            first_line = self._id_lines.get(sample.id)
            if first_line is not None:
                self.duplicate(line, sample.id, first_line)
                return None
            self._id_lines[sample.id] = line
        else:
            digest = hash(sample.id)  # 64 bits: two of 200,000 ids share one about once in 10^9 files
            if digest in self._id_digests:
                self.unsettled.append((line, sample.id))
            self._id_digests.add(digest)
        self.accepted += 1
        if self.keep_samples:
            self.samples.append(sample)
        if on_accept is not None:
            on_accept(sample)
        return sample

    def duplicate(self, line: int, sample_id: str, first_line: int) -> None:
        self.fail(line, "id", f"duplicate id '{sample_id}' (first on {self.unit} {first_line}, again on {self.unit} "
                              f"{line})")

    def warnings(self) -> tuple[DatasetError, ...]:
        return tuple(DatasetError(self.path, unknown_field_message(name, lines=count, unit=self.unit), line=first,
                                  field=name, unit=self.unit)
                     for name, (first, count) in self._unknown.items())

    def refuse_none_read(self) -> None:
        if self.rows == 0:
            raise DatasetError(self.path, "file holds no samples")

    def result(self) -> LoadResult:
        self.refuse_none_read()
        return LoadResult(samples=tuple(self.samples), errors=tuple(self.errors), warnings=self.warnings())


def collect_rows(source: str | Path, rows: Iterable[tuple[int, Callable[[], Any]]], *, unit: str = "row",
                 on_error: ErrorPolicy = ErrorPolicy.RAISE, limits: FieldLimits = DEFAULT_LIMITS,
                 to_sample: ToSample = sample_of_row, strict: bool = False, key_word: str = "column") -> LoadResult:
    """Samples of rows read by another reader, checked as the file loaders check theirs: each (number, make) pair
    gives the row's 1-based `unit` number and a function producing the parsed row (which may raise RowError);
    errors name `source`, the row and the field, ids must be unique, `limits` apply. `key_word`: what a message
    calls a row's keys (a table's are columns)."""
    checker = RowChecker(Path(source), on_error, limits, unit, strict, key_word=key_word)
    for number, make in rows:
        checker.add(number, make, to_sample)
    return checker.result()


class SampleStream:
    """The samples of one dataset, read from it each time they are iterated and never held together.

    `rows` gives the dataset's rows afresh on each call. `check()` is the validating pass over the whole dataset
    (cached): every problem with its file, line and field, raised as the first one (ErrorPolicy.RAISE) or
    collected (SKIP: those rows are left out of every iteration). Iterating checks first, then yields the samples
    in the dataset's order (the first `limit` of them when given). `len()` is how many it yields."""

    def __init__(self, source: str | Path, rows: Callable[[], Rows], *, unit: str = "line", key_word: str = "key",
                 to_sample: ToSample = sample_of_row, limits: FieldLimits = DEFAULT_LIMITS, strict: bool = False,
                 on_error: ErrorPolicy = ErrorPolicy.RAISE, limit: int | None = None):
        self.source = source
        self._rows = rows
        self._checker_options: dict[str, Any] = {"limits": limits, "unit": unit, "strict": strict,
                                                 "key_word": key_word}
        self._to_sample = to_sample
        self.on_error = on_error
        self.limit = limit
        self._checked: StreamCheck | None = None
        self._refused: frozenset[int] = frozenset()

    def _checker(self, on_error: ErrorPolicy, keep_samples: bool) -> RowChecker:
        return RowChecker(Path(self.source), on_error, keep_samples=keep_samples, **self._checker_options)

    def check(self) -> StreamCheck:
        """The validating pass (once): DatasetError for the first problem, or with SKIP every one collected."""
        if self._checked is None:
            checker = self._checker(self.on_error, keep_samples=False)
            for number, make in self._rows():
                checker.add(number, make, self._to_sample)
                if checker.unsettled and self.on_error is ErrorPolicy.RAISE:
                    self._settle(checker)  # raises for a duplicate: it is the first problem
            checker.refuse_none_read()
            if checker.unsettled:
                self._settle(checker)
            errors = sorted(checker.errors, key=lambda error: error.line or 0)  # duplicates were settled after
            accepted = checker.accepted if self.limit is None else min(checker.accepted, self.limit)
            self._refused = frozenset(error.line for error in errors if error.line is not None)
            self._checked = StreamCheck(accepted, tuple(errors), checker.warnings())
        return self._checked

    def _settle(self, checker: RowChecker) -> None:
        """The rows of `checker.unsettled` against the rows read again: a duplicate of an id first on an earlier
        accepted row is refused with that row's line; one whose digest only matched another id's is accepted."""
        wanted = {sample_id for _, sample_id in checker.unsettled}
        refused = {error.line for error in checker.errors}
        first_lines: dict[str, int] = {}
        for number, make in self._rows():
            if number in refused:
                continue
            try:
                sample, _ = checker.convert(make, self._to_sample)
            except RowError:
                continue
            if sample.id in wanted:
                first_lines.setdefault(sample.id, number)
            if len(first_lines) == len(wanted):
                break
        for line, sample_id in checker.unsettled:
            if first_lines[sample_id] < line:
                checker.accepted -= 1
                checker.duplicate(line, sample_id, first_lines[sample_id])
        checker.unsettled.clear()

    def load(self) -> LoadResult:
        """Every sample at once, in one pass (what the Python API and small files take)."""
        checker = self._checker(self.on_error, keep_samples=True)
        for number, make in self._rows():
            if self.limit is not None and checker.accepted >= self.limit:
                break
            checker.add(number, make, self._to_sample)
        return checker.result()

    def __len__(self) -> int:
        return self.check().n_samples

    def __iter__(self) -> Iterator[Sample]:
        n_samples = self.check().n_samples
        if n_samples == 0:
            return
        converter = self._checker(ErrorPolicy.RAISE, keep_samples=False)
        given = 0
        for number, make in self._rows():
            if number in self._refused:
                continue
            try:
                sample, _ = converter.convert(make, self._to_sample)
            except RowError as exc:  # the file changed since it was checked
                raise DatasetError(self.source, f"{exc.message} (the file changed while it was read)",
                                   line=number, field=exc.field, unit=converter.unit) from None
            yield sample
            given += 1
            if given == n_samples:
                return
