"""`ragcourt calibrate --ragchecker` with the lexical judge (issue 7's worked example): the RAGChecker
human-labelled pairs judged in both orders and compared with each annotator, with the pairs both annotators
agree on, and annotator against annotator.

The figures are read off the confusion matrices the command prints (rows: the annotator, columns: lexical):
annotator 1 [[4, 3, 4], [2, 8, 3], [5, 3, 8]] -> accuracy (4 + 8 + 8) / 40 = 0.500; annotator 2
[[8, 2, 7], [0, 5, 4], [3, 7, 4]] -> (8 + 5 + 4) / 40 = 0.425. The annotators agree on 6 of the 40 pairs, so
the agreeing-annotators reference has 6 labels and 34 items without one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragcourt.api import Workspace
from ragcourt.calibration import HumanLabel, load_labels
from ragcourt.cli import app
from ragcourt.commands.output import console
from ragcourt.datasets import DatasetError
from ragcourt.schema import Label


def test_calibrate_on_the_ragchecker_pairs_prints_agreement_per_annotator_and_for_their_consensus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(console, "width", 200)  # one line per table row
    result = CliRunner().invoke(app, ["calibrate", "--ragchecker", "--bootstrap", "50", "--home", str(tmp_path)])
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "40 pairs, 80 annotations" in said and "position-bias Ties per judge: {'lexical': 0}" in said
    rows = {}
    for line in result.output.splitlines():
        cells = [c.strip() for c in line.strip().strip("│").split("│")]
        if line.startswith("│") and len(cells) == 7:  # rater, reference, n, undecided, no label, accuracy, kappa
            rows[cells[0], cells[1]] = [cells[2], cells[3], cells[4], cells[5].split(" [")[0], cells[6].split(" [")[0]]
    assert rows["lexical", "annotator 1"] == ["40", "0", "0", "0.500", "0.243"]
    assert rows["lexical", "annotator 2"][:4] == ["40", "0", "0", "0.425"]
    assert rows["lexical", "agreeing annotators"][:3] == ["6", "0", "34"]
    assert rows["annotator 1", "annotator 2"][:4] == ["40", "0", "0", "0.150"]


def _said(result) -> str:
    return " ".join(result.output.split())


def test_calibrate_on_a_run_that_does_not_exist_says_so(tmp_path: Path) -> None:
    with Workspace(tmp_path).open_store():
        pass  # an empty store: the workspace exists, the run does not
    result = CliRunner().invoke(app, ["calibrate", "--run", "nope", "--home", str(tmp_path)])
    assert result.exit_code == 2
    assert _said(result) == f"error: no run 'nope' in {tmp_path / 'store.sqlite'}"


def test_calibrate_without_a_store_says_so_and_creates_none(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    for source in (["--run", "nope"], ["--labels", str(tmp_path / "labels.jsonl")]):
        result = CliRunner().invoke(app, ["calibrate", *source, "--home", str(home)])
        assert result.exit_code == 2
        assert _said(result) == f"error: no record store at {home / 'store.sqlite'}"
    assert not home.exists()


def test_calibrate_on_a_run_without_reviews_says_what_to_do(tmp_path: Path) -> None:
    data = tmp_path / "samples.jsonl"
    data.write_text(json.dumps({"id": "a", "question": "Where is Acme?", "reference_answer": "In Springfield.",
                                "contexts": ["Acme is in Springfield."], "answer": "In Springfield."}) + "\n")
    runner = CliRunner()
    ran = runner.invoke(app, ["run", str(data), "--system", "precomputed", "--run-id", "base",
                              "--home", str(tmp_path)])
    assert ran.exit_code == 0, ran.output
    result = runner.invoke(app, ["calibrate", "--run", "base", "--home", str(tmp_path)])
    assert result.exit_code == 2
    assert _said(result) == ("error: run 'base' has no review decisions to use as human labels: review its "
                             "escalated checks first (`ragcourt review base`), or give --labels FILE")


def test_a_bad_labels_file_is_refused_with_every_bad_line(tmp_path: Path) -> None:
    with Workspace(tmp_path).open_store():
        pass
    labels = tmp_path / "labels.jsonl"
    labels.write_text("\n".join([
        json.dumps({"check_id": "c1", "label": "yes"}),
        json.dumps({"check_id": "c2", "label": "maybe"}),
        json.dumps({"check_id": 3, "score": "high"}),
        "{not json",
        json.dumps({"check_id": "c4", "annotator": "ann"}),
        json.dumps({"check_id": "c5", "label": "no", "by": "me"}),
    ]) + "\n")
    result = CliRunner().invoke(app, ["calibrate", "--labels", str(labels), "--home", str(tmp_path)])
    assert result.exit_code == 2
    said = [" ".join(line.split()) for line in _said(result).split("error: ")[1:]]
    assert said == [
        f"{labels}:2: field 'label': must be one of yes, no, A, B, Tie, got 'maybe'",
        f"{labels}:3: field 'check_id': must be a string, got number",
        f"{labels}:3: field 'score': must be a number, got string",
        f"{labels}:4: not valid JSON: Expecting property name enclosed in double quotes (column 2)",
        f"{labels}:5: field 'label': is missing: give a 'label' (yes, no, A, B, Tie) or a 0-10 'score'",
        f"{labels}:6: field 'by': unknown field (allowed: check_id, label, score, annotator)",
        f"5 bad lines in {labels}; fix them and calibrate again",
    ]


def test_load_labels_reads_a_good_file(tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"check_id": "c1", "label": "Tie", "annotator": "ann"}\n\n{"check_id": "c2", "score": 7}\n')
    assert load_labels(labels) == [HumanLabel(check_id="c1", label=Label.TIE, annotator="ann"),
                                   HumanLabel(check_id="c2", score=7.0)]
    labels.write_text('{"check_id": "c1", "label": ["yes"]}\n')
    with pytest.raises(DatasetError) as caught:
        load_labels(labels)
    assert str(caught.value) == f"{labels}:1: field 'label': must be one of yes, no, A, B, Tie, got list"
