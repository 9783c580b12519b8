"""`ragcourt calibrate --suite ... --fit-stacked`: the stacked judge is refused, with its counts, on a set with
fewer than 30 labels of a class (the refusal comes before any embedding), and the option goes with --suite."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragcourt.cli import app
from ragcourt.commands.output import console

WICE = Path("/work/shared/data/wice/claim_dev_sample_60.jsonl")


def _said(output: str) -> str:
    return re.sub(r"\s+", " ", output)


@pytest.mark.skipif(not WICE.is_file(), reason="the shared data slices are not on this machine")
def test_a_fit_on_too_few_labels_is_refused_with_the_counts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(console, "width", 300)
    result = CliRunner().invoke(app, ["calibrate", "--suite", "wice", "--file", str(WICE), "--judge", "lexical",
                                      "--limit", "20", "--bootstrap", "20", "--fit-stacked", "--home", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert re.search(r"the stacked judge of claim_supported is not fit on 'wice strict': \d+ yes and \d+ no labels, "
                     r"and a fit needs at least 30 of each", _said(result.output))


def test_fit_stacked_goes_with_a_suite(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["calibrate", "--ragchecker", "--fit-stacked", "--home", str(tmp_path)])
    assert result.exit_code != 0 and "--fit-stacked" in _said(result.output) and "go with" in _said(result.output)
