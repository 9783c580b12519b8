"""The demo's 10 HotpotQA questions (reference RAG, lexical + semantic jury, offline) on 2 Dask workers with a
PostgreSQL store and a Chroma server give the per-question table of the single-process run on SQLite and an
embedded chromadb; `watch` and `summary` read the distributed run as a local one."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.chroma_server import chroma_server
from typer.testing import CliRunner

from ragcourt.cli import app
from ragcourt.data.loaders import BundledDataset, bundled, load_hotpotqa
from ragcourt.runs.workspace import Workspace

N_QUESTIONS = 10
N_CHUNKS = 100  # the bundled corpus lists each question's 10 paragraphs together: these are the first 10's


@pytest.fixture(scope="module")
def chroma_url() -> Iterator[str]:
    yield from chroma_server()


def _table(output: str) -> list[str]:
    """The per-question lines, in sample order (workers finish in any order)."""
    return sorted(line for line in output.splitlines() if line.startswith(("✓", "✗")))


def _metric_rows(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("│")]


@pytest.mark.slow
def test_the_demo_on_two_dask_workers_gives_the_single_process_table(
        postgres_store_url: str, chroma_url: str, tmp_path: Path) -> None:
    hotpot = load_hotpotqa(bundled(BundledDataset.HOTPOTQA_DEV_100))
    questions, chunks = hotpot.samples[:N_QUESTIONS], hotpot.corpus[:N_CHUNKS]
    assert all(set(s.gold_titles) <= {c.title for c in chunks} for s in questions)
    data = tmp_path / "demo.jsonl"
    data.write_text("".join(s.model_dump_json() + "\n" for s in questions))
    collection = f"demo_{uuid.uuid4().hex[:8]}"  # the server may be shared by other tests
    local, shared = Workspace(tmp_path / "local"), Workspace(tmp_path / "shared", chroma=chroma_url)
    for workspace in (local, shared):
        workspace.open_vectors().index(collection, chunks)
    command = ["run", str(data), "--system", "reference", "--collection", collection, "--judge", "lexical",
               "--judge", "semantic", "--method", "qcare", "--method", "elements", "--run-id", "demo-a"]
    env = {"COLUMNS": "220", "RAGCOURT_STORE": ""}

    alone = CliRunner().invoke(app, [*command, "--home", str(local.home)], env=env)
    assert alone.exit_code == 0, alone.output
    spread = CliRunner().invoke(app, [*command, "--home", str(shared.home), "--store", postgres_store_url,
                                      "--chroma", chroma_url, "--workers", "2"], env=env)
    assert spread.exit_code == 0, spread.output
    assert len(_table(alone.output)) == N_QUESTIONS
    assert _table(spread.output) == _table(alone.output)
    assert _metric_rows(spread.output) and _metric_rows(spread.output) == _metric_rows(alone.output)

    # later commands with --home alone: the store's and the Chroma server's URLs are kept in the workspace
    for command_line in (["summary", "demo-a"], ["watch", "demo-a", "--once"]):
        by_home = [CliRunner().invoke(app, [*command_line, "--home", str(home)], env=env)
                   for home in (local.home, shared.home)]
        assert all(result.exit_code == 0 for result in by_home), by_home[1].output
        assert _metric_rows(by_home[1].output) == _metric_rows(by_home[0].output)
    watched = CliRunner().invoke(app, ["watch", "demo-a", "--once", "--home", str(shared.home)], env=env)
    assert sum(q.id[:12] in watched.output for q in questions) == N_QUESTIONS  # every worker's questions
