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

from pathlib import Path

import pytest
from fakes.old_workspaces import means, review_everything_yes, summary_of, workspace_copy
from typer.testing import CliRunner

from ragcourt.cli import app
from ragcourt.schema.calibration import CalibrationProfile

runner = CliRunner()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return workspace_copy("pre_split_workspace", tmp_path)


def test_a_run_stored_before_the_split_opens_with_the_figures_it_had(home: Path) -> None:
    shown = runner.invoke(app, ["summary", "deferred-run", "--home", str(home)])
    assert shown.exit_code == 0, shown.output
    printed = " ".join(shown.output.split())
    assert "6 samples (0 failed), 72 checks, 0 unscored verdicts, 0 failed splits, 20 escalated (20 awaiting review)" in printed
    assert means(summary_of(home, "deferred-run")) == {
        "answer_f1": 0.09, "c_ndcg": 0.898, "c_prec": 0.333, "completeness": 1.0, "conciseness": 1.0,
        "confidence_error": None, "element_coverage": 0.667, "exact_match": 0.0, "grounding_score": 1.0,
        "soft_correctness": 0.0, "verifiableness": 1.0,
    }


@pytest.mark.slow
def test_an_inline_review_paused_before_the_split_resumes_after_it(home: Path) -> None:
    review_everything_yes(home, "inline-run")
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
