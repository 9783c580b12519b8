"""RAGChecker's meta-evaluation figures (its `data/meta_evaluation/meta_eval.py`), for ragcourt's raters and
for the evaluators whose scores RAGChecker publishes (`baseline_*.json`), on the same instances.

As meta_eval computes them: per human aspect (correctness, completeness, overall), a rater's number per
instance is model2's score minus model1's (for ragcourt: the preference for B, +1 / 0 / -1 for a judge's
label, P_B - P_A for the jury); a missing number (NaN there, unscored here) is filled with the median of
the others and counted; the numbers are normalised linearly to [-2, 2]; each instance's number is repeated
for each of its annotators and correlated (Pearson, Spearman) with all the annotators' labels pooled. The
RAGChecker evaluator's own file is compared on its matching metric only (as meta_eval does), every other
evaluator's metrics on every aspect. The human "sanity check" is annotator 1 against annotator 2.
meta_eval prints the correlations times 100; these are the plain coefficients.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

from ragcourt.data.loaders import DatasetError, DatasetErrors, HumanAspect, RagCheckerPair
from ragcourt.data.validity_sets import BaselineScores
from ragcourt.metrics.agreement import pearson, spearman
from ragcourt.schema import MetricValue
from ragcourt.validity.calibration import CalibrationItem

RAGCHECKER_EVALUATOR = "ragchecker"
RAGCOURT = "ragcourt"
HUMAN = "human"


def label_metric(aspect: HumanAspect) -> str:
    """The RAGChecker field of an aspect's label, e.g. overall -> overall_label."""
    return f"{aspect}_label"


class MetaEvalRow(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    aspect: HumanAspect
    source: str  # ragcourt, human, or the evaluator named in a baseline file
    rater: str  # a judge id / jury, a baseline metric, or "annotator 1 vs annotator 2"
    n: int  # correlated pairs (instances x annotators)
    n_filled: int  # instances without a number, filled with the median
    pearson: MetricValue
    spearman: MetricValue


def _filled(values: Sequence[float | None]) -> tuple[list[float], int]:
    known = [v for v in values if v is not None]
    median = float(np.median(known)) if known else 0.0
    return [median if v is None else v for v in values], len(values) - len(known)


def _normalised(values: Sequence[float]) -> list[float]:
    low, high = min(values), max(values)
    return [((v - low) / (high - low) - 0.5) * 4 for v in values] if high != low else list(values)


def _row(aspect: HumanAspect, source: str, rater: str, numbers: Sequence[float | None],
         pairs: Sequence[RagCheckerPair]) -> MetaEvalRow:
    filled, n_filled = _filled(numbers)
    normalised = _normalised(filled) if filled else []
    rated = [x for x, pair in zip(normalised, pairs, strict=True) for _ in pair.annotations]
    human = [float(a.score(aspect)) for pair in pairs for a in pair.annotations]
    return MetaEvalRow(aspect=aspect, source=source, rater=rater, n=len(rated), n_filled=n_filled,
                       pearson=pearson(rated, human), spearman=spearman(rated, human))


def _human_row(aspect: HumanAspect, pairs: Sequence[RagCheckerPair]) -> MetaEvalRow:
    two = [p for p in pairs if len(p.annotations) >= 2]
    first = [float(p.annotations[0].score(aspect)) for p in two]
    second = [float(p.annotations[1].score(aspect)) for p in two]
    return MetaEvalRow(aspect=aspect, source=HUMAN, rater="annotator 1 vs annotator 2", n=len(two), n_filled=0,
                       pearson=pearson(first, second), spearman=spearman(first, second))


def check_instances(pairs: Sequence[RagCheckerPair], baseline: BaselineScores) -> None:
    missing = [p.instance_id for p in pairs if p.instance_id not in baseline.scores]
    if missing:
        raise DatasetErrors([DatasetError(baseline.file, f"has no scores for {len(missing)} of the "
                                                         f"{len(pairs)} labelled instances (first: instance_id "
                                                         f"{missing[0]}): give the baseline file of the same set")])


def meta_eval(pairs: Sequence[RagCheckerPair], ours: Mapping[HumanAspect, Sequence[CalibrationItem]],
              raters: Sequence[str], baselines: Sequence[BaselineScores]) -> list[MetaEvalRow]:
    """Rows per aspect: ragcourt's raters, then each baseline file's metrics, then the human sanity check.
    `ours[aspect]` are judge_ragchecker's items in `pairs` order."""
    for baseline in baselines:
        check_instances(pairs, baseline)
    rows = []
    for aspect, items in ours.items():
        for rater in raters:
            rows.append(_row(aspect, RAGCOURT, rater, [item.judge_numbers.get(rater) for item in items], pairs))
        for baseline in baselines:
            wanted = label_metric(aspect)
            metrics = ([m for m in baseline.metrics if m == wanted] if baseline.evaluator == RAGCHECKER_EVALUATOR
                       else list(baseline.metrics))
            for metric in metrics:
                numbers = []
                for pair in pairs:
                    one, two = baseline.scores[pair.instance_id][metric]
                    numbers.append(None if one is None or two is None else two - one)
                rows.append(_row(aspect, baseline.evaluator, metric, numbers, pairs))
        rows.append(_human_row(aspect, pairs))
    return rows
