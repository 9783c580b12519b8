"""`ragcourt calibrate --ragchecker` with the lexical judge (issue 7's worked example): the RAGChecker
human-labelled pairs judged in both orders and compared with each annotator, with the pairs both annotators
agree on, and annotator against annotator.

The figures are read off the confusion matrices the command prints (rows: the annotator, columns: lexical):
annotator 1 [[4, 3, 4], [2, 8, 3], [5, 3, 8]] -> accuracy (4 + 8 + 8) / 40 = 0.500; annotator 2
[[8, 2, 7], [0, 5, 4], [3, 7, 4]] -> (8 + 5 + 4) / 40 = 0.425. The annotators agree on 6 of the 40 pairs, so
the agreeing-annotators reference has 6 labels and 34 items without one.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragcourt.cli import app
from ragcourt.commands.output import console


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
