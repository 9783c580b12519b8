"""The reference-side figures (method `reference`): what RAGAS's factual correctness and context precision with
reference ask, from seed 003's frozen elements and per-check jury decisions.

- claim precision: the share of the answer's claims the reference (its elements) supports, RAGAS's factual
  correctness precision (TP / (TP + FP), answer claims checked against the reference);
- element recall: the share of the reference's elements the answer states (seed 003's "in the answer"),
  its recall (TP / (TP + FN), the reference checked against the answer);
- factual F1: their harmonic mean, RAGAS's default mode (`f1`);
- context precision with reference: a chunk is relevant when it states at least one element, and the figure is
  RAGAS's mean of precision@k over the ranks k of the relevant chunks
  (sum_k precision@k * v_k / number of relevant chunks; 0 when none is relevant).

Values are three-valued as everywhere here: a split jury (0.5) counts half in the shares, as seed 003 averages
its judges; an undecided check (None) leaves the shares (n_unscored), and makes the rank-based context
precision n/a, since leaving a chunk out would move every later rank.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragcourt.metrics.values import Decision, MetricName, not_available
from ragcourt.schema import MetricValue

JuryValue = float | None
"""1.0 yes, 0.0 no, 0.5 the judges split evenly, None undecided (as metrics.elements.JuryValue)."""


def _mean_share(name: str, values: Sequence[JuryValue], *, no_units: str, none_decided: str) -> MetricValue:
    decided = [v for v in values if v is not None]
    if not decided:
        return not_available(name, no_units if not values else none_decided, n_unscored=len(values))
    return MetricValue(name=name, value=sum(decided) / len(decided), n=len(decided),
                       n_unscored=len(values) - len(decided))


def claim_precision(in_reference: Sequence[JuryValue]) -> MetricValue:
    """Share of the answer's claims the reference supports, one value per claim."""
    return _mean_share(MetricName.CLAIM_PRECISION.value, in_reference, no_units="the answer has no claims",
                       none_decided="every claim-in-reference check is unscored")


def element_recall(in_answer: Sequence[JuryValue]) -> MetricValue:
    """Share of the reference's elements the answer states, one value per element."""
    return _mean_share(MetricName.ELEMENT_RECALL.value, in_answer, no_units="the reference has no elements",
                       none_decided="every element-in-answer check is unscored")


def factual_f1(precision: MetricValue, recall: MetricValue) -> MetricValue:
    """2PR / (P + R); 0 when both are 0; n/a when either is, with why."""
    name = MetricName.FACTUAL_F1.value
    unscored = precision.n_unscored + recall.n_unscored
    if precision.value is None or recall.value is None:
        missing = precision if precision.value is None else recall
        return not_available(name, f"{missing.name} is n/a: {missing.na_reason}", n_unscored=unscored)
    total = precision.value + recall.value
    value = 2 * precision.value * recall.value / total if total else 0.0
    return MetricValue(name=name, value=value, n=precision.n + recall.n, n_unscored=unscored)


def context_precision_with_reference(relevant: Sequence[Decision]) -> MetricValue:
    """RAGAS's context precision over the chunks in rank order, `relevant[i]` whether chunk i states an element."""
    name = MetricName.CONTEXT_PRECISION_REF.value
    if not relevant:
        return not_available(name, "no chunk was retrieved")
    undecided = sum(1 for v in relevant if v is None)
    if undecided:
        return not_available(name, f"{undecided} of {len(relevant)} chunks have no decided relevance",
                             n_unscored=undecided)
    hits, total = 0, 0.0
    for rank, is_relevant in enumerate(relevant, start=1):
        if is_relevant:
            hits += 1
            total += hits / rank
    return MetricValue(name=name, value=total / hits if hits else 0.0, n=len(relevant))
