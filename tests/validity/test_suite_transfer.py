"""A calibration profile measured on other labelled data (validity.suite.transfer_rows, `calibrate --suite NAME
--file B --config CONFIG-WITH-PROFILE`), and the pairwise jury's tie margin (validity.measure.fit_pairwise_jury).

The lexical judge's P(yes) on a claim_supported check is its overlap (tests/validity/test_measure.py): the claim
"Curie discovered radium in Paris." has the content words {curie, discovered, radium, paris}.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scipy import stats
from typer.testing import CliRunner

from ragcourt.cli import app
from ragcourt.commands.output import console
from ragcourt.metrics.dice import vote_probabilities
from ragcourt.schema import CheckKind, Label
from ragcourt.schema.calibration import CalibrationProfile, ThresholdObjective
from ragcourt.schema.config import EvalConfig, JudgeSpec
from ragcourt.validity.calibration import JURY, CalibrationItem
from ragcourt.validity.measure import ANNOTATORS_MEAN, fit_pairwise_jury
from ragcourt.validity.profile import profile_notes

CLAIM = "Curie discovered radium in Paris."
# Distribution A (fit): overlaps 1, 0.75 supported; 0.5 not; 0.25 supported; 0.25 partially; 0 not. The learned
# balanced-accuracy threshold is 0.625 (tests/validity/test_measure.py).
FIT_ON = [("Curie discovered radium in Paris.", "supported"), ("Curie discovered radium.", "supported"),
          ("Curie lived in Paris.", "not_supported"), ("Paris is large. Warsaw is old.", "supported"),
          ("Paris is large.", "partially_supported"), ("Nothing here at all.", "not_supported")]
# Distribution B: an overlap of 0.5 is supported here. The rule (yes from 0.5) gets every claim right:
# balanced accuracy 1; the profile's 0.625 says no to the two 0.5 claims: recalls 1/3 and 2/2, 2/3.
SHIFTED = [("Curie discovered radium in Paris.", "supported"), ("Curie lived in Paris.", "supported"),
           ("Radium was found in Paris.", "supported"), ("Paris is large.", "not_supported"),
           ("Nothing here at all.", "not_supported")]


def _wice(path: Path, rows: list[tuple[str, str]], prefix: str) -> Path:
    path.write_text("".join(json.dumps({"label": label, "supporting_sentences": [[0]], "claim": CLAIM,
                                        "evidence": [evidence], "meta": {"id": f"{prefix}{i}", "claim_title": "Curie"}})
                            + "\n" for i, (evidence, label) in enumerate(rows)), encoding="utf-8")
    return path


def test_a_profile_fit_on_one_distribution_warns_on_another(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(console, "width", 400)
    runner = CliRunner()
    fitted = runner.invoke(app, ["calibrate", "--suite", "wice", "--file", str(_wice(tmp_path / "a.jsonl", FIT_ON, "a")),
                                 "--judge", "lexical", "--fit-threshold", "balanced_accuracy", "--folds", "3",
                                 "--bootstrap", "20", "--save-profile", "profile.json", "--home", "home"])
    assert fitted.exit_code == 0, fitted.output
    (threshold,) = CalibrationProfile.load(tmp_path / "profile.json").thresholds
    assert threshold.threshold == pytest.approx(0.625)
    Path("config.yaml").write_text("judges: [{model: lexical}]\ncalibration_profile: profile.json\n")
    common = ["calibrate", "--suite", "wice", "--config", "config.yaml", "--bootstrap", "20", "--home", "home"]
    shifted = runner.invoke(app, [*common, "--file", str(_wice(tmp_path / "b.jsonl", SHIFTED, "b"))])
    assert shifted.exit_code == 0, shifted.output
    said = " ".join(shifted.output.split())
    assert f"calibration profile fit on {tmp_path / 'a.jsonl'}, measured on {tmp_path / 'b.jsonl'}" in said
    cv = f"{threshold.cross_validated:.3f}"
    assert f"lexical │ claim_supported │ balanced_accuracy │ wice strict │ {cv} │ 0.667 │ 1.000" in said
    assert ("WARNING: lexical claim_supported: the profile's threshold gives balanced_accuracy 0.667 on this set, "
            "below the uncalibrated judge's 1.000: the profile does not transfer here") in said
    # on the data it was fit on, the threshold does better than the rule (5/6 against 2/3): no warning
    same = runner.invoke(app, [*common, "--file", str(tmp_path / "a.jsonl")])
    assert same.exit_code == 0 and "WARNING" not in same.output
    assert "0.833 │ 0.667" in " ".join(same.output.split())
    # a run given the profile says it was fit on the suite's labels, not on the run's checks
    (note, fit_elsewhere) = profile_notes(EvalConfig(judges=(JudgeSpec(model="lexical"),),
                                                     calibration_profile="profile.json"))
    assert fit_elsewhere.startswith("the profile was fit on the wice suite's labels, not on this run's checks")


def _pair(item_id: str, scores: tuple[int, int], jury: Label) -> CalibrationItem:
    human = {"annotator 1": scores[0], "annotator 2": scores[1]}
    return CalibrationItem(item_id=item_id, kind=CheckKind.PAIRWISE,
                           human={a: Label.A if s < 0 else Label.B if s > 0 else Label.TIE for a, s in human.items()},
                           judges={JURY: jury}, human_numbers={a: float(s) for a, s in human.items()})


def test_the_jury_margin_is_scored_before_and_after_on_held_out_folds() -> None:
    # Two judges. Pairs 1-4: both say A (annotators -2, -1: mean A). Pairs 5-8: one says A, one Tie (annotators
    # 0 and 0: Tie). Pairs 9-12: one says B, one Tie (annotators +1, +1: B). majority_tie makes 5-12 Tie.
    votes = [[Label.A, Label.A]] * 4 + [[Label.A, Label.TIE]] * 4 + [[Label.B, Label.TIE]] * 4
    humans = [(-2, -1)] * 4 + [(0, 0)] * 4 + [(1, 1)] * 4
    probabilities = [vote_probabilities(v) for v in votes]
    items = [_pair(f"p{i}", h, Label.A if i < 4 else Label.TIE) for i, h in enumerate(humans)]
    fit = fit_pairwise_jury(items, probabilities, {"lexical": "lexical", "semantic": "semantic"},
                            ["annotator 1", "annotator 2"], ThresholdObjective.KAPPA, folds=2)
    # |P_B - P_A| is 1 for pairs 1-4 and 0.5 for 5-12: margin 0 labels 5-8 A (wrong) and 9-12 B (right); a
    # margin of 0.75 labels 5-12 Tie (9-12 wrong). Kappa: margin 0 -> A 8, B 4 vs A 4, Tie 4, B 4: p_o 8/12,
    # p_e (8*4 + 4*4) / 144 = 1/3, kappa 0.5; margin 0.75 -> A 4, Tie 8: p_o 8/12, p_e (4*4 + 8*4) / 144 = 1/3,
    # kappa 0.5 too: the smaller margin wins the tie.
    assert (fit.margin.judge_id, fit.margin.kind, fit.margin.threshold) == (JURY, CheckKind.PAIRWISE, 0.0)
    assert fit.margin.in_sample == pytest.approx(0.5) and fit.margin.labels == ANNOTATORS_MEAN
    assert (fit.margin.n, fit.margin.n_positive, fit.margin.judge_model) == (12, 8, "lexical+semantic")
    rows = {(r.rule, r.reference): r for r in fit.rows}
    before, after = rows["majority_tie", ANNOTATORS_MEAN], rows["mean_probability, cv", ANNOTATORS_MEAN]
    # before: A 4, Tie 8 against A 4, Tie 4, B 4: kappa 0.5 as computed above
    assert before.kappa.value == pytest.approx(0.5) and before.n_tie == 8
    assert after.kappa.value == pytest.approx(0.5) and after.n_tie == 0  # each fold learns margin 0
    assert fit.n_human_tie == {ANNOTATORS_MEAN: 4, "annotator 1": 4, "annotator 2": 4}
    # Pearson of the label (A -1, Tie 0, B +1) with the annotators' mean score
    means = [-1.5] * 4 + [0.0] * 4 + [1.0] * 4
    assert fit.pearson_before.value == pytest.approx(stats.pearsonr([-1] * 4 + [0] * 8, means)[0])
    assert fit.pearson_after.value == pytest.approx(stats.pearsonr([-1] * 8 + [1] * 4, means)[0])


def _tag(i: int) -> str:
    """A word of its own per row (letters only: a number would be a number mismatch), so no two checks are one."""
    return "".join(chr(ord("b") + int(d)) for d in str(i))


def test_a_stacked_profile_fit_on_one_distribution_warns_on_another(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 33, item 3 for the stacked judge: fit where a claim is supported from an overlap of 0.75 (30 rows a
    class), it says no to the overlap-0.5 claims a shifted set calls supported, where the lexical rule (yes from
    0.5) gets every claim right: kappa below the lexical judge's, and the suite warns."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(console, "width", 400)
    supported = ["Curie discovered radium in Paris.", "Curie discovered radium."]  # overlaps 1, 0.75
    unsupported = ["Curie lived in Paris.", "Paris is large.", "Nothing here at all."]  # 0.5, 0.25, 0
    fit_on = ([(f"{supported[i % 2]} Tag {_tag(i)}.", "supported") for i in range(30)]
              + [(f"{unsupported[i % 3]} Tag {_tag(i)}.", "not_supported") for i in range(30)])
    shifted = ([(f"Curie lived in Paris. Tag {_tag(i)}.", "supported") for i in range(4)]
               + [(f"Paris is large. Tag {_tag(i)}.", "not_supported") for i in range(4)])
    runner = CliRunner()
    fitted = runner.invoke(app, ["calibrate", "--suite", "wice", "--file", str(_wice(tmp_path / "a.jsonl", fit_on, "a")),
                                 "--judge", "lexical", "--fit-stacked", "--folds", "3", "--bootstrap", "20",
                                 "--save-profile", "profile.json", "--home", "home"])
    assert fitted.exit_code == 0, fitted.output
    (model,) = CalibrationProfile.load(tmp_path / "profile.json").stacked
    assert model.cross_validated_kappa is not None and model.cross_validated_kappa > 0.9  # separable where fit
    Path("config.yaml").write_text("judges: [{model: learned}, {model: lexical}]\ncalibration_profile: profile.json\n")
    measured = runner.invoke(app, ["calibrate", "--suite", "wice", "--config", "config.yaml", "--bootstrap", "20",
                                   "--file", str(_wice(tmp_path / "b.jsonl", shifted, "b")), "--home", "home"])
    assert measured.exit_code == 0, measured.output
    said = " ".join(measured.output.split())
    assert "(lexical)" in said  # the stacked row names the offline judge it is measured against
    assert "the profile's stacked model gives kappa 0.000 on this set, below the lexical judge's 1.000" in said
    assert "the profile does not transfer here" in said


def test_the_stacked_row_is_there_when_the_profile_also_calibrates_the_offline_judge(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A profile with a threshold for lexical and a stacked model: lexical is applied calibrated, and the learned
    judge's row against lexical's own labels (and its warning) was missing beside lexical's threshold row."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(console, "width", 400)
    supported = ["Curie discovered radium in Paris.", "Curie discovered radium."]
    unsupported = ["Curie lived in Paris.", "Paris is large.", "Nothing here at all."]
    fit_on = ([(f"{supported[i % 2]} Tag {_tag(i)}.", "supported") for i in range(30)]
              + [(f"{unsupported[i % 3]} Tag {_tag(i)}.", "not_supported") for i in range(30)])
    shifted = ([(f"Curie lived in Paris. Tag {_tag(i)}.", "supported") for i in range(4)]
               + [(f"Paris is large. Tag {_tag(i)}.", "not_supported") for i in range(4)])
    runner = CliRunner()
    fitted = runner.invoke(app, ["calibrate", "--suite", "wice", "--file", str(_wice(tmp_path / "a.jsonl", fit_on, "a")),
                                 "--judge", "lexical", "--fit-threshold", "kappa", "--fit-stacked", "--folds", "3",
                                 "--bootstrap", "20", "--save-profile", "profile.json", "--home", "home"])
    assert fitted.exit_code == 0, fitted.output
    Path("config.yaml").write_text("judges: [{model: learned}, {model: lexical}]\ncalibration_profile: profile.json\n")
    measured = runner.invoke(app, ["calibrate", "--suite", "wice", "--config", "config.yaml", "--bootstrap", "20",
                                   "--file", str(_wice(tmp_path / "b.jsonl", shifted, "b")), "--home", "home"])
    assert measured.exit_code == 0, measured.output
    said = " ".join(measured.output.split())
    assert "the profile's stacked model gives kappa 0.000 on this set, below the lexical judge's 1.000" in said
    assert "the profile's threshold gives kappa 0.000 on this set, below the uncalibrated judge's 1.000" in said
