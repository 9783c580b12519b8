"""A calibration profile applied to a run's judges: on a kind the profile has a threshold for, a judge's binary
label is yes exactly when its P(yes) >= that threshold (schema.calibration; `ragcourt calibrate
--fit-threshold --save-profile` learns it).

The calibrated judge is another rater than the judge it wraps, so it has its own id (`lexical+cal-<profile
hash>`): its verdicts are stored under that id, the judge's own stored verdicts stay as they were, and a run
without the profile never reuses a calibrated label (the store reuses verdicts by check and judge id). A verdict
without a probability (an LLM judge on a linked kind asked with several targets, an unscored one) keeps its label.

The jury member `learned` applies the profile's stacked models (judging.learned.LearnedJudge). Its verdicts are
stored as `learned+model-<hash of the models>`, for the same reason: a refit model is another rater, and the
store must not hand it the old model's verdicts.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragcourt.judging import Judge, SampleJudge
from ragcourt.judging.baseline import Embed
from ragcourt.judging.learned import LearnedJudge
from ragcourt.schema import Check, CheckKind, Label, Verdict, content_id
from ragcourt.schema.calibration import STORED_LABELS, CalibrationProfile, LearnedThreshold
from ragcourt.schema.config import BaselineModel, ConfigError, EvalConfig

CALIBRATED = "+cal-"  # <judge>+cal-<tag of the thresholds>
STACKED = "+model-"  # learned+model-<tag of the stacked models>


def profile_tag(profile: CalibrationProfile) -> str:
    return content_id([t.model_dump(mode="json") for t in profile.thresholds])[:6]


def stacked_tag(profile: CalibrationProfile) -> str:
    """The content tag of the profile's stacked models (a profile's thresholds keep their own, profile_tag)."""
    return content_id([m.model_dump(mode="json") for m in profile.stacked])[:6]


def learned_judge(config: EvalConfig, index: int, profile: CalibrationProfile | None, embed: Embed) -> LearnedJudge:
    """The jury member `judges.<index>` (model `learned`): the profile's stacked models. ConfigError naming the
    key when the run has no profile, or one without stacked models, or models fit on other features."""
    spec = config.judges[index]
    key = f"invalid configuration key 'judges.{index}.model'"
    if profile is None or not profile.stacked:
        where = ("the run has no calibration profile" if profile is None
                 else f"calibration profile {config.calibration_profile} holds no stacked model")
        raise ConfigError(f"{key}: '{BaselineModel.LEARNED}' applies the stacked models of the run's calibration "
                          f"profile, and {where}: fit one with `ragcourt calibrate --suite wice|hotpotqa --file F "
                          "--fit-stacked --save-profile P` and give it with 'calibration_profile' (or "
                          "--calibration-profile P)")
    try:
        return LearnedJudge({m.kind: m for m in profile.stacked}, embed,
                            name=f"{spec.judge_id}{STACKED}{stacked_tag(profile)}")
    except ValueError as error:
        raise ConfigError(f"{key}: calibration profile {config.calibration_profile}: {error}") from None


def calibrated_verdict(verdict: Verdict, threshold: LearnedThreshold | None, judge_id: str) -> Verdict:
    """The verdict under the calibrated judge's id, its label decided by the threshold where it has P(yes)."""
    p = verdict.probabilities.get(Label.YES) if verdict.scored and verdict.probabilities else None
    if threshold is None or p is None or verdict.label not in (Label.YES, Label.NO):
        return verdict.model_copy(update={"judge_id": judge_id})
    label = Label.YES if p >= threshold.threshold else Label.NO
    note = f"calibrated: P(yes) {p:.3f} {'>=' if label is Label.YES else '<'} threshold {threshold.threshold:.3f}"
    return verdict.model_copy(update={"judge_id": judge_id, "label": label,
                                      "rationale": f"{verdict.rationale} [{note}]" if verdict.rationale else note})


@dataclass
class CalibratedJudge:
    inner: Judge
    thresholds: Mapping[CheckKind, LearnedThreshold]
    tag: str

    @property
    def judge_id(self) -> str:
        return f"{self.inner.judge_id}{CALIBRATED}{self.tag}"

    async def judge(self, kind: CheckKind, checks: Sequence[Check]) -> list[Verdict]:
        threshold = self.thresholds.get(kind)
        return [calibrated_verdict(v, threshold, self.judge_id) for v in await self.inner.judge(kind, checks)]


@dataclass
class CalibratedSampleJudge(CalibratedJudge):
    """The same for a judge that decides a sample's checks of several kinds in one call (an LLM judge)."""

    async def judge_sample(self, checks: Sequence[Check], **options: Any) -> list[Verdict]:
        assert isinstance(self.inner, SampleJudge)
        kinds = {c.id: c.kind for c in checks}
        # batching joint's options pass through; the verdicts it adds are on the sufficiency checks planned next
        return [calibrated_verdict(v, self.thresholds.get(kinds.get(v.check_id, CheckKind.SUBQUERY_ANSWERED)),
                                   self.judge_id)
                for v in await self.inner.judge_sample(checks, **options)]


def load_profile(config: EvalConfig) -> CalibrationProfile | None:
    path = config.calibration_profile
    return None if path is None else CalibrationProfile.load(Path(path))


