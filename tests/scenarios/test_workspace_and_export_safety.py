"""Run ids stay inside the workspace; CSV exports cannot smuggle spreadsheet formulas."""

from __future__ import annotations

import pandas as pd
import pytest
from typer.testing import CliRunner

from ragcourt.cli import app
from ragcourt.report.export import NamedTable, export_tables
from ragcourt.runs.workspace import Workspace


@pytest.mark.parametrize("run_id", ["..", "../elsewhere", "a/b", "a\\b", ""])
def test_a_run_id_that_is_not_a_plain_name_is_refused(tmp_path, run_id: str) -> None:
    with pytest.raises(ValueError, match="not a plain name"):
        Workspace(tmp_path).run_dir(run_id)


def test_the_cli_refuses_such_a_run_id_with_exit_2(tmp_path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text('{"id": "q1", "question": "Why?", "answer": "Because.", "contexts": ["Because."]}\n')
    result = CliRunner().invoke(app, ["run", str(data), "--system", "precomputed", "--run-id", "../out",
                                      "--home", str(tmp_path / "home")])
    assert result.exit_code == 2 and "not a plain name" in result.output
    assert not (tmp_path / "out").exists()


def test_csv_cells_that_a_spreadsheet_would_run_get_a_leading_quote(tmp_path) -> None:
    frame = pd.DataFrame({"answer": ["=HYPERLINK(\"http://x\")", "+1", "@SUM(A1)", "plain", None],
                          "score": [-0.5, 1.0, 0.0, 2.0, 3.0]})
    export_tables([NamedTable("answers", "Answers", frame)], tmp_path)
    back = pd.read_csv(tmp_path / "answers.csv")
    assert list(back["answer"].iloc[:4]) == ["'=HYPERLINK(\"http://x\")", "'+1", "'@SUM(A1)", "plain"]
    assert list(back["score"]) == [-0.5, 1.0, 0.0, 2.0, 3.0]  # numbers are untouched
    assert list(pd.read_parquet(tmp_path / "answers.parquet")["answer"].iloc[:2]) == ["=HYPERLINK(\"http://x\")", "+1"]


def test_two_runs_with_different_juries_in_one_workspace_each_show_their_own_judges_only(tmp_path) -> None:
    """Checks are content addressed, so both runs link the same checks; the second jury's verdicts on them
    must not appear in the first run's export, summary or drill-down."""
    data = tmp_path / "d.jsonl"
    data.write_text('{"id": "q1", "question": "Who wrote Hamlet?", "reference_answer": "Shakespeare wrote Hamlet.",'
                    ' "answer": "Shakespeare wrote Hamlet.", "contexts": ["Hamlet is a play by Shakespeare."]}\n')
    home, runner = tmp_path / "home", CliRunner()
    for run_id, judges in (("solo", ["lexical"]), ("pair", ["lexical", "semantic"])):
        ran = runner.invoke(app, ["run", str(data), "--system", "precomputed", "--run-id", run_id, "--home", str(home),
                                  *[arg for j in judges for arg in ("--judge", j)]])
        assert ran.exit_code == 0, ran.output
    for run_id, judges in (("solo", {"lexical"}), ("pair", {"lexical", "semantic+e5+minilm"})):
        out = tmp_path / run_id
        exported = runner.invoke(app, ["report", run_id, "--home", str(home), "--export", str(out)])
        assert exported.exit_code == 0, exported.output
        verdicts = pd.read_csv(out / "verdicts.csv")
        assert set(verdicts["judge"]) == judges
        with Workspace(home).open_store() as store:
            from ragcourt.analysis.summary import summarize

            assert {t.judge_id for t in store.verdict_tallies(run_id)} == judges
            assert summarize(store, run_id).n_verdicts == len(verdicts)
    solo_report = (home / "runs" / "solo" / "report.html").read_text(encoding="utf-8")
    assert "semantic" not in solo_report
