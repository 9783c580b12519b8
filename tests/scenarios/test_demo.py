"""The README's demo, for real: bundled HotpotQA indexed with the offline MiniLM into an embedded chromadb,
the reference RAG evaluated by a lexical + semantic jury; the store reads back into pandas."""

from __future__ import annotations

from typer.testing import CliRunner

from ragcourt.cli import app
from ragcourt.runs.workspace import Workspace
from ragcourt.schema import Review, SampleDiagnostics, Verdict


def test_demo_streams_lines_and_leaves_a_readable_store(tmp_path):
    result = CliRunner().invoke(app, ["demo", "--home", str(tmp_path), "--questions", "3"])
    assert result.exit_code == 0, result.output
    assert result.output.count("✓") == 3  # one streamed line per finished question
    assert "gap shares" in result.output and "ragcourt review" in result.output

    store = Workspace(tmp_path).open_store()
    try:
        (run,) = store.list_runs()
        diagnostics = store.to_frame(SampleDiagnostics, run_id=run.run_id)
        verdicts = store.to_frame(Verdict, run_id=run.run_id)
        reviews = store.to_frame(Review, run_id=run.run_id)
        assert len(diagnostics) == 3
        assert set(verdicts["judge_id"]) == {"lexical", "semantic"}
        assert (verdicts["status"] == "ok").all()
        assert reviews.empty  # nobody has reviewed yet; the frame still has a shape
        assert (Workspace(tmp_path).run_dir(run.run_id) / "diagnostics.jsonl").read_text().count("\n") == 3
    finally:
        store.close()

    again = CliRunner().invoke(app, ["demo", "--home", str(tmp_path), "--questions", "3"])
    assert again.exit_code == 0, again.output
    assert "(0.0s spent indexing)" in again.output  # the collection reopens in a new client
    assert "resuming run" in again.output and "3 of 3 samples finished before" in again.output
    assert again.output.count("(stored)") == 3
