"""`ragcourt index CORPUS`: index a corpus into the workspace's chromadb."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from ragcourt.commands.evaluation import index_chunks
from ragcourt.commands.output import Home, console, fail
from ragcourt.data.loaders import DatasetError, load_corpus_file
from ragcourt.runs.workspace import DEFAULT_HOME, HOTPOTQA_COLLECTION, Workspace
from ragcourt.schema import Chunk


def index(
    corpus: Annotated[Path, typer.Argument(help="HotpotQA IRCoT JSONL, or JSONL of {id, title, text}")],
    collection: Annotated[str, typer.Option(help="chromadb collection name")] = HOTPOTQA_COLLECTION,
    home: Home = DEFAULT_HOME,
) -> None:
    """Index a corpus into the workspace's chromadb (embedded, offline MiniLM embeddings)."""
    try:
        chunks = _corpus(corpus)
    except DatasetError as error:
        fail(str(error))
    try:
        seconds = index_chunks(Workspace(home), collection, chunks)
    except ValueError as error:
        fail(str(error))
    console.print(escape(f"indexed {len(chunks)} chunks into '{collection}' in {seconds:.1f}s"))


def _corpus(path: Path) -> list[Chunk]:
    return list(load_corpus_file(path))


def register(app: typer.Typer) -> None:
    app.command("index")(index)
