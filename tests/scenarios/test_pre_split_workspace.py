"""A workspace written before runs/ was split into its subsystems (issue 34) opens, resumes and applies its
calibration profile after it.

tests/fixtures/pre_split_workspace was written by the code of commit bfbc4b7 (live, cluster, validity and
observability modules still in runs/): `ragcourt run samples.jsonl --system precomputed --judge lexical --judge
semantic --run-id deferred-run`, `ragcourt run samples.jsonl --limit 2 --config inline.yaml --run-id inline-run`
(both samples paused at an inline review, their state in runs/inline-run/checkpoints.sqlite), and `ragcourt
calibrate --suite wice --file claim_dev_sample_60.jsonl --judge lexical --fit-threshold kappa --save-profile
profile.json`. The figures asserted below are what that code printed for the same commands (`summary
deferred-run`; `review inline-run` answering "y" to every check, then `summary inline-run`; `run samples.jsonl
--system precomputed --judge lexical --calibration-profile profile.json --run-id profiled-run`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures import FIXTURES
from typer.testing import CliRunner

from ragcourt.analysis.summary import RunSummary, summarize
from ragcourt.cli import app
from ragcourt.schema.calibration import CalibrationProfile
from ragcourt.stores.records import RecordStore

runner = CliRunner()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A copy: resuming writes to the store and the checkpoints."""
    return Path(shutil.copytree(FIXTURES / "pre_split_workspace", tmp_path / "ws"))


def summary_of(home: Path, run_id: str) -> RunSummary:
    with RecordStore(home / "store.sqlite") as store:
        return summarize(store, run_id)


def means(summary: RunSummary) -> dict[str, float | None]:
    return {row.name: None if row.mean is None else round(row.mean, 3) for row in summary.metrics}


def test_a_run_stored_before_the_split_opens_with_the_figures_it_had(home: Path) -> None:
    shown = runner.invoke(app, ["summary", "deferred-run", "--home", str(home)])
    assert shown.exit_code == 0, shown.output
    printed = " ".join(shown.output.split())
    assert "6 samples (0 failed), 72 checks, 0 unscored verdicts, 20 escalated (20 awaiting review)" in printed
    assert means(summary_of(home, "deferred-run")) == {
        "answer_f1": 0.09, "c_ndcg": 0.898, "c_prec": 0.333, "completeness": 1.0, "conciseness": 1.0,
        "confidence_error": None, "element_coverage": 0.667, "exact_match": 0.0, "grounding_score": 1.0,
        "soft_correctness": 0.0, "verifiableness": 1.0,
    }


def test_an_inline_review_paused_before_the_split_resumes_after_it(home: Path) -> None:
    # In a process of its own with LangGraph's strict msgpack mode: a class the serializer did not allow would be
    # refused there (permissive mode would revive it and only warn).
    reviewed = subprocess.run(
        [sys.executable, "-c", "from ragcourt.cli import main; main()", "review", "inline-run", "--home", str(home),
         "--reviewer", "ann"],
        input="y\n" * 50, capture_output=True, text=True, timeout=240,
        env={**os.environ, "LANGGRAPH_STRICT_MSGPACK": "true", "COLUMNS": "200"},
    )
    assert reviewed.returncode == 0, reviewed.stdout + reviewed.stderr
    assert "unregistered type" not in reviewed.stderr + reviewed.stdout
    after = summary_of(home, "inline-run")
    assert (after.n_samples, after.n_failed, after.n_checks, after.n_escalated, after.n_pending) == (2, 0, 24, 8, 0)
    # the old code's figures, and the answer side of the element coverage (1 of the 2 elements) today's scorer adds
    assert means(after) == {
        "answer_f1": 0.036, "c_ndcg": 0.75, "c_prec": 0.625, "completeness": 0.5, "conciseness": 0.5,
        "confidence_error": None, "element_answer_coverage": 0.5, "element_coverage": 1.0,
        "exact_match": 0.0, "grounding_score": 1.0, "soft_correctness": 0.0, "verifiableness": 1.0,
    }


def test_a_calibration_profile_saved_before_the_split_loads_and_decides_as_it_did(home: Path) -> None:
    profile = CalibrationProfile.model_validate_json((home / "profile.json").read_text(encoding="utf-8"))
    assert [(t.judge_id, str(t.kind), round(t.threshold, 4)) for t in profile.thresholds] == [
        ("lexical", "claim_supported", 0.6283)]
    done = runner.invoke(app, ["run", str(home / "samples.jsonl"), "--system", "precomputed", "--judge", "lexical",
                               "--calibration-profile", str(home / "profile.json"), "--run-id", "profiled-run",
                               "--home", str(home)])
    assert done.exit_code == 0, done.output
    summary = summary_of(home, "profiled-run")
    assert (summary.n_samples, summary.n_checks, summary.n_escalated) == (6, 68, 0)
    got = means(summary)
    assert {name: got[name] for name in ("c_ndcg", "c_prec", "completeness", "element_coverage",
                                         "verifiableness")} == {
        "c_ndcg": 0.777, "c_prec": 0.333, "completeness": 0.167, "element_coverage": 0.833, "verifiableness": 1.0}
