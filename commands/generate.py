"""`ragcourt generate COLLECTION --out FILE.jsonl`: one LLM-written user question per corpus document
(all, or a seeded sample), with the document as gold document (seed 000, 4.2)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from ragcourt.commands.endpoints import require_endpoint
from ragcourt.commands.output import RAN_AND_FAILED, Home, console
from ragcourt.commands.output import fail as _fail
from ragcourt.data.question_sets import (
    DOCUMENT_GAP_WARNING,
    generate_question_set,
    pick_documents,
    sample_row,
)
from ragcourt.llm.spec import ModelSpec
from ragcourt.runs.models import Models
from ragcourt.runs.workspace import DEFAULT_HOME, Workspace
from ragcourt.schema.config import EvalConfig
from ragcourt.stores.vectors import VectorStore


def generate(
    collection: Annotated[str, typer.Argument(help="chromadb collection of the indexed corpus")],
    out: Annotated[Path, typer.Option(help="JSONL file to write: one sample per line, for `ragcourt run`")],
    model: Annotated[str, typer.Option(help="model spec that writes the questions, e.g. openai:MODEL or openai:MODEL@URL")],
    n: Annotated[int | None, typer.Option(help="a seeded sample of N documents (default: all)", min=1)] = None,
    seed: Annotated[int, typer.Option(help="seed of the document sample")] = 0,
    check_endpoints: Annotated[bool, typer.Option(
        "--check-endpoints/--no-check-endpoints",
        help="before the first question, ask the model's server once (as `run --check-endpoints` does) and stop "
             "with exit 2 when it cannot answer")] = True,
    home: Home = DEFAULT_HOME,
) -> None:
    """Write one realistic user question per document; the document becomes the gold document."""
    try:
        spec = ModelSpec.parse(model)  # before the corpus is read: a placeholder copied from the help costs nothing
    except ValueError as error:
        _fail(f"--model: {error}")
    require_endpoint(spec, "the question writer", reach=check_endpoints)
    workspace = Workspace(home)
    # Listing needs no embedding: the collection reopens with the function it was created with.
    vectors = VectorStore.persistent(workspace.chroma_path)
    if not vectors.has_collection(collection):
        _fail(f"no chromadb collection '{collection}' in {workspace.chroma_path}: run `ragcourt index` first")
    documents = pick_documents(vectors.all_chunks(collection), n, seed)
    if not documents:
        _fail(f"the chromadb collection '{collection}' in {workspace.chroma_path} holds no document")
    console.print(f"[yellow]note:[/yellow] {DOCUMENT_GAP_WARNING}")
    store = workspace.open_store()
    try:
        models = Models(EvalConfig(), store)
        client = models.client(model, "question_writer")
        result = asyncio.run(generate_question_set(client, documents))
    finally:
        store.close()
    if not result.samples:  # no file, not an empty one that reads as a set of no questions
        first = result.failures[0]
        _fail(f"{model} wrote no question: all {len(documents)} documents failed; the first, {first.document_id}: "
              f"{first.reason}; {out} was not written", RAN_AND_FAILED)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as handle:
        for sample in result.samples:
            handle.write(json.dumps(sample_row(sample), ensure_ascii=False) + "\n")
    for failure in result.failures:
        console.print(f"[yellow]no question[/yellow] for document {escape(failure.document_id)}: "
                      f"{escape(failure.reason)}")
    console.print(f"wrote {len(result.samples)} questions from {len(documents)} documents of '{collection}' "
                  f"to {out} ({len(result.failures)} failed)")


def register(app: typer.Typer) -> None:
    app.command("generate")(generate)
