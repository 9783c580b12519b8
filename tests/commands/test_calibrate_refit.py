"""`ragcourt calibrate --run RUN --fit-threshold OBJ --save-profile P`: review decisions refit the run's judges'
thresholds (k-fold cross-validated, as the suite fits them), a kind with too few labels is refused with its counts,
and the saved profile applies to a later run and says where its labels came from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragcourt.cli import app
from ragcourt.commands.output import console
from ragcourt.runs.models import Models
from ragcourt.runs.workspace import Workspace
from ragcourt.schema import (
    NORMAL,
    Check,
    CheckKind,
    Label,
    Review,
    ReviewAction,
    RunInfo,
    Verdict,
    VerdictStatus,
)
from ragcourt.schema.calibration import STORED_LABELS, CalibrationProfile
from ragcourt.schema.config import EvalConfig, JudgeSpec
from ragcourt.validity.profile import CalibratedJudge, profile_notes

# (the lexical judge's stored P(yes), the reviewer's label): the labels split cleanly between 0.5 and 0.6
REVIEWED = [(0.9, Label.YES), (0.8, Label.YES), (0.6, Label.YES), (0.5, Label.NO), (0.3, Label.NO), (0.1, Label.NO)]


def _said(output: str) -> str:
    return " ".join(output.split())


def stored_run(home: Path) -> list[str]:
    """Run 'r' (jury: lexical) whose six claim checks were reviewed by ann as REVIEWED says."""
    checks = [Check(kind=CheckKind.CLAIM_SUPPORTED, sample_id="s", condition=NORMAL, subject_id=f"c{i}",
                    subject_text=f"claim {i}", target_id="t", target_text="evidence") for i in range(len(REVIEWED))]
    with Workspace(home).open_store() as store:
        store.put(RunInfo(run_id="r", dataset="d.jsonl", system="precomputed",
                          config=EvalConfig(judges=(JudgeSpec(model="lexical"),)).model_dump(mode="json")))
        store.put(*checks)
        store.link_checks("r", "s", [c.id for c in checks])
        for check, (p_yes, label) in zip(checks, REVIEWED, strict=True):
            store.put(Verdict(check_id=check.id, judge_id="lexical", model_id="lexical", status=VerdictStatus.OK,
                              label=Label.YES if p_yes >= 0.5 else Label.NO,
                              probabilities={Label.YES: p_yes, Label.NO: 1 - p_yes}))
            store.add_review(Review(run_id="r", check_id=check.id, reviewer="ann", action=ReviewAction.OVERRIDE,
                                    label=label))
    return [c.id for c in checks]


def test_review_decisions_refit_a_threshold_that_a_later_run_applies(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(console, "width", 300)
    stored_run(tmp_path)
    profile_path = tmp_path / "profile.json"
    result = CliRunner().invoke(app, ["calibrate", "--run", "r", "--fit-threshold", "balanced_accuracy", "--folds",
                                      "2", "--bootstrap", "20", "--save-profile", str(profile_path),
                                      "--home", str(tmp_path)])
    assert result.exit_code == 0, result.output
    said = _said(result.output)
    assert "review labels cover only escalated checks" in said  # the biased-sample caveat
    profile = CalibrationProfile.load(profile_path)
    (threshold,) = profile.thresholds
    # only the midpoint of 0.5 and 0.6 separates the yes labels from the no labels: balanced accuracy 1
    assert (threshold.judge_id, threshold.judge_model, threshold.kind) == ("lexical", "lexical",
                                                                           CheckKind.CLAIM_SUPPORTED)
    assert threshold.threshold == pytest.approx(0.55) and threshold.in_sample == pytest.approx(1.0)
    assert (threshold.n, threshold.n_positive, threshold.folds) == (6, 3, 2) and threshold.cross_validated is not None
    assert profile.suite == STORED_LABELS and profile.data_file == "review decisions of run r"
    assert "learned: lexical claim_supported threshold 0.55" in said
    config = EvalConfig(judges=(JudgeSpec(model="lexical"),), calibration_profile=str(profile_path))
    with Workspace(tmp_path).open_store() as store:
        (judge,) = Models(config, store).judges()
    assert isinstance(judge, CalibratedJudge) and judge.thresholds[CheckKind.CLAIM_SUPPORTED] == threshold
    assert "labels of stored checks (review decisions of run r)" in " ".join(profile_notes(config))


def test_a_kind_with_too_few_labels_of_a_class_is_refused_and_no_profile_is_written(tmp_path: Path) -> None:
    stored_run(tmp_path)
    profile_path = tmp_path / "profile.json"
    result = CliRunner().invoke(app, ["calibrate", "--run", "r", "--fit-threshold", "kappa", "--folds", "4",
                                      "--bootstrap", "20", "--save-profile", str(profile_path),
                                      "--home", str(tmp_path)])
    said = _said(result.output)
    assert result.exit_code != 0 and not profile_path.exists()
    assert ("no threshold for claim_supported: 3 yes and 3 no labels, and a 4-fold cross-validated fit needs at "
            "least 4 of each") in said


def test_a_labels_file_refits_the_judges_of_the_run_it_names(tmp_path: Path) -> None:
    ids = stored_run(tmp_path)
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps({"check_id": i, "label": str(label), "annotator": "bo"}) + "\n"
                              for i, (_, label) in zip(ids, REVIEWED, strict=True)), encoding="utf-8")
    profile_path = tmp_path / "profile.json"
    runner = CliRunner()
    without_run = runner.invoke(app, ["calibrate", "--labels", str(labels), "--fit-threshold", "kappa",
                                      "--home", str(tmp_path)])
    assert without_run.exit_code != 0 and "needs --run RUN" in _said(without_run.output)
    result = runner.invoke(app, ["calibrate", "--labels", str(labels), "--run", "r", "--fit-threshold", "kappa",
                                 "--folds", "2", "--bootstrap", "20", "--save-profile", str(profile_path),
                                 "--home", str(tmp_path)])
    assert result.exit_code == 0, result.output
    profile = CalibrationProfile.load(profile_path)
    assert profile.data_file == str(labels) and profile.thresholds[0].threshold == pytest.approx(0.55)


def test_fit_stacked_on_review_decisions_is_refused_under_30_labels_a_class(tmp_path: Path) -> None:
    stored_run(tmp_path)
    result = CliRunner().invoke(app, ["calibrate", "--run", "r", "--fit-stacked", "--bootstrap", "20",
                                      "--home", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert ("the stacked judge of claim_supported is not fit on 'reviewed': 3 yes and 3 no labels, and a fit needs "
            "at least 30 of each") in _said(result.output)
