"""What a dataset's problems are: a `DatasetError` names the file, the 1-based line (or row) and the field, so a
person can open the file there and fix it; `DatasetErrors` is every problem of one file; a `RowError` is a problem
inside one row, before the reader that read it adds the file and line."""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path
from typing import Any


class DatasetError(ValueError):
    """A problem in an input file, located by file, 1-based line (None: whole file) and field.

    `unit` names what `line` counts: "line" for text files (`file:3: ...`), "row" for Parquet files and saved
    Hugging Face datasets, which have no lines (`file: row 3: ...`).
    """

    def __init__(self, file: str | Path, message: str, *, line: int | None = None, field: str | None = None,
                 unit: str = "line"):
        self.file = str(file)
        self.line = line
        self.field = field
        self.message = message
        self.unit = unit
        super().__init__(str(self))

    def __str__(self) -> str:
        if self.line is None:
            where = self.file
        else:
            where = f"{self.file}:{self.line}" if self.unit == "line" else f"{self.file}: {self.unit} {self.line}"
        what = self.message if self.field is None else f"field '{self.field}': {self.message}"
        return f"{where}: {what}"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_error, (self.file, self.message, self.line, self.field, self.unit))


def _rebuild_error(file: str, message: str, line: int | None, field: str | None, unit: str = "line") -> DatasetError:
    return DatasetError(file, message, line=line, field=field, unit=unit)


class DatasetErrors(DatasetError):
    """Every problem found in one input file, in line order, each a DatasetError naming file, line and field.

    `file`, `line`, `field` and `message` are the first problem's, so code that reports one error still
    reports something true; str() is every problem, one per line.
    """

    def __init__(self, errors: Sequence[DatasetError]):
        if not errors:
            raise ValueError("DatasetErrors needs at least one error")
        self.errors = tuple(errors)
        first = self.errors[0]
        super().__init__(first.file, first.message, line=first.line, field=first.field, unit=first.unit)

    def __str__(self) -> str:
        return "\n".join(str(error) for error in self.errors)

    def __reduce__(self) -> tuple[Any, ...]:
        return (DatasetErrors, (self.errors,))

    @property
    def n_lines(self) -> int:
        """How many distinct lines have a problem (file-level problems count as none)."""
        return len({error.line for error in self.errors if error.line is not None})


class ErrorPolicy(StrEnum):
    RAISE = "raise"  # raise the first row error
    SKIP = "skip"  # collect row errors in LoadResult.errors and leave those rows out



class RowError(Exception):
    """A problem inside one row; the caller adds file and line (data.formats raises it from its row adapters)."""

    def __init__(self, field: str | None, message: str):
        super().__init__(message)
        self.field = field
        self.message = message

