"""A calibration profile: thresholds learned from human labels (`ragcourt calibrate --fit-threshold
--save-profile PATH`), one per judge and check kind, that a run applies (`calibration_profile: PATH` in the
configuration, or `ragcourt run --calibration-profile PATH`): the judge's label on such a check is then
yes exactly when its P(yes) >= the threshold.

Each threshold keeps what it was learned from and how good it is: the objective, its value on the labelled
items (in-sample, optimistic) and k-fold cross-validated (each fold decided by a threshold fit without it:
the figure to expect on new items), the number of items, and the data file's content hash.

A profile may also hold stacked models (schema.stacking, `calibrate --fit-stacked --save-profile`): the jury
member `learned` applies them. A profile needs thresholds, stacked models or both; one saved before stacked
models existed has no `stacked` key and reads as having none.
"""

from __future__ import annotations

import json
from datetime import datetime
from enum import StrEnum
from pathlib import Path

from pydantic import Field, ValidationError, model_validator

from ragcourt.schema.config import ConfigError
from ragcourt.schema.enums import CheckKind
from ragcourt.schema.records import Record, utcnow
from ragcourt.schema.stacking import StackedModel

PROFILE_VERSION = 1
# The `suite` of a profile fit on labels of stored checks (review decisions or a labels file: validity.review_fit)
STORED_LABELS = "stored checks"
# The rater whose pairwise "threshold" is the jury's tie margin on P_B - P_A, not a judge's cut on P(yes): the
# judges give A/B/Tie, and the margin is the jury's (validity.calibration.JURY names the same rater).
PAIRWISE_JURY = "jury"


class ThresholdObjective(StrEnum):
    """What a learned threshold maximises against the labels."""

    BALANCED_ACCURACY = "balanced_accuracy"
    KAPPA = "kappa"


class LearnedThreshold(Record):
    judge_id: str = Field(min_length=1)
    judge_model: str = Field(min_length=1, description="the judge's model or rule (lexical, semantic, a spec)")
    kind: CheckKind
    threshold: float = Field(description="yes when P(yes) >= threshold; pairwise (the jury's): Tie when "
                             "|P_B - P_A| <= threshold")
    objective: ThresholdObjective
    labels: str = Field(description="which human labels, e.g. 'wice strict (supported vs the rest)'")
    in_sample: float | None = Field(description="the objective on the items the threshold was fit on")
    cross_validated: float | None = Field(description="the objective of held-out decisions, k-fold")
    cross_validated_na: str | None = Field(default=None, description="why there is no cross-validated figure")
    folds: int = Field(ge=2)
    n: int = Field(ge=1, description="labelled items with a probability from the judge")
    n_positive: int = Field(ge=0, description="yes labels; pairwise: A or B (a preference, not Tie)")
    n_without_probability: int = Field(ge=0, description="labelled items left out: no probability (or verdict)")

    def describe(self) -> str:
        """e.g. `lexical claim_supported threshold 0.41 (cv balanced accuracy 0.71, n=60)`."""
        objective = str(self.objective).replace("_", " ")
        held_out = (f"cv {objective} {self.cross_validated:.2f}" if self.cross_validated is not None
                    else f"no cv {objective}: {self.cross_validated_na}")
        cut = "tie margin on P_B - P_A" if self.kind is CheckKind.PAIRWISE else "threshold"
        return f"{self.judge_id} {self.kind} {cut} {self.threshold:.2f} ({held_out}, n={self.n})"


class CalibrationProfile(Record):
    version: int = PROFILE_VERSION
    suite: str
    data_file: str
    data_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    created_at: datetime = Field(default_factory=utcnow)
    thresholds: tuple[LearnedThreshold, ...] = ()
    stacked: tuple[StackedModel, ...] = Field(default=(), description="the `learned` judge's models, one a kind")

    @model_validator(mode="after")
    def _holds_something(self) -> CalibrationProfile:
        if not self.thresholds and not self.stacked:
            raise ValueError("a profile holds thresholds, stacked models or both; this one holds neither")
        if len({m.kind for m in self.stacked}) != len(self.stacked):
            raise ValueError("stacked: a kind appears twice")
        return self

    def of_judge(self, judge_id: str) -> dict[CheckKind, LearnedThreshold]:
        return {t.kind: t for t in self.thresholds if t.judge_id == judge_id and t.kind is not CheckKind.PAIRWISE}

    def tie_margin(self) -> LearnedThreshold | None:
        """The pairwise jury's tie margin (schema.config.PairwiseJury.MEAN_PROBABILITY), where one was learned."""
        return next((t for t in self.thresholds if t.judge_id == PAIRWISE_JURY and t.kind is CheckKind.PAIRWISE),
                    None)

    def save(self, path: Path) -> None:
        Path(path).write_text(self.model_dump_json(indent=2) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> CalibrationProfile:
        """Read a profile; ConfigError naming the file and the field of any problem."""
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as error:
            raise ConfigError(f"calibration profile {path}: cannot read: {error}") from None
        except json.JSONDecodeError as error:
            raise ConfigError(f"calibration profile {path}:{error.lineno}: not valid JSON: {error.msg}") from None
        try:
            profile = cls.model_validate(data)
        except ValidationError as error:
            lines = [f"calibration profile {path}: invalid"]
            for item in error.errors(include_url=False):
                key = ".".join(str(part) for part in item["loc"]) or "(top level)"
                lines.append(f"  field '{key}': {item['msg']}")
            raise ConfigError("\n".join(lines)) from None
        if profile.version != PROFILE_VERSION:
            raise ConfigError(f"calibration profile {path}: field 'version': {profile.version} is not the version "
                              f"this ragcourt reads ({PROFILE_VERSION})")
        keys = [(t.judge_id, t.kind) for t in profile.thresholds]
        if len(set(keys)) != len(keys):
            raise ConfigError(f"calibration profile {path}: field 'thresholds': a judge and kind appear twice")
        return profile
