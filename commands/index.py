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
from ragcourt.schema.config import LEGACY_ENCODER, ConfigError, load_config


def index(
    corpus: Annotated[Path, typer.Argument(help="HotpotQA IRCoT JSONL, or JSONL of {id, title, text}")],
    collection: Annotated[str, typer.Option(help="chromadb collection name")] = HOTPOTQA_COLLECTION,
    encoder: Annotated[str | None, typer.Option(
        help="the corpus's encoder: minilm (English-only), e5 (multilingual) or openai:MODEL@URL (an "
             "OpenAI-compatible embeddings endpoint); default: the config's 'encoder', else minilm")] = None,
    config_file: Annotated[Path | None, typer.Option("--config", help="a YAML or TOML EvalConfig: its 'encoder'")] = None,
    home: Home = DEFAULT_HOME,
) -> None:
    """Index a corpus into the workspace's chromadb (embedded, offline embeddings)."""
    chosen = encoder or _config_encoder(config_file) or LEGACY_ENCODER
    try:
        chunks = _corpus(corpus)
    except DatasetError as error:
        fail(str(error))
    try:
        seconds = index_chunks(Workspace(home), collection, chunks, _single(chosen))
    except ValueError as error:
        fail(str(error))
    console.print(escape(f"indexed {len(chunks)} chunks into '{collection}' with {chosen} in {seconds:.1f}s"))


def _config_encoder(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        return load_config(path).encoder
    except ConfigError as error:
        fail(str(error))
    raise AssertionError("unreachable")


def _single(encoder: str) -> str:
    """A corpus has one encoder: a choice per check kind (RELEVANCE+ENTAILMENT) indexes with its relevance one."""
    return encoder.partition("+")[0] if not encoder.startswith("openai:") else encoder


def _corpus(path: Path) -> list[Chunk]:
    return list(load_corpus_file(path))


def register(app: typer.Typer) -> None:
    app.command("index")(index)
