"""Saved Hugging Face datasets: a directory `datasets.Dataset.save_to_disk` wrote (a DatasetDict's with one split, or
one split's), read from its Arrow stream files a record batch at a time, so a dataset of any length is never held
whole. pyarrow is imported only when one is read; `datasets` never is."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ragcourt.data.errors import DatasetError
from ragcourt.data.read_parquet import table_rows
from ragcourt.data.reading import Rows

HF_STATE_FILE = "state.json"  # written by datasets.Dataset.save_to_disk
HF_DICT_FILE = "dataset_dict.json"  # written by datasets.DatasetDict.save_to_disk


def saved_hf_rows(path: Path) -> Rows:
    """The rows of a `save_to_disk` directory: its Arrow stream files, in the order state.json lists them."""
    import pyarrow as pa

    splits_file = path / HF_DICT_FILE
    if splits_file.is_file():
        splits = json_file(splits_file).get("splits") or []
        if len(splits) != 1:
            raise DatasetError(path, f"is a saved DatasetDict with the splits {', '.join(map(str, splits))}: give "
                                     f"one split's directory, e.g. {path / str(splits[0]) if splits else path}")
        path = path / str(splits[0])
    state_file = path / HF_STATE_FILE
    if not state_file.is_file():
        raise DatasetError(path, f"is not a regular file, nor a saved Hugging Face dataset (a directory with "
                                 f"{HF_STATE_FILE} or {HF_DICT_FILE}): give a dataset file or a `save_to_disk` "
                                 "directory")
    entries = json_file(state_file).get("_data_files")
    if not isinstance(entries, list) or not all(isinstance(e, dict) and "filename" in e for e in entries):
        raise DatasetError(state_file, "has no list of data files ('_data_files'): not written by save_to_disk")

    def batches() -> Iterator[Any]:
        for entry in entries:
            data_file = path / str(entry["filename"])
            try:
                with pa.memory_map(str(data_file)) as stream:
                    yield from pa.ipc.open_stream(stream)
            except (pa.ArrowException, OSError) as error:
                raise DatasetError(data_file, f"not a readable Arrow file: {error}") from None

    return table_rows(batches())


def json_file(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise DatasetError(path, f"cannot read: {error}") from None
    if not isinstance(value, dict):
        raise DatasetError(path, "must hold a JSON object")
    return value