def apply_profile(judges: Sequence[Judge], config: EvalConfig, profile: CalibrationProfile) -> list[Judge]:
    """The run's judges with the profile's thresholds applied. ConfigError when the profile applies to none of
    the run's judges (no threshold of theirs, and no `learned` judge for its stacked models), or a judge of the
    run under the same id with another model (its threshold would be another judge's)."""
    models = {spec.judge_id: spec.model for spec in config.judges}
    for threshold in profile.thresholds:
        model = models.get(threshold.judge_id)
        if model is not None and model != threshold.judge_model:
            raise ConfigError(f"calibration profile {config.calibration_profile}: the threshold of judge "
                              f"'{threshold.judge_id}' was learned for {threshold.judge_model}, and this run's "
                              f"'{threshold.judge_id}' is {model}")
    if not any(profile.of_judge(j.judge_id) or isinstance(j, LearnedJudge) for j in judges):
        held = [f"thresholds for {sorted({t.judge_id for t in profile.thresholds})}"] if profile.thresholds else []
        held += [f"stacked models (for a judge '{BaselineModel.LEARNED}')"] if profile.stacked else []
        raise ConfigError(f"calibration profile {config.calibration_profile} has {' and '.join(held)}, none of this "
                          f"run's judges ({', '.join(j.judge_id for j in judges)})")
    tag = profile_tag(profile)
    out: list[Judge] = []
    for judge in judges:
        own = profile.of_judge(judge.judge_id)
        if not own or isinstance(judge, LearnedJudge):  # it decides by its own model, not by a threshold
            out.append(judge)
        elif isinstance(judge, SampleJudge):
            out.append(CalibratedSampleJudge(judge, own, tag))
        else:
            out.append(CalibratedJudge(judge, own, tag))
    return out


def stored_judge_ids(config: EvalConfig, seen: Collection[str] | None = None) -> list[str]:
    """The ids the run's judges store their verdicts under, in the config's order: a judge the run's profile
    calibrates is `<judge>+cal-<tag>` (CalibratedJudge), a `learned` one `<judge>+model-<tag>`. When the profile
    cannot be read (moved, or a relative path read from another directory), `seen` (the judge ids of the run's
    checks' verdicts) tells which judges were calibrated; ConfigError without `seen`, or when it holds two
    calibrated ids of one judge."""
    specs = [(spec.judge_id, CALIBRATED if spec.model != BaselineModel.LEARNED else STACKED)
             for spec in config.judges]
    try:
        profile = load_profile(config)
    except ConfigError:
        if seen is None:
            raise
        return [_seen_id(judge, seen, config, marker) for judge, marker in specs]
    if profile is None:
        return [judge for judge, _ in specs]
    tag = profile_tag(profile)
    return [f"{judge}{STACKED}{stacked_tag(profile)}" if marker == STACKED
            else f"{judge}{CALIBRATED}{tag}" if profile.of_judge(judge) else judge for judge, marker in specs]


def _seen_id(judge: str, seen: Collection[str], config: EvalConfig, marker: str) -> str:
    tagged = sorted({s for s in seen if s.startswith(f"{judge}{marker}")})
    if len(tagged) > 1:
        raise ConfigError(f"calibration profile {config.calibration_profile} cannot be read, and the run's checks "
                          f"have verdicts of several calibrated versions of judge '{judge}' ({', '.join(tagged)}): "
                          "run the command where the profile's path resolves")
    return tagged[0] if tagged else judge


def profile_notes(config: EvalConfig) -> list[str]:
    """What a run's summary says about the profile it applied (none without one)."""
    profile = load_profile(config)
    if profile is None:
        return []
    ids = {spec.judge_id for spec in config.judges}
    applied = [t.describe() for t in profile.thresholds if t.judge_id in ids and t.kind is not CheckKind.PAIRWISE]
    notes = []
    if applied:
        notes.append(f"calibration profile {config.calibration_profile} applied: {'; '.join(applied)} (held-out "
                     f"figures: {profile.thresholds[0].folds}-fold cross-validated on {profile.data_file}; "
                     f"calibrated judges are stored as '<judge>{CALIBRATED}{profile_tag(profile)}')")
    learned = [spec.judge_id for spec in config.judges if spec.model == BaselineModel.LEARNED]
    if learned:
        notes.append(f"learned judge{'s' * (len(learned) > 1)} {', '.join(learned)}: the stacked models of "
                     f"calibration profile {config.calibration_profile}, "
                     f"{'; '.join(m.describe() for m in profile.stacked)} (fit on {profile.data_file}; stored as "
                     f"'<judge>{STACKED}{stacked_tag(profile)}')")
    # The held-out figures are the suite's data, not this run's checks: transfer to a run is never measured by
    # the profile itself (`calibrate --suite NAME --file B --config ...` measures it on other labelled data).
    if profile.suite == STORED_LABELS:
        notes.append(f"the profile was fit on labels of stored checks ({profile.data_file}), not on this run's "
                     "checks; review decisions cover escalated checks only, so its figures may not hold on the rest")
    else:
        notes.append(f"the profile was fit on the {profile.suite} suite's labels, not on this run's checks: its "
                     f"figures may not hold here (measure it on labels of this kind of data with `ragcourt calibrate "
                     f"--suite NAME --file LABELS --config CONFIG`)")
    return notes
