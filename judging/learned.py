"""The stacked offline judge: a logistic regression over the offline judges' features (judging.features), its
coefficients stored as numbers (schema.stacking.StackedModel) and applied with numpy alone, so a run needs no
scikit-learn (only fitting does: validity.stacking).

It decides the binary kinds it has a model for, yes when P(yes) >= 0.5 (the model is fit with balanced class
weights, so 0.5 is the balanced cut, not the base rate); any other kind is unscored (beyond its rule), left to
the other judges of the jury.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ragcourt.judging.baseline import Embed
from ragcourt.judging.features import FEATURES, FEATURES_VERSION, FeatureExtractor
from ragcourt.schema import Check, CheckKind, Label, UnscoredReason, Verdict, VerdictStatus
from ragcourt.schema.config import BaselineModel
from ragcourt.schema.stacking import StackedModel


def logistic(vectors: np.ndarray, mean: Sequence[float] | np.ndarray, scale: Sequence[float] | np.ndarray,
             coefficients: Sequence[float] | np.ndarray, intercept: float) -> np.ndarray:
    """P(yes) of each row of `vectors` under a logistic regression on standardised features (schema.stacking);
    validity.stacking decides its held-out folds with it too, so fitting and applying cannot drift apart."""
    x = (np.atleast_2d(vectors) - np.asarray(mean)) / np.asarray(scale)
    return 1.0 / (1.0 + np.exp(-(x @ np.asarray(coefficients) + intercept)))


def probabilities_yes(model: StackedModel, vectors: np.ndarray) -> np.ndarray:
    """P(yes) of each row of `vectors` (FEATURES order)."""
    return logistic(vectors, model.mean, model.scale, model.coefficients, model.intercept)


def check_compatible(model: StackedModel) -> None:
    """ValueError when the model was fit on other features than this ragcourt computes."""
    if model.features_version != FEATURES_VERSION or tuple(model.features) != tuple(str(f) for f in FEATURES):
        raise ValueError(f"the stacked model of {model.kind} was fit on features v{model.features_version} "
                         f"({', '.join(model.features)}); this ragcourt computes v{FEATURES_VERSION} "
                         f"({', '.join(FEATURES)}): fit it again (`ragcourt calibrate --fit-stacked`)")


@dataclass
class LearnedJudge:
    """Applies stored stacked models, one per check kind."""

    models: Mapping[CheckKind, StackedModel]
    embed: Embed
    name: str = "learned"
    _features: FeatureExtractor = field(init=False, repr=False)

    def __post_init__(self) -> None:
        for model in self.models.values():
            check_compatible(model)
        self._features = FeatureExtractor(self.embed)

    @property
    def judge_id(self) -> str:
        return self.name

    @property
    def model_id(self) -> str:
        """`learned`, a rule's name: no LLM is called (a report prices none); the judge id tells models apart."""
        return str(BaselineModel.LEARNED)

    async def judge(self, kind: CheckKind, checks: Sequence[Check]) -> list[Verdict]:
        model = self.models.get(kind)
        if model is None:
            return [Verdict(check_id=c.id, judge_id=self.judge_id, model_id=self.model_id,
                            status=VerdictStatus.UNSCORED, unscored_reason=UnscoredReason.BEYOND_RULE,
                            detail=f"the stacked judge has no model for {kind}") for c in checks]
        p = probabilities_yes(model, self._features.matrix([(c.subject_text, c.target_text) for c in checks]))
        out = []
        for check, p_yes in zip(checks, p.tolist(), strict=True):
            label = Label.YES if p_yes >= 0.5 else Label.NO
            out.append(Verdict(check_id=check.id, judge_id=self.judge_id, model_id=self.model_id,
                               status=VerdictStatus.OK, label=label,
                               probabilities={Label.YES: p_yes, Label.NO: 1.0 - p_yes},
                               rationale=f"stacked P(yes) {p_yes:.2f}"))
        return out
