"""`ragcourt calibrate --pairs FILE` (and `--ragchecker`) with `--fit-threshold` learns the pairwise jury's tie
margin as `calibrate --suite ragchecker --file FILE` does (issue 33, item 1): the same margin, the same table,
the same profile. Offline: lexical + semantic (MiniLM, in process) on the bundled 40 pairs.

The expected figures are the README's table of the pairwise jury (the shared slice is the bundled file): kappa
learns margin 0.000 (in-sample and 5-fold 0.291); balanced accuracy 0.750 (in-sample 0.504, 5-fold 0.487)."""

from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragcourt.cli import app
from ragcourt.commands.output import console
from ragcourt.data.loaders import BundledDataset, bundled
from ragcourt.schema import CheckKind
from ragcourt.schema.calibration import PAIRWISE_JURY, CalibrationProfile, LearnedThreshold

BUNDLED = bundled(BundledDataset.RAGCHECKER_PAIRS)
JUDGES = ["--judge", "lexical", "--judge", "semantic+minilm"]  # the figures below are MiniLM's
TITLE = "pairwise jury: majority_tie vs mean_probability"


def _said(output: str) -> str:
    return re.sub(r"\s+", " ", output)


def _jury_table(output: str) -> list[list[str]]:
    """The rows of print_jury_fit's table: reference, human Tie, kappa before, kappa after (cv), jury Tie before,
    after; and last the Pearson line."""
    shown = output[output.index(TITLE):]
    rows = [[c.strip() for c in line.strip().strip("│").split("│")] for line in shown.splitlines()
            if line.startswith("│")]
    return [*rows, [next(line for line in shown.splitlines() if line.startswith("Pearson of the jury's label"))]]


def _margin(profile: CalibrationProfile) -> LearnedThreshold:
    assert profile.suite == "ragchecker" and len(profile.thresholds) == 1
    margin = profile.tie_margin()
    assert margin is not None and (margin.judge_id, margin.kind) == (PAIRWISE_JURY, CheckKind.PAIRWISE)
    return margin


# (objective, margin, in-sample, cv, the table's rows), read off the README's table
EXPECTED = {
    "kappa": (0.0, 0.291, 0.291, [["annotators' mean", "10", "0.212", "0.291", "30", "12"],
                                  ["annotator 1", "16", "0.195", "0.139", "30", "12"],
                                  ["annotator 2", "14", "-0.155", "0.262", "30", "12"],
                                  ["agreeing annotators", "2", "0.000", "0.250", "4", "1"]]),
    "balanced_accuracy": (0.75, 0.504, 0.487, [["annotators' mean", "10", "0.212", "0.225", "30", "23"],
                                               ["annotator 1", "16", "0.195", "0.138", "30", "23"],
                                               ["annotator 2", "14", "-0.155", "0.041", "30", "23"],
                                               ["agreeing annotators", "2", "0.000", "0.000", "4", "4"]]),
}


