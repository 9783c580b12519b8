"""The workspace: the folder (default `./ragcourt-runs`) every run of a project shares.

A workspace holds one record store for all its runs (so the LLM cache and frozen element lists serve every
later run), the chromadb folder, and one directory per run with its diagnostics stream, the config used
and, for inline review, the LangGraph checkpoints.

The record store is the SQLite file `store.sqlite` in the folder, unless a PostgreSQL URL is given: as `store`
(`--store`, or `store:` in the config, where a run is started), else in $RAGCOURT_STORE, else the one the
workspace was last opened with, which `open_store` keeps in `store.url` (mode 0600: it may hold a password),
so `summary`, `report`, `review` and the rest find a PostgreSQL run with `--home` alone.

The corpus is the chromadb folder `chroma/` in the workspace, unless a Chroma server's URL is given (`--chroma`,
`chroma:` in the config), kept in `chroma.url` the same way: the vectors of a run spread over machines.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ragcourt.schema import Sample
from ragcourt.schema.config import LEGACY_ENCODER, EvalConfig
from ragcourt.stores.dialect import is_postgres_url, shown_location
from ragcourt.stores.records import RecordStore

if TYPE_CHECKING:
    from ragcourt.stores.vectors import VectorStore

DEFAULT_HOME = Path("ragcourt-runs")
HOTPOTQA_COLLECTION = "hotpotqa"  # where `ragcourt demo` indexes the bundled corpus; `run`'s default

PathInput = str | os.PathLike[str]
STORE_ENV = "RAGCOURT_STORE"
STORE_URL_FILE = "store.url"
CHROMA_URL_FILE = "chroma.url"


class StoreLocationError(ValueError):
    """A record store location that is no PostgreSQL URL where one is expected (--store, $RAGCOURT_STORE)."""


def derived_run_id(config: EvalConfig, samples: Iterable[Sample], system: str, digits: int = 16) -> str:
    """The run id of a configuration, a system and samples: over the samples' contents, not only their ids, so
    an edited dataset is another run (its figures are never shown as those of the old text). Where spans go
    (telemetry) changes no figure: it is left out. The samples are read once, one at a time (a dataset read as
    a stream is never held): the id is content_id(settings, [each sample's content hash], system), hashed as
    that JSON is written."""
    settings = config.model_dump(mode="json", exclude={"telemetry"})
    # MiniLM is what every semantic judge embedded with before the encoder was a choice: the same id as then.
    settings["judges"] = [{k: v for k, v in judge.items() if (k, v) != ("encoder", LEGACY_ENCODER)}
                          for judge in settings["judges"]]
    digest = hashlib.sha256(f"[{_canonical(settings)},[".encode())
    for index, sample in enumerate(samples):
        digest.update(f"{',' if index else ''}{_canonical(sample.content_hash)}".encode())
    digest.update(f"],{_canonical(system)}]".encode())
    return f"run-{digest.hexdigest()[:min(digits, 16)]}"


def _canonical(value: object) -> str:
    """JSON as content_id writes it."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


@dataclass(frozen=True, init=False)
class Workspace:
    home: Path
    store: str | None  # a PostgreSQL URL given for this workspace (see the module's docstring)
    chroma: str | None  # a Chroma server's http:// URL given for this workspace

    def __init__(self, home: PathInput = DEFAULT_HOME, store: str | None = None, chroma: str | None = None) -> None:
        object.__setattr__(self, "home", Path(home))  # a str or any PathLike is taken
        if store is not None and not is_postgres_url(store):
            raise StoreLocationError(f"store {store!r} is no postgresql:// URL (the SQLite store is the workspace's own "
                                     "file)")
        object.__setattr__(self, "store", store)
        if chroma is not None:
            chroma_address(chroma)  # refused here, before anything is opened
        object.__setattr__(self, "chroma", chroma)

    @property
    def store_path(self) -> Path:
        """The SQLite store's file (whether or not the workspace's store is PostgreSQL)."""
        return self.home / "store.sqlite"

    @property
    def store_url(self) -> str | None:
        """The PostgreSQL URL of the workspace's store, or None for its SQLite file."""
        given = self.store or os.environ.get(STORE_ENV) or None
        if given is not None:
            if not is_postgres_url(given):
                raise StoreLocationError(f"${STORE_ENV} {given!r} is no postgresql:// URL")
            return given
        kept = self.home / STORE_URL_FILE
        return kept.read_text(encoding="utf-8").strip() if kept.is_file() else None

    @property
    def store_location(self) -> str:
        """Where the record store is, for messages: the file, or the URL with its password masked."""
        url = self.store_url
        return shown_location(url) if url else str(self.store_path)

    def has_store(self) -> bool:
        """Whether the workspace has a record store to read (a PostgreSQL one is taken to exist)."""
        return self.store_url is not None or self.store_path.exists()

    @property
    def chroma_path(self) -> Path:
        return self.home / "chroma"

    @property
    def chroma_url(self) -> str | None:
        """The Chroma server of the workspace's corpus, or None for its chromadb folder."""
        if self.chroma is not None:
            return self.chroma
        kept = self.home / CHROMA_URL_FILE
        return kept.read_text(encoding="utf-8").strip() if kept.is_file() else None

    @property
    def vectors_location(self) -> str:
        """Where the corpus is, for messages: the Chroma server's URL or the chromadb folder."""
        return self.chroma_url or str(self.chroma_path)

    def run_dir(self, run_id: str) -> Path:
        if not run_id or run_id in (".", "..") or "/" in run_id or "\\" in run_id or "\0" in run_id:
            raise ValueError(f"run id {run_id!r} is not a plain name (no '/', '\\', '..' or NUL)")
        return self.home / "runs" / run_id

    def open_store(self) -> RecordStore:
        self.home.mkdir(parents=True, exist_ok=True)
        url = self.store_url
        if url is None:
            return RecordStore(self.store_path)
        store = RecordStore(url)
        kept = self.home / STORE_URL_FILE
        if not kept.is_file() or kept.read_text(encoding="utf-8").strip() != url:
            kept.touch(mode=0o600)
            kept.write_text(url + "\n", encoding="utf-8")
        return store

    def open_vectors(self, encoder: str = LEGACY_ENCODER) -> VectorStore:
        """The workspace's chromadb: existing collections with the encoder they were indexed with, new ones with
        `encoder` (`minilm`, `e5`, `openai:MODEL@URL`)."""
        # Imported here: chromadb and onnxruntime cost a second of start-up that commands reading only the
        # record store (summary, report, review) need not pay.
        from ragcourt.stores.embeddings import corpus_embedding
        from ragcourt.stores.vectors import VectorStore

        url = self.chroma_url
        if url is None:
            return VectorStore.persistent(self.chroma_path, corpus_embedding(encoder))
        self.home.mkdir(parents=True, exist_ok=True)
        kept = self.home / CHROMA_URL_FILE
        if not kept.is_file() or kept.read_text(encoding="utf-8").strip() != url:
            kept.write_text(url + "\n", encoding="utf-8")
        return VectorStore.http(*chroma_address(url), corpus_embedding(encoder))


def chroma_address(url: str) -> tuple[str, int]:
    """(host, port) of a Chroma server's http://HOST:PORT URL; ValueError naming the URL otherwise."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    try:
        port = parts.port or 8000
    except ValueError:
        port = None
    if parts.scheme != "http" or not parts.hostname or port is None or parts.path not in ("", "/"):
        raise ValueError(f"chroma {url!r} is no http://HOST:PORT URL of a Chroma server")
    return parts.hostname, port

