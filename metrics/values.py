"""Small helpers shared by the pure metric modules.

A per-sample figure is a `ragcourt.schema.MetricValue`: a float, or None plus the reason it is n/a,
with the number of units it was computed over (`n`) and the number of units left out because their
verdict was missing (`n_unscored`). Undecided inputs are written as None in every metric module
("three-valued": True / False / None).
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import NamedTuple

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
    # seed 003's two coverages of a sample's elements: found in the normal retrieval's chunks (context side; the
    # loose re-run's trigger) and stated by the answer (answer side; where the answering LLM's noise shows)
    ELEMENT_COVERAGE = "element_coverage"
    ELEMENT_ANSWER_COVERAGE = "element_answer_coverage"
    # method reference (metrics.reference): the counterparts of RAGAS's factual correctness and context precision
    CLAIM_PRECISION = "claim_precision"
    ELEMENT_RECALL = "element_recall"
    FACTUAL_F1 = "factual_f1"
    CONTEXT_PRECISION_REF = "context_precision_ref"
    # per sample, batching joint: judge calls that asked again for what a long reply left out (n: checks asked)
    FOLLOW_UP_CALLS = "follow_up_calls"
    ACCURACY = "accuracy"
    BALANCED_ACCURACY = "balanced_accuracy"
    AUROC = "auroc"
    COHENS_KAPPA = "cohens_kappa"
    FLEISS_KAPPA = "fleiss_kappa"
    PEARSON = "pearson"
    SPEARMAN = "spearman"
    # per sample, when the pointer rule is on: how many elements it left out (n: elements before the rule)
    POINTER_ELEMENTS_DROPPED = "pointer_elements_dropped"

    def at(self, k: int) -> str:
        """The name with a cut-off, e.g. `c_prec@5`."""
        return f"{self.value}@{k}"


class MetricKey(NamedTuple):
    """A reported metric name read back: its base name and cut-off (`c_prec@5` -> `c_prec`, 5; `c_prec` -> k
    None). `str()` gives the reported name again."""

    base: str
    k: int | None = None

    @classmethod
    def of(cls, name: str) -> MetricKey:
        base, _, k = name.partition("@")
        return cls(base, int(k) if k else None)

    def __str__(self) -> str:
        return self.base if self.k is None else f"{self.base}@{self.k}"


class NaCause(StrEnum):
    """The causes of n/a that code reads back (tables that sort n/a figures by why), as the words every such
    `na_reason` starts with: the reason stays one readable sentence, the cause is found by its type."""

    UNKNOWN_CHUNKS = "the retrieved chunks are unknown"  # the system answered without showing its retrieval
    NO_REFERENCE = "the sample has no reference answer"
    NO_ANSWER = "there is no answer"  # the system gave none under the condition
    ANSWER_FAILED = "the answer failed"  # the system's call ended in an error

    def reason(self, detail: str) -> str:
        """The n/a reason of this cause with its detail, e.g. `the retrieved chunks are unknown: <why>`."""
        return f"{self.value}: {detail}"

    def explains(self, value: MetricValue | None) -> bool:
        return value is not None and (value.na_reason or "").startswith(self.value)


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
