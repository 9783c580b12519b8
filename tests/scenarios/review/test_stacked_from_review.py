"""The loop of issue 33 (items 2 and 5) end to end, offline, through the CLI: people's review decisions fit the
stacked offline judge that a later run's jury applies.

1. `ragcourt run` of the real `lexical` and `semantic` (MiniLM) judges on the bundled HotpotQA slice escalates the
   question-paragraph checks (subquery_in_chunk) the two judges split on.
2. `ragcourt review RUN --kind subquery_in_chunk`, answers piped, decides each by HotpotQA's human labels: yes when
   the paragraph is one of the question's gold supporting paragraphs, no otherwise; never by a judge.
3. `ragcourt calibrate --run RUN --fit-stacked --save-profile P` fits the stacked judge from those decisions.
4. A later `ragcourt run` on other questions with `--judge learned --calibration-profile P` decides its
   subquery_in_chunk checks with that model, and says it applied it.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ragcourt.cli import app
from ragcourt.commands.output import console
from ragcourt.data.loaders import BundledDataset, bundled
from ragcourt.judging.features import FEATURES, FEATURES_VERSION, FeatureExtractor
from ragcourt.judging.learned import probabilities_yes
from ragcourt.metrics.agreement import auroc
from ragcourt.runs.workspace import Workspace
from ragcourt.schema import Check, CheckKind, Label, UnscoredReason
from ragcourt.schema.calibration import STORED_LABELS, CalibrationProfile
from ragcourt.schema.config import EvalConfig, JudgeSpec
from ragcourt.stores.embeddings import MiniLMEmbedding
from ragcourt.validity.calibration import review_labels
from ragcourt.validity.profile import stored_judge_ids
from ragcourt.validity.review_budget import review_queue
from ragcourt.validity.review_fit import AGREED, labels_sha256

KIND = CheckKind.SUBQUERY_IN_CHUNK
# The first run's questions: a third of the gold paragraphs' checks and a third of the others' are escalated, so
# 50 questions give some 40 of each to review (a fit needs 30 a class) at a few seconds of MiniLM.
N_REVIEWED = 50
N_LATER = 5  # the later run's questions, none of them in the first run
DISTRACTORS = 2  # of each question's eight non-supporting paragraphs, the first two (in file order) are retrieved


def hotpot_rows() -> list[dict]:
    path = bundled(BundledDataset.HOTPOTQA_DEV_100)
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def write_samples(rows: list[dict], path: Path) -> Path:
    """Precomputed samples: as contexts, each question's two gold paragraphs and its first DISTRACTORS others, in
    the file's order (a retriever's four paragraphs); HotpotQA's answer span as the reference and the answer (what
    is reviewed here are the retrieval checks, not the answer)."""
    lines = []
    for row in rows:
        distractors = [p for p in row["contexts"] if not p["is_supporting"]][:DISTRACTORS]
        contexts = [p for p in row["contexts"] if p["is_supporting"] or p in distractors]
        span = row["answers_objects"][0]["spans"][0]
        lines.append(json.dumps({"id": row["question_id"], "question": row["question_text"],
                                 "reference_answer": span, "answer": f"{span}.",
                                 "contexts": [{"title": p["title"], "text": p["paragraph_text"]} for p in contexts]}))
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def invoke(*args: str, home: Path, stdin: str | None = None) -> str:
    result = CliRunner().invoke(app, [*args, "--home", str(home)], input=stdin)
    assert result.exit_code == 0, (result.output, result.exception)
    return " ".join(result.output.split())


def p_yes(checks: list[Check], features: FeatureExtractor, profile: CalibrationProfile) -> list[float]:
    (model,) = profile.stacked
    return probabilities_yes(model, features.matrix([(c.subject_text, c.target_text) for c in checks])).tolist()


@pytest.mark.slow
def test_review_decisions_fit_a_stacked_judge_that_a_later_run_applies(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(console, "width", 300)
    rows = hotpot_rows()
    gold = {(row["question_id"], p["paragraph_text"]) for row in rows for p in row["contexts"] if p["is_supporting"]}
    home = tmp_path / "home"

    # 1. the run: lexical and semantic split on some question-paragraph checks, which wait for review
    # MiniLM for every kind, as the stacked judge's features read it (the default embeds relevance with e5)
    invoke("run", str(write_samples(rows[:N_REVIEWED], tmp_path / "reviewed.jsonl")), "--system", "precomputed",
           "--judge", "lexical", "--judge", "semantic+minilm", "--method", "qcare", "--run-id", "r1", home=home)
    with Workspace(home).open_store() as store:
        pending = [r for r in review_queue(store, "r1") if r.kind is KIND]  # the order `review` asks them
        escalated = {c.id: c for c in store.get_checks([r.check_id for r in pending])}
    truth = [(escalated[r.check_id].sample_id, escalated[r.check_id].target_text) in gold for r in pending]
    n_yes, n_no = sum(truth), len(truth) - sum(truth)
    assert n_yes >= 30 and n_no >= 30, (n_yes, n_no)

    # 2. the review: each escalated check of the kind decided by the gold paragraphs, in the order it is shown
    out = invoke("review", "r1", "--kind", str(KIND), "--reviewer", "ann", home=home,
                 stdin="".join("y\n" if yes else "n\n" for yes in truth))
    assert f"{len(pending)} escalated checks awaiting review" in out
    with Workspace(home).open_store() as store:
        human = review_labels(store, "r1")
        assert not [r for r in store.pending_escalations("r1") if r.kind is KIND]
    assert sorted((h.check_id, h.label, h.annotator) for h in human) == sorted(
        (r.check_id, Label.YES if yes else Label.NO, "ann") for r, yes in zip(pending, truth, strict=True))

    # 3. the fit, from the review decisions
    profile_path = tmp_path / "profile.json"
    out = invoke("calibrate", "--run", "r1", "--fit-stacked", "--bootstrap", "20", "--save-profile",
                 str(profile_path), home=home)
    profile = CalibrationProfile.load(profile_path)
    (model,) = profile.stacked
    assert (profile.suite, profile.data_file, profile.thresholds) == (STORED_LABELS, "review decisions of run r1", ())
    assert profile.data_sha256 == model.data_sha256 == labels_sha256(human)
    assert (model.kind, model.labels, model.n_positive, model.n_negative, model.folds) == (KIND, AGREED, n_yes,
                                                                                          n_no, 5)
    assert model.features == tuple(str(f) for f in FEATURES) and model.features_version == FEATURES_VERSION
    assert all(math.isfinite(v) for v in (*model.coefficients, model.intercept, *model.mean, *model.scale))
    printed = re.search(rf"stacked {KIND} \(5-fold cv AUROC ([0-9.]+), cv kappa (-?[0-9.]+), n={n_yes}\+{n_no}, "
                        rf"features v{FEATURES_VERSION}\) against the agreed labels of review decisions of run r1",
                        out)
    assert printed, out
    assert model.cross_validated_auroc is not None and model.cross_validated_kappa is not None
    assert (float(printed[1]), float(printed[2])) == (round(model.cross_validated_auroc, 2),
                                                      round(model.cross_validated_kappa, 2))
    assert f"calibration profile written to {profile_path}" in out
    # the stored numbers are the fitted model: applied to the reviewed checks, they give its in-sample AUROC
    features = FeatureExtractor(lambda texts: np.asarray(MiniLMEmbedding()(texts), dtype=np.float32))
    reviewed = [escalated[r.check_id] for r in pending]
    # (the tolerance: MiniLM batched otherwise may move a near-tie of P(yes) by a float's last digit)
    assert auroc(p_yes(reviewed, features, profile), truth).value == pytest.approx(model.in_sample_auroc, abs=2e-3)

    # 4. a later run, on other questions, whose jury includes the stacked judge
    out = invoke("run", str(write_samples(rows[N_REVIEWED:N_REVIEWED + N_LATER], tmp_path / "later.jsonl")),
                 "--system", "precomputed", "--judge", "learned", "--judge", "lexical", "--method", "qcare",
                 "--calibration-profile", str(profile_path), "--run-id", "r2", home=home)
    learned_id = stored_judge_ids(EvalConfig(judges=(JudgeSpec(model="learned"), JudgeSpec(model="lexical")),
                                             calibration_profile=str(profile_path)))[0]
    assert learned_id.startswith("learned+model-")
    assert (f"learned judge learned: the stacked models of calibration profile {profile_path}, {model.describe()} "
            f"(fit on review decisions of run r1; stored as '<judge>{learned_id.removeprefix('learned')}')") in out
    with Workspace(home).open_store() as store:
        later = store.checks_for("r2")
        verdicts = {v.check_id: v for v in store.get_verdicts([c.id for c in later], learned_id)}
    decided = [c for c in later if c.kind is KIND]
    assert len(decided) >= 4 * N_LATER and set(verdicts) == {c.id for c in later}
    expected = p_yes(decided, features, profile)
    for check, p in zip(decided, expected, strict=True):
        verdict = verdicts[check.id]
        assert verdict.scored and verdict.probabilities[Label.YES] == pytest.approx(p, abs=1e-5)
        assert verdict.probabilities[Label.NO] == pytest.approx(1 - p, abs=1e-5)
        assert verdict.label is (Label.YES if p >= 0.5 else Label.NO)
    others = [verdicts[c.id] for c in later if c.kind is not KIND]
    assert others and all(v.unscored_reason is UnscoredReason.BEYOND_RULE for v in others)
