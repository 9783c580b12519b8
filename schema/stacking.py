"""A stacked offline judge's model, stored as plain numbers (no pickle): a logistic regression over the offline
judges' features (judging.features), fit from human labels by `ragcourt calibrate --fit-stacked` (validity.stacking)
and applied with numpy alone (judging.learned.LearnedJudge).

P(yes) = 1 / (1 + exp(-(intercept + sum_i coefficient_i * (x_i - mean_i) / scale_i))).

Like a learned threshold, it keeps what it was fit on and how good it is: the features' names and version, the
labels, n per class, the data file's content hash, and in-sample and k-fold cross-validated AUROC and kappa
(each fold's items decided by a model fit without them).
"""

from __future__ import annotations

from pydantic import Field, model_validator

from ragcourt.schema.enums import CheckKind
from ragcourt.schema.records import Record


class StackedModel(Record):
    kind: CheckKind
    features: tuple[str, ...] = Field(min_length=1, description="the feature names, in vector order")
    features_version: int = Field(ge=1)
    mean: tuple[float, ...] = Field(description="per feature, subtracted before scaling")
    scale: tuple[float, ...] = Field(description="per feature, divides the centred value (never 0)")
    coefficients: tuple[float, ...]
    intercept: float
    regularisation: float = Field(gt=0, description="the inverse L2 strength C chosen by cross-validation")
    labels: str = Field(description="which human labels, e.g. 'wice strict'")
    data_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    n_positive: int = Field(ge=1)
    n_negative: int = Field(ge=1)
    folds: int = Field(ge=2)
    in_sample_auroc: float | None
    in_sample_kappa: float | None
    cross_validated_auroc: float | None
    cross_validated_kappa: float | None

    @model_validator(mode="after")
    def _same_lengths(self) -> StackedModel:
        sizes = {len(self.features), len(self.mean), len(self.scale), len(self.coefficients)}
        if len(sizes) != 1:
            raise ValueError("features, mean, scale and coefficients must have one value per feature")
        if any(s == 0 for s in self.scale):
            raise ValueError("scale must not be 0")
        return self

    def describe(self) -> str:
        """e.g. `stacked claim_supported (cv AUROC 0.81, cv kappa 0.42, n=30+30)`."""
        auroc = "n/a" if self.cross_validated_auroc is None else f"{self.cross_validated_auroc:.2f}"
        kappa = "n/a" if self.cross_validated_kappa is None else f"{self.cross_validated_kappa:.2f}"
        return (f"stacked {self.kind} ({self.folds}-fold cv AUROC {auroc}, cv kappa {kappa}, "
                f"n={self.n_positive}+{self.n_negative}, features v{self.features_version})")
