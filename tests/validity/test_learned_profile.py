"""A calibration profile holding a stacked model: it round-trips, a profile with only a stacked model is valid, the
jury member `learned` applies it under an id tagged by the model's content, and `learned` without a profile
holding one is refused naming the configuration key."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ragcourt.cli import app
from ragcourt.judging.features import FEATURES, FEATURES_VERSION
from ragcourt.judging.learned import LearnedJudge
from ragcourt.runs.models import Models, check_model_specs
from ragcourt.runs.workspace import Workspace
from ragcourt.schema import NORMAL, Check, CheckKind, Label
from ragcourt.schema.calibration import CalibrationProfile
from ragcourt.schema.config import ConfigError, EvalConfig, JudgeSpec
from ragcourt.schema.stacking import StackedModel
from ragcourt.stores.records import RecordStore
from ragcourt.validity.profile import profile_notes, stored_judge_ids

SHA = "0" * 64


def stacked(intercept: float) -> StackedModel:
    """A model whose coefficients are all 0: P(yes) = 1 / (1 + exp(-intercept)) whatever the texts."""
    n = len(FEATURES)
    return StackedModel(kind=CheckKind.CLAIM_SUPPORTED, features=tuple(str(f) for f in FEATURES),
                        features_version=FEATURES_VERSION, mean=(0.0,) * n, scale=(1.0,) * n,
                        coefficients=(0.0,) * n, intercept=intercept, regularisation=1.0, labels="wice strict",
                        data_sha256=SHA, n_positive=30, n_negative=31, folds=5, in_sample_auroc=0.8,
                        in_sample_kappa=0.5, cross_validated_auroc=0.75, cross_validated_kappa=0.4)


def profile_file(tmp_path: Path, intercept: float, name: str = "profile.json") -> Path:
    path = tmp_path / name
    CalibrationProfile(suite="wice", data_file="claims.jsonl", data_sha256=SHA, stacked=(stacked(intercept),)).save(path)
    return path


def embed(texts: list[str]) -> np.ndarray:
    return np.ones((len(texts), 4), dtype=np.float32)


def test_a_profile_with_only_a_stacked_model_round_trips(tmp_path: Path) -> None:
    path = profile_file(tmp_path, math.log(3))
    loaded = CalibrationProfile.load(path)
    assert loaded.thresholds == () and loaded.stacked == (stacked(math.log(3)),)
    path.write_text('{"version": 1, "suite": "wice", "data_file": "f", "data_sha256": "' + SHA + '", '
                    '"thresholds": [], "stacked": []}', encoding="utf-8")
    with pytest.raises(ConfigError, match="holds neither"):
        CalibrationProfile.load(path)


async def test_the_learned_judge_decides_by_the_profiles_model_under_a_content_tagged_id(tmp_path: Path) -> None:
    check = Check(id="c1", sample_id="s1", condition=NORMAL, kind=CheckKind.CLAIM_SUPPORTED, subject_id="a", target_id="b",
                  subject_text="Curie won two Nobel prizes.", target_text="Marie Curie won the Nobel prize twice.")
    ids = []
    with RecordStore(tmp_path / "store.sqlite") as store:
        for intercept, name, p_yes, label in ((math.log(3), "a.json", 0.75, Label.YES),
                                              (-math.log(3), "b.json", 0.25, Label.NO)):
            config = EvalConfig(judges=(JudgeSpec(model="learned"), JudgeSpec(model="lexical")),
                                calibration_profile=str(profile_file(tmp_path, intercept, name)))
            models = Models(config, store)
            models.embed = embed  # type: ignore[method-assign]  # no MiniLM: the model ignores the features
            learned, lexical = models.judges()
            assert isinstance(learned, LearnedJudge) and lexical.judge_id == "lexical"  # no thresholds to apply
            (verdict,) = await learned.judge(CheckKind.CLAIM_SUPPORTED, [check])
            assert verdict.probabilities[Label.YES] == pytest.approx(p_yes) and verdict.label is label
            assert verdict.judge_id == learned.judge_id == stored_judge_ids(config)[0]
            ids.append(learned.judge_id)
            assert any("stacked claim_supported" in note for note in profile_notes(config))
    assert ids[0].startswith("learned+model-") and ids[0] != ids[1]  # another model, another rater


def test_learned_without_a_profile_holding_a_stacked_model_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"judges\.0\.model.*calibration_profile"):
        check_model_specs(EvalConfig(judges=(JudgeSpec(model="learned"),)))
    thresholds_only = Path(__file__).parents[1] / "fixtures" / "pre_split_workspace" / "profile.json"
    config = EvalConfig(judges=(JudgeSpec(model="learned"),), calibration_profile=str(thresholds_only))
    with RecordStore(tmp_path / "store.sqlite") as store, pytest.raises(ConfigError,
                                                                        match=r"judges\.0\.model.*no stacked model"):
        Models(config, store).judges()


def test_a_run_with_the_learned_judge_stores_its_decisions_under_its_tagged_id(tmp_path: Path) -> None:
    data = tmp_path / "samples.jsonl"
    data.write_text('{"id": "a", "question": "Where is Acme?", "reference_answer": "In Springfield.", '
                    '"contexts": ["Acme is in Springfield."], "answer": "In Springfield."}\n', encoding="utf-8")
    profile = profile_file(tmp_path, math.log(3))
    runner = CliRunner()
    refused = runner.invoke(app, ["run", str(data), "--system", "precomputed", "--judge", "learned",
                                  "--home", str(tmp_path / "none")])
    assert refused.exit_code == 2 and "error: --judge: 'learned' applies the stacked models" in refused.output
    ran = runner.invoke(app, ["run", str(data), "--system", "precomputed", "--judge", "learned",
                              "--calibration-profile", str(profile), "--run-id", "r", "--home", str(tmp_path)])
    assert ran.exit_code == 0, ran.output
    assert "stacked claim_supported" in " ".join(ran.output.split())
    config = EvalConfig(judges=(JudgeSpec(model="learned"),), calibration_profile=str(profile))
    (judge_id,) = stored_judge_ids(config)
    with Workspace(tmp_path).open_store() as store:
        checks = store.checks_for("r")
        run_judges = store.run_judge_ids("r")  # the report's and the summary's view of the run's jury
        verdicts = {v.check_id: v for v in store.get_verdicts([c.id for c in checks], judge_id)}
    claims = [c for c in checks if c.kind is CheckKind.CLAIM_SUPPORTED]
    assert claims and all(verdicts[c.id].probabilities[Label.YES] == pytest.approx(0.75)  # 1 / (1 + 1/3)
                          and verdicts[c.id].label is Label.YES for c in claims)
    assert all(not verdicts[c.id].scored for c in checks if c.kind is not CheckKind.CLAIM_SUPPORTED)
    assert run_judges is not None and judge_id in run_judges


def test_a_profile_of_stacked_models_alone_is_refused_for_a_run_without_a_learned_judge(tmp_path: Path) -> None:
    config = EvalConfig(judges=(JudgeSpec(model="lexical"),), calibration_profile=str(profile_file(tmp_path, 0.0)))
    with RecordStore(tmp_path / "store.sqlite") as store, pytest.raises(
            ConfigError, match=r"has stacked models \(for a judge 'learned'\), none of this run's judges \(lexical\)"):
        Models(config, store).judges()