def test_the_pairs_learn_the_margin_the_suite_learns_on_the_same_file(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(console, "width", 300)  # one line per table row
    pairs = shutil.copy(BUNDLED, tmp_path / "pairs.json")
    home = ["--home", str(tmp_path / "home"), "--bootstrap", "20"]  # one store: the second call reuses verdicts
    runner = CliRunner()
    for objective, (threshold, in_sample, cv, rows) in EXPECTED.items():
        made = {}
        for source in (["--pairs", str(pairs)], ["--suite", "ragchecker", "--file", str(pairs)]):
            path = tmp_path / f"{objective}-{source[0].strip('-')}.json"
            result = runner.invoke(app, ["calibrate", *source, *JUDGES, "--fit-threshold", objective,
                                         "--save-profile", str(path), *home])
            assert result.exit_code == 0, result.output
            assert f"apply its pairwise jury's tie margin with `ragcourt rank --calibration-profile {path}`" in \
                _said(result.output)
            made[source[0]] = (CalibrationProfile.load(path), _jury_table(result.output))
        (profile, table), (suite_profile, suite_table) = made["--pairs"], made["--suite"]
        by_pairs = _margin(profile)
        assert by_pairs == _margin(suite_profile)  # every field: margin, objective, figures, n, folds, models
        assert table == suite_table
        assert (by_pairs.threshold, by_pairs.objective, by_pairs.folds, by_pairs.n, by_pairs.n_positive) == (
            threshold, objective, 5, 40, 30)
        assert (round(by_pairs.in_sample, 3), round(by_pairs.cross_validated, 3)) == (in_sample, cv)
        assert by_pairs.judge_model == "lexical+semantic" and by_pairs.labels == "annotators' mean"
        assert table[:-1] == rows
        assert (profile.data_file, profile.data_sha256) == (suite_profile.data_file, suite_profile.data_sha256)
        assert profile.data_sha256 == hashlib.sha256(BUNDLED.read_bytes()).hexdigest()

    # --ragchecker: the bundled file, named as such; --folds and --seed reach the fit as the suite's do
    bundled_profile = tmp_path / "bundled.json"
    result = runner.invoke(app, ["calibrate", "--ragchecker", *JUDGES, "--fit-threshold", "kappa", "--folds", "4",
                                 "--seed", "3", "--save-profile", str(bundled_profile), *home])
    assert result.exit_code == 0, result.output
    suite = runner.invoke(app, ["calibrate", "--suite", "ragchecker", "--file", str(pairs), *JUDGES,
                                "--fit-threshold", "kappa", "--folds", "4", "--seed", "3", *home])
    assert suite.exit_code == 0, suite.output
    made = CalibrationProfile.load(bundled_profile)
    margin = _margin(made)
    assert made.data_file == str(BUNDLED)
    assert (margin.folds, margin.threshold, round(margin.cross_validated, 3)) == (4, 0.0, 0.2)
    assert _jury_table(result.output) == _jury_table(suite.output)
    assert "4-fold held-out labels" in _said(result.output)


def test_the_pairs_refuse_what_they_cannot_learn(tmp_path: Path) -> None:
    runner = CliRunner()
    home = ["--home", str(tmp_path)]
    for judges in ([], ["--judge", "lexical"]):  # the default jury is lexical alone
        for source in (["--pairs", str(BUNDLED)], ["--ragchecker"], ["--suite", "ragchecker", "--file", str(BUNDLED)]):
            one = runner.invoke(app, ["calibrate", *source, *judges, "--fit-threshold", "kappa", *home])
            assert one.exit_code == 2
            assert "the RAGChecker pairs learn the pairwise jury's tie margin: give at least two judges" in \
                _said(one.output)
    stacked = runner.invoke(app, ["calibrate", "--pairs", str(BUNDLED), *JUDGES, "--fit-stacked", *home])
    assert stacked.exit_code == 2
    assert ("--fit-stacked fits a stacked judge per binary kind, and the RAGChecker pairs are pairwise" in
            _said(stacked.output))
    path = tmp_path / "p.json"
    unsaved = runner.invoke(app, ["calibrate", "--ragchecker", *JUDGES, "--save-profile", str(path), *home])
    assert unsaved.exit_code == 2
    assert "--save-profile saves what is learned: give --fit-threshold balanced_accuracy|kappa" in \
        _said(unsaved.output)
    assert "--fit-stacked" not in unsaved.output  # refused on the pairs: not offered
    wice = runner.invoke(app, ["calibrate", "--ragchecker", *JUDGES, "--fit-threshold", "kappa", "--fit-on", "strict",
                               "--save-profile", str(path), *home])
    assert wice.exit_code == 2 and "--fit-on chooses among WiCE's labels" in _said(wice.output)
    assert not path.exists()


def _transfer_row(output: str) -> list[str]:
    """The one row of print_transfer's table (a margin profile measured on the pairs)."""
    shown = output[output.index("calibration profile fit on"):]
    return next([c.strip() for c in line.strip().strip("│").split("│")] for line in shown.splitlines()
                if line.startswith("│"))


def test_a_margin_profile_is_measured_on_pairs_and_warns_where_it_does_worse(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 33 item 3 for the tie margin: `--suite ragchecker --config` with a margin profile measures it beside
    its cross-validated figure, against the majority_tie jury. On the data it was fit on, the margin's figure is
    its in-sample one and the jury's is the table's "before" (kappa 0.291 / 0.212, the README's)."""
    monkeypatch.setattr(console, "width", 300)
    runner = CliRunner()
    home = ["--home", str(tmp_path / "home"), "--bootstrap", "20"]
    fitted = tmp_path / "margin.json"
    made = runner.invoke(app, ["calibrate", "--pairs", str(BUNDLED), *JUDGES, "--fit-threshold", "kappa",
                               "--save-profile", str(fitted), *home])
    assert made.exit_code == 0, made.output
    # A margin of 1 makes every pair a Tie (|P_B - P_A| <= 1): kappa 0, below the jury's 0.212. (Below 1 and above
    # 0.5 it is majority_tie itself for two judges without probabilities: only a shared vote leads by more.)
    wide = tmp_path / "wide.json"
    profile = CalibrationProfile.load(fitted)
    wide.write_text(profile.model_copy(update={"thresholds": (_margin(profile).model_copy(
        update={"threshold": 1.0}),)}).model_dump_json(), encoding="utf-8")
    for path, calibrated, warned in ((fitted, "0.291", False), (wide, "0.000", True)):
        config = tmp_path / f"{path.stem}.yaml"
        config.write_text(f"judges:\n  - model: lexical\n  - model: semantic\n    encoder: minilm\n"
                          f"calibration_profile: {path}\n",
                          encoding="utf-8")
        result = runner.invoke(app, ["calibrate", "--suite", "ragchecker", "--file", str(BUNDLED), "--config",
                                     str(config), *home])
        assert result.exit_code == 0, result.output
        row = _transfer_row(result.output)
        assert row[:5] == ["jury", "pairwise", "kappa", "annotators' mean", "0.291"]
        assert row[5].startswith(calibrated) and row[6].startswith("0.212") and row[6].endswith("(majority_tie)")
        warning = ("WARNING: jury pairwise: the profile's tie margin (mean_probability) gives kappa 0.000")
        assert (warning in _said(result.output)) is warned
    thresholds_only = tmp_path / "thresholds.json"
    thresholds_only.write_text(profile.model_copy(update={"thresholds": (_margin(profile).model_copy(
        update={"judge_id": "lexical", "kind": CheckKind.CLAIM_SUPPORTED, "judge_model": "lexical"}),)}
    ).model_dump_json(), encoding="utf-8")
    config = tmp_path / "thresholds.yaml"
    config.write_text(f"judges:\n  - model: lexical\n  - model: semantic\n    encoder: minilm\n"
                      f"calibration_profile: {thresholds_only}\n",
                      encoding="utf-8")
    refused = runner.invoke(app, ["calibrate", "--suite", "ragchecker", "--file", str(BUNDLED), "--config",
                                  str(config), *home])
    assert refused.exit_code == 2 and "has no pairwise tie margin" in _said(refused.output)
