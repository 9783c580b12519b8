"""`ragcourt calibrate --suite ... --fit-stacked`: the stacked judge is refused, with its counts, on a set with
fewer than 30 labels of a class (the refusal comes before any embedding), the option goes with --suite (or stored
labels), and --save-profile keeps the fitted models in a calibration profile."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragcourt.cli import app
from ragcourt.commands import calibrate
from ragcourt.commands.output import console
from ragcourt.judging.features import FEATURES, FEATURES_VERSION
from ragcourt.schema import CheckKind
from ragcourt.schema.calibration import CalibrationProfile
from ragcourt.schema.stacking import StackedModel

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


def test_fit_stacked_saves_its_models_in_a_profile_without_thresholds(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    claims = tmp_path / "claims.jsonl"
    rows = (("Curie won.", "supported"), ("Nobody won.", "not_supported"))
    claims.write_text("".join(json.dumps({"label": label, "supporting_sentences": [[0]], "claim": "Curie won.",
                                          "evidence": [evidence], "meta": {"id": f"c{i}"}}) + "\n"
                              for i, (evidence, label) in enumerate(rows)), encoding="utf-8")
    n = len(FEATURES)
    model = StackedModel(kind=CheckKind.CLAIM_SUPPORTED, features=tuple(FEATURES), features_version=FEATURES_VERSION,
                         mean=(0.0,) * n, scale=(1.0,) * n, coefficients=(0.5,) * n, intercept=0.0,
                         regularisation=1.0, labels="wice strict", data_sha256="0" * 64, n_positive=30,
                         n_negative=30, folds=5, in_sample_auroc=0.8, in_sample_kappa=0.5,
                         cross_validated_auroc=0.7, cross_validated_kappa=0.4)
    # the fit itself (30 labels a class, MiniLM) is tests/validity/test_stacking.py's: here, what is saved
    monkeypatch.setattr(calibrate, "_stacked", lambda *args: [model])
    profile_path = tmp_path / "profile.json"
    result = CliRunner().invoke(app, ["calibrate", "--suite", "wice", "--file", str(claims), "--judge", "lexical",
                                      "--bootstrap", "20", "--fit-stacked", "--save-profile", str(profile_path),
                                      "--home", str(tmp_path)])
    assert result.exit_code == 0, result.output
    profile = CalibrationProfile.load(profile_path)
    assert profile.stacked == (model,) and profile.thresholds == () and profile.suite == "wice"
    assert profile.data_sha256 == hashlib.sha256(claims.read_bytes()).hexdigest()
    assert "--judge learned" in _said(result.output)
