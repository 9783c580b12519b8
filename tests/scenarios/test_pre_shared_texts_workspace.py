"""A workspace written before texts were stored once opens, migrates and gives the figures it had.

tests/fixtures/pre_shared_texts_workspace was written by the code just before the record store shared its texts
(schema version 1: every chunk inline in each check that read it, LLM replies as plain text):
`ragcourt run samples.jsonl --system precomputed --judge lexical --judge semantic --run-id old-run`, then one
LLM cache row `old-key` put with `RecordStore.cache_put`. The figures asserted below are what that code printed
for the same commands (`summary old-run`; the same `run` again, a resume; `review old-run` answering "y" to every
check; `rerun --changed old-run --dataset edited.jsonl --run-id new-run --system precomputed` with the first
sample's reference answer edited).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from fakes.old_workspaces import means, review_everything_yes, summary_of, workspace_copy
from typer.testing import CliRunner

from ragcourt.cli import app
from ragcourt.schema import SCHEMA_VERSION, Check, Reconciled, Retrieval, Verdict
from ragcourt.stores import CacheEntry, RecordStore

runner = CliRunner()
RUN = "old-run"
OLD_FIGURES = {
    "answer_f1": 0.09, "c_ndcg": 0.898, "c_prec": 0.333, "completeness": 1.0, "conciseness": 1.0,
    "confidence_error": None, "element_answer_coverage": 0.333, "element_coverage": 0.667, "exact_match": 0.0,
    "grounding_score": 1.0, "soft_correctness": 0.0, "verifiableness": 1.0,
}
RUN_ARGS = ["--system", "precomputed", "--judge", "lexical", "--judge", "semantic", "--run-id", RUN]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return workspace_copy("pre_shared_texts_workspace", tmp_path)


def _raw_payloads(home: Path, table: str) -> list[str]:
    """The rows as the old code wrote them, read before any ragcourt opens the file."""
    with sqlite3.connect(home / "store.sqlite") as conn:
        return [row[0] for row in conn.execute(f"SELECT payload FROM {table} ORDER BY rowid")]


def test_the_old_store_migrates_and_reads_every_record_as_written(home: Path) -> None:
    old_checks = [Check.model_validate_json(p) for p in _raw_payloads(home, "checks")]
    old_verdicts = [Verdict.model_validate_json(p) for p in _raw_payloads(home, "verdicts")]
    old_retrievals = [Retrieval.model_validate_json(p) for p in _raw_payloads(home, "retrievals")]
    old_reconciled = [Reconciled.model_validate_json(p) for p in _raw_payloads(home, "reconciled")]
    assert len(old_checks) == 72 and old_retrievals
    with RecordStore(home / "store.sqlite") as store:
        assert store.query("SELECT value FROM meta WHERE key = 'schema_version'") == [(str(SCHEMA_VERSION),)]
        assert store.checks_for(RUN) == old_checks
        assert store.get_verdicts([c.id for c in old_checks]) == old_verdicts
        assert store.get_retrievals(RUN) == old_retrievals
        assert store.get_reconciled(RUN) == old_reconciled
        assert json.loads(store.cache_get("old-key") or "")["choices"][0]["message"]["content"] == (
            "a reply cached before replies were compressed")
        # new rows next to the old ones: shared texts and compressed replies, each read back as written
        store.cache_put("new-key", "x" * 500)
        assert store.cache_get("new-key") == "x" * 500
        assert set(store.to_frame(CacheEntry)["key"]) == {"old-key", "new-key"}
        moved = old_checks[0].model_copy(update={"id": "", "target_text": old_checks[0].target_text + " again"})
        moved = Check.model_validate(moved.model_dump())
        store.put(moved)
        assert store.get_checks([moved.id, old_checks[1].id]) == [moved, old_checks[1]]


def test_the_figures_are_those_the_old_code_gave_and_a_resume_keeps_them(home: Path) -> None:
    summary = summary_of(home, RUN)
    assert (summary.n_samples, summary.n_failed, summary.n_checks, summary.n_escalated, summary.n_pending) == (
        6, 0, 72, 20, 20)
    assert means(summary) == OLD_FIGURES
    resumed = runner.invoke(app, ["run", str(home / "samples.jsonl"), *RUN_ARGS, "--home", str(home)])
    assert resumed.exit_code == 0, resumed.output
    again = summary_of(home, RUN)
    assert (again.n_samples, again.n_checks, again.n_escalated, again.n_pending) == (6, 72, 20, 20)
    assert means(again) == OLD_FIGURES


def test_a_review_after_the_migration_decides_as_the_old_code_did(home: Path) -> None:
    review_everything_yes(home, RUN)
    after = summary_of(home, RUN)
    assert (after.n_samples, after.n_checks, after.n_escalated, after.n_pending) == (6, 72, 20, 0)
    assert means(after) == {**OLD_FIGURES, "c_ndcg": 0.866, "c_prec": 0.583, "completeness": 0.833,
                            "conciseness": 0.833, "element_answer_coverage": 0.5, "element_coverage": 0.833}


def test_a_rerun_of_the_changed_samples_copies_the_old_rows(home: Path) -> None:
    lines = (home / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first["reference_answer"] = "The answer is the B-17 bomber, built by Boeing."
    (home / "edited.jsonl").write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n", encoding="utf-8")
    done = runner.invoke(app, ["rerun", "--changed", RUN, "--dataset", str(home / "edited.jsonl"), "--run-id",
                               "new-run", "--system", "precomputed", "--home", str(home)])
    assert done.exit_code == 0, done.output
    summary = summary_of(home, "new-run")
    assert (summary.n_samples, summary.n_checks, summary.n_escalated, summary.n_pending) == (6, 72, 20, 20)
    assert means(summary) == OLD_FIGURES
