"""A workspace written before the layout move opens and resumes after it.

tests/fixtures/pre_layout_workspace was written by the code of commit 39a4494 (every module at the root,
records defined in `ragcourt.schema` itself): `ragcourt run samples.jsonl --system precomputed --judge lexical
--judge semantic --run-id deferred-run`, then `ragcourt run` of its first two rows with `--config inline.yaml
--run-id inline-run`, which paused both samples at an inline review (checkpoints name their records
`ragcourt.schema.Verdict` and so on). The figures asserted below are what that code printed for the same
commands (`summary deferred-run`; `review inline-run` answering "y" to every check, then `summary`).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes.old_workspaces import means, review_everything_yes, summary_of, workspace_copy
from typer.testing import CliRunner

from ragcourt.cli import app

runner = CliRunner()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return workspace_copy("pre_layout_workspace", tmp_path)


def test_a_run_stored_before_the_move_opens_in_summary_and_report(home: Path) -> None:
    shown = runner.invoke(app, ["summary", "deferred-run", "--home", str(home)])
    assert shown.exit_code == 0, shown.output
    printed = " ".join(shown.output.split())  # the title wraps at the table's width
    assert "6 samples (0 failed), 72 checks, 0 unscored verdicts, 0 failed splits, 20 escalated (20 awaiting review)" in printed
    summary = summary_of(home, "deferred-run")
    assert (summary.n_samples, summary.n_checks, summary.n_escalated, summary.n_pending) == (6, 72, 20, 20)
    assert means(summary) == {
        "answer_f1": 0.09, "c_ndcg": 0.777, "c_prec": 0.333, "completeness": 0.167, "conciseness": 0.167,
        "confidence_error": None, "element_coverage": 0.833, "exact_match": 0.0, "grounding_score": 0.5,
        "soft_correctness": 0.0, "verifiableness": 1.0,
    }

    out = home / "report.html"
    written = runner.invoke(app, ["report", "deferred-run", "--home", str(home), "--out", str(out)])
    assert written.exit_code == 0, written.output
    html = out.read_text(encoding="utf-8")
    assert "deferred-run" in html and "72" in html
    assert "Which airplane was this Major test-flying" in html


@pytest.mark.slow
def test_an_inline_review_paused_before_the_move_resumes_after_it(home: Path) -> None:
    before = summary_of(home, "inline-run")
    assert (before.n_samples, before.n_checks, before.n_pending) == (0, 24, 8)

    review_everything_yes(home, "inline-run")
    after = summary_of(home, "inline-run")
    assert (after.n_samples, after.n_failed, after.n_checks, after.n_escalated, after.n_pending) == (2, 0, 24, 8, 0)
    # the review rescored both samples with today's scorer: it adds the answer side of the element coverage
    assert means(after) == {
        "answer_f1": 0.036, "c_ndcg": 0.75, "c_prec": 0.625, "completeness": 0.5, "conciseness": 0.5,
        "confidence_error": None, "element_answer_coverage": 0.5, "element_coverage": 1.0, "exact_match": 0.0,
        "grounding_score": 0.5, "soft_correctness": 0.0, "verifiableness": 1.0,
    }
    assert after.element_shares == pytest.approx(before_move_shares())


def before_move_shares() -> dict[str, float]:
    """The inline run's gap shares as the old code printed them: generation_gap 100 %, the others 0 %."""
    return {"generation_gap": 1.0, "retrieval_gap": 0.0, "document_gap": 0.0}
