"""Workspaces written by older code (tests/fixtures/pre_*_workspace), opened by today's: a copy to resume in,
a run's figures as a summary gives them, and an inline review answered "yes" in a process of its own."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from fixtures import FIXTURES

from ragcourt.analysis.summary import RunSummary, summarize
from ragcourt.stores.records import RecordStore


def workspace_copy(name: str, tmp_path: Path) -> Path:
    """A copy of tests/fixtures/NAME: resuming writes to the store and the checkpoints."""
    return Path(shutil.copytree(FIXTURES / name, tmp_path / "ws"))


def summary_of(home: Path, run_id: str) -> RunSummary:
    with RecordStore(home / "store.sqlite") as store:
        return summarize(store, run_id)


def means(summary: RunSummary) -> dict[str, float | None]:
    return {row.name: None if row.mean is None else round(row.mean, 3) for row in summary.metrics}


def review_everything_yes(home: Path, run_id: str) -> None:
    """`ragcourt review RUN` answering "y" to every check, in a process of its own with LangGraph's strict msgpack
    mode: a record class the checkpoint serializer did not allow would be refused there (permissive mode would
    revive it and only warn)."""
    reviewed = subprocess.run(
        [sys.executable, "-c", "from ragcourt.cli import main; main()", "review", run_id, "--home", str(home),
         "--reviewer", "ann"],
        input="y\n" * 50, capture_output=True, text=True, timeout=240,
        env={**os.environ, "LANGGRAPH_STRICT_MSGPACK": "true", "COLUMNS": "200"},
    )
    assert reviewed.returncode == 0, reviewed.stdout + reviewed.stderr
    assert "unregistered type" not in reviewed.stderr + reviewed.stdout
