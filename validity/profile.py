"""A calibration profile applied to a run's judges: on a kind the profile has a threshold for, a judge's binary
label is yes exactly when its P(yes) >= that threshold (schema.calibration; `ragcourt calibrate
--fit-threshold --save-profile` learns it).

The calibrated judge is another rater than the judge it wraps, so it has its own id (`lexical+cal-<profile
hash>`): its verdicts are stored under that id, the judge's own stored verdicts stay as they were, and a run
without the profile never reuses a calibrated label (the store reuses verdicts by check and judge id). A verdict
without a probability (an LLM judge on a linked kind asked with several targets, an unscored one) keeps its label.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragcourt.judging import Judge, SampleJudge
from ragcourt.schema import Check, CheckKind, Label, Verdict, content_id
from ragcourt.schema.calibration import CalibrationProfile, LearnedThreshold
from ragcourt.schema.config import ConfigError, EvalConfig


def profile_tag(profile: CalibrationProfile) -> str:
    return content_id([t.model_dump(mode="json") for t in profile.thresholds])[:6]


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
        return f"{self.inner.judge_id}+cal-{self.tag}"

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
    """The run's judges with the profile's thresholds applied. ConfigError when the profile names none of the
    run's judges, or a judge of the run under the same id with another model (its threshold would be another
    judge's)."""
    models = {spec.judge_id: spec.model for spec in config.judges}
    for threshold in profile.thresholds:
        model = models.get(threshold.judge_id)
        if model is not None and model != threshold.judge_model:
            raise ConfigError(f"calibration profile {config.calibration_profile}: the threshold of judge "
                              f"'{threshold.judge_id}' was learned for {threshold.judge_model}, and this run's "
                              f"'{threshold.judge_id}' is {model}")
    if not any(profile.of_judge(j.judge_id) for j in judges):
        raise ConfigError(f"calibration profile {config.calibration_profile} has thresholds for "
                          f"{sorted({t.judge_id for t in profile.thresholds})}, none of this run's judges "
                          f"({', '.join(j.judge_id for j in judges)})")
    tag = profile_tag(profile)
    out: list[Judge] = []
    for judge in judges:
        own = profile.of_judge(judge.judge_id)
        if not own:
            out.append(judge)
        elif isinstance(judge, SampleJudge):
            out.append(CalibratedSampleJudge(judge, own, tag))
        else:
            out.append(CalibratedJudge(judge, own, tag))
    return out


def stored_judge_ids(config: EvalConfig, seen: Collection[str] | None = None) -> list[str]:
    """The ids the run's judges store their verdicts under, in the config's order: a judge the run's profile
    calibrates is `<judge>+cal-<tag>` (CalibratedJudge). When the profile cannot be read (moved, or a relative
    path read from another directory), `seen` (the judge ids of the run's checks' verdicts) tells which judges
    were calibrated; ConfigError without `seen`, or when it holds two calibrated ids of one judge."""
    ids = [spec.judge_id for spec in config.judges]
    try:
        profile = load_profile(config)
    except ConfigError:
        if seen is None:
            raise
        return [_seen_id(judge, seen, config) for judge in ids]
    if profile is None:
        return ids
    tag = profile_tag(profile)
    return [f"{judge}+cal-{tag}" if profile.of_judge(judge) else judge for judge in ids]


def _seen_id(judge: str, seen: Collection[str], config: EvalConfig) -> str:
    tagged = sorted({s for s in seen if s.startswith(f"{judge}+cal-")})
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
    tag = profile_tag(profile)
    # The held-out figures are the suite's data, not this run's checks: transfer to a run is never measured by
    # the profile itself (`calibrate --suite NAME --file B --config ...` measures it on other labelled data).
    return [f"calibration profile {config.calibration_profile} applied: {'; '.join(applied)} (held-out figures: "
            f"{profile.thresholds[0].folds}-fold cross-validated on {profile.data_file}; calibrated judges are "
            f"stored as '<judge>+cal-{tag}')",
            f"the profile was fit on the {profile.suite} suite's labels, not on this run's checks: its figures "
            f"may not hold here (measure it on labels of this kind of data with `ragcourt calibrate --suite NAME "
            f"--file LABELS --config CONFIG`)"]
