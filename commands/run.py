"""`ragcourt run DATASET`: evaluate a dataset with the reference or a precomputed system."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from ragcourt.commands.evaluation import evaluate_and_print, read_samples, reference_system_of
from ragcourt.commands.output import Home, console, fail
from ragcourt.data.loaders import DatasetError
from ragcourt.metrics.text import has_cjk
from ragcourt.runs.models import Models, check_model_specs
from ragcourt.runs.workspace import DEFAULT_HOME, HOTPOTQA_COLLECTION, Workspace, derived_run_id
from ragcourt.schema import Sample
from ragcourt.schema.config import ConfigError, EvalConfig, Method, load_config
from ragcourt.systems import Precomputed, RAGSystem


def run(
    dataset: Annotated[Path, typer.Argument(help="samples: JSONL / JSON / CSV, or a HotpotQA IRCoT file")],
    system: Annotated[str, typer.Option(help="'reference' (chromadb + answerer) or 'precomputed'")] = "reference",
    judge: Annotated[list[str] | None, typer.Option(help="repeatable: lexical, semantic, openai:MODEL\\[@URL]")] = None,
    config_file: Annotated[Path | None, typer.Option("--config", help="YAML or TOML EvalConfig")] = None,
    method: Annotated[list[Method] | None, typer.Option(help="repeatable; default from config")] = None,
    collection: Annotated[str, typer.Option(help="chromadb collection of the reference system")] = HOTPOTQA_COLLECTION,
    run_id: Annotated[str | None, typer.Option(
        help="re-use an id to resume a run (refused when a sample it holds was edited since: see `rerun "
             "--changed`); default: derived from the configuration, the system and the samples' contents")] = None,
    limit: Annotated[int | None, typer.Option(help="only the first N samples", min=1)] = None,
    check_endpoints: Annotated[bool, typer.Option(
        "--check-endpoints/--no-check-endpoints",
        help="before the first sample, ask every configured LLM endpoint once (GET {base_url}/models; 404 and 405 "
             "pass) and stop with exit 2 when one cannot answer (connection refused, DNS, timeout, 401, 403); "
             "--no-check-endpoints for a server that rejects that request")] = True,
    home: Home = DEFAULT_HOME,
) -> None:
    """Evaluate a dataset; streams one line per finished question.

    The same command again resumes the run: finished samples come from the store, and those with work unscored
    for a transient reason (timeout, error) have only that work asked again. After an edit of the dataset the
    derived run id is another one, so the edited samples are evaluated afresh in a new run (unchanged work
    comes from the store and the LLM cache); `ragcourt rerun --changed RUN` evaluates only the changed ones.
    Before the first sample every configured LLM endpoint is asked once: one that cannot answer stops the run
    (exit 2, nothing evaluated) with a line naming the judge or role, the URL and the cause.
    """
    try:
        config = load_config(config_file) if config_file else EvalConfig()
        overrides: dict = {}
        if judge:
            overrides["judges"] = [{"model": j} for j in judge]
        if method:
            overrides["methods"] = list(method)
        if overrides:
            config = config.with_overrides(**overrides)
        check_model_specs(config, str(config_file) if config_file else "options")
    except (ConfigError, ValueError) as error:
        fail(str(error))
    samples = _samples(dataset)
    if limit:
        samples = samples[:limit]
    workspace = Workspace(home)
    make_system: Callable[[Models], RAGSystem]
    if system == "precomputed":
        make_system, collection_used = (lambda models: Precomputed(bounds=models.bounds_generator())), None
    elif system == "reference":
        if not workspace.open_vectors().has_collection(collection):
            fail(f"no chromadb collection '{collection}' in {workspace.chroma_path}: run `ragcourt index` first")
        make_system, collection_used = reference_system_of(workspace, collection), collection
    else:
        fail(f"unknown system '{system}' (use reference or precomputed)")
    run_id = run_id or derived_run_id(config, samples, system, digits=10)
    try:
        workspace.run_dir(run_id)
    except ValueError as error:
        fail(str(error))
    _warn_about_english_only_embeddings(samples, config, system == "reference")
    evaluate_and_print(workspace, config, make_system, samples, run_id, str(dataset), collection_used,
                       check_endpoints=check_endpoints)
    console.print(escape(f"run {run_id}: {workspace.run_dir(run_id)}"))


def _samples(path: Path) -> list[Sample]:
    try:
        return read_samples(path)
    except DatasetError as error:
        fail(str(error))
    except OSError as error:
        fail(f"{path}: {error.strerror}")
    raise AssertionError("unreachable")


def _warn_about_english_only_embeddings(samples: Sequence[Sample], config: EvalConfig, reference: bool) -> None:
    """The offline MiniLM is English-only: on CJK questions its retrieval and the semantic judge are near random,
    and nothing else would say so (a Chinese walkthrough got confident wrong verdicts, unanimous with lexical)."""
    users = [*(["the semantic judge"] if any(j.model == "semantic" for j in config.judges) else []),
             *(["the reference system's retrieval"] if reference else [])]
    cjk = sum(has_cjk(s.question) for s in samples)
    if users and cjk * 10 >= len(samples):
        console.print(f"[yellow]warning:[/yellow] {cjk} of {len(samples)} questions are in Chinese or Japanese; the "
                      f"offline embedding (all-MiniLM-L6-v2) is English-only, so {' and '.join(users)} are close to "
                      "random on them: use LLM judges (and your own retriever) for such data")


def register(app: typer.Typer) -> None:
    app.command("run")(run)
