"""The workspace: the folder (default `./ragcourt-runs`) every run of a project shares.

A workspace holds one record store for all its runs (so the LLM cache and frozen element lists serve every
later run), the chromadb folder, and one directory per run with its diagnostics stream, the config used
and, for inline review, the LangGraph checkpoints.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ragcourt.schema import Sample, content_id
from ragcourt.schema.config import EvalConfig
from ragcourt.stores.records import RecordStore

if TYPE_CHECKING:
    from ragcourt.stores.vectors import VectorStore

DEFAULT_HOME = Path("ragcourt-runs")
HOTPOTQA_COLLECTION = "hotpotqa"  # where `ragcourt demo` indexes the bundled corpus; `run`'s default

PathInput = str | os.PathLike[str]


def derived_run_id(config: EvalConfig, samples: Sequence[Sample], system: str, digits: int = 16) -> str:
    """The run id of a configuration, a system and samples: over the samples' contents, not only their ids, so
    an edited dataset is another run (its figures are never shown as those of the old text)."""
    return f"run-{content_id(config.model_dump(mode='json'), [s.content_hash for s in samples], system)[:digits]}"


@dataclass(frozen=True, init=False)
class Workspace:
    home: Path

    def __init__(self, home: PathInput = DEFAULT_HOME) -> None:
        object.__setattr__(self, "home", Path(home))  # a str or any PathLike is taken

    @property
    def store_path(self) -> Path:
        return self.home / "store.sqlite"

    @property
    def chroma_path(self) -> Path:
        return self.home / "chroma"

    def run_dir(self, run_id: str) -> Path:
        if not run_id or run_id in (".", "..") or "/" in run_id or "\\" in run_id or "\0" in run_id:
            raise ValueError(f"run id {run_id!r} is not a plain name (no '/', '\\', '..' or NUL)")
        return self.home / "runs" / run_id

    def open_store(self) -> RecordStore:
        self.home.mkdir(parents=True, exist_ok=True)
        return RecordStore(self.store_path)

    def open_vectors(self) -> VectorStore:
        # Imported here: chromadb and onnxruntime cost a second of start-up that commands reading only the
        # record store (summary, report, review) need not pay.
        from ragcourt.stores.embeddings import MiniLMEmbedding
        from ragcourt.stores.vectors import VectorStore

        return VectorStore.persistent(self.chroma_path, MiniLMEmbedding())

