"""Small helpers shared by the pure metric modules.

A per-sample figure is a `ragcourt.schema.MetricValue`: a float, or None plus the reason it is n/a,
with the number of units it was computed over (`n`) and the number of units left out because their
verdict was missing (`n_unscored`). Undecided inputs are written as None in every metric module
("three-valued": True / False / None).
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

from ragcourt.schema import MetricValue

Decision = bool | None
"""A binary verdict that may be missing: None means unscored / undecided, never False."""


class MetricName(StrEnum):
    """Names under which metric values are reported (the `name` of a MetricValue)."""

    SOFT_RELEVANCE = "soft_relevance"
    C_PRECISION = "c_prec"
    C_NDCG = "c_ndcg"
    COMPLETENESS = "completeness"
    CONCISENESS = "conciseness"
    VERIFIABLENESS = "verifiableness"
    EXACT_MATCH = "exact_match"
    ANSWER_F1 = "answer_f1"
    SOFT_CORRECTNESS = "soft_correctness"
    GROUNDING = "grounding_score"
    CONFIDENCE_ERROR = "confidence_error"
    ELEMENT_COVERAGE = "element_coverage"
    ACCURACY = "accuracy"
    COHENS_KAPPA = "cohens_kappa"
    FLEISS_KAPPA = "fleiss_kappa"
    PEARSON = "pearson"
    SPEARMAN = "spearman"

    def at(self, k: int) -> str:
        """The name with a cut-off, e.g. `c_prec@5`."""
        return f"{self.value}@{k}"


def not_available(name: str, reason: str, *, n: int = 0, n_unscored: int = 0) -> MetricValue:
    """An n/a value: value None with the reason why."""
    return MetricValue(name=name, value=None, na_reason=reason, n=n, n_unscored=n_unscored)


def share(name: str, hits: int, total: int, *, n_unscored: int = 0, empty_reason: str) -> MetricValue:
    """hits / total over decided units; n/a with `empty_reason` when there is no decided unit."""
    if total == 0:
        return not_available(name, empty_reason, n_unscored=n_unscored)
    return MetricValue(name=name, value=hits / total, n=total, n_unscored=n_unscored)


def count_decisions(decisions: Iterable[Decision]) -> tuple[int, int, int]:
    """(number True, number False, number None)."""
    yes = no = missing = 0
    for decision in decisions:
        if decision is None:
            missing += 1
        elif decision:
            yes += 1
        else:
            no += 1
    return yes, no, missing


def any_true(decisions: Iterable[Decision]) -> Decision:
    """Kleene OR: True if any is True, False if all are False (or there are none), else None."""
    saw_missing = False
    for decision in decisions:
        if decision is True:
            return True
        if decision is None:
            saw_missing = True
    return None if saw_missing else False


def both_true(left: Decision, right: Decision) -> Decision:
    """Kleene AND: False if either is False, True if both are True, else None."""
    if left is False or right is False:
        return False
    if left is None or right is None:
        return None
    return True
