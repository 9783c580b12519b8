"""Parquet datasets, read a batch of rows at a time (pyarrow's iter_batches), so a file of any length is never
held whole; a table's rows are numbered from 1. pyarrow is imported only when a Parquet file is read."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ragcourt.data.errors import DatasetError
from ragcourt.data.reading import Rows

BATCH_ROWS = 1024  # rows converted to Python at a time


def given_fields(row: Mapping[str, Any]) -> Callable[[], dict[str, Any]]:
    """A table row's parse: a table has every column in every row, so a null cell is a field the row does not
    give."""
    return lambda: {key: value for key, value in row.items() if value is not None}


def table_rows(batches: Iterable[Any]) -> Rows:
    """(row number, parse) of every row of pyarrow record batches, one batch in Python at a time."""
    number = 0
    for batch in batches:
        for row in batch.to_pylist():
            number += 1
            yield number, given_fields(row)


def parquet_rows(path: Path) -> Rows:
    """The rows of a Parquet file; DatasetError when it cannot be read as one."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
    except FileNotFoundError:
        raise DatasetError(path, "cannot read file: No such file or directory") from None
    except (pa.ArrowException, OSError) as error:
        raise DatasetError(path, f"not a readable Parquet file: {error}") from None
    with parquet:
        yield from table_rows(parquet.iter_batches(batch_size=BATCH_ROWS))
