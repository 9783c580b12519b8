"""The reference-side figures against hand-computed values (RAGAS's own formulas)."""

from __future__ import annotations

import pytest

from ragcourt.metrics.reference import (
    claim_precision,
    context_precision_with_reference,
    element_recall,
    factual_f1,
)


def test_claim_precision_is_the_share_of_claims_the_reference_supports() -> None:
    # 4 claims: yes, no, a split jury (counts 0.5, as seed 003 averages two judges), undecided (left out)
    value = claim_precision([1.0, 0.0, 0.5, None])
    assert (value.value, value.n, value.n_unscored) == (pytest.approx(1.5 / 3), 3, 1)
    assert claim_precision([]).value is None and claim_precision([]).na_reason == "the answer has no claims"
    assert claim_precision([None]).na_reason == "every claim-in-reference check is unscored"


def test_factual_f1_is_the_harmonic_mean_of_claim_precision_and_element_recall() -> None:
    precision = claim_precision([1.0, 0.0])  # 1/2
    recall = element_recall([1.0, 1.0, 1.0, 0.0])  # 3/4
    f1 = factual_f1(precision, recall)
    assert f1.value == pytest.approx(2 * 0.5 * 0.75 / (0.5 + 0.75))  # 0.6
    assert f1.value == pytest.approx(0.6)
    assert (f1.n, f1.n_unscored) == (6, 0)
    assert factual_f1(claim_precision([0.0]), element_recall([0.0])).value == 0.0
    missing = factual_f1(claim_precision([]), recall)
    assert missing.value is None and missing.na_reason == "claim_precision is n/a: the answer has no claims"


def test_context_precision_with_reference_is_ragas_mean_precision_at_the_relevant_ranks() -> None:
    # RAGAS's docs example: relevant, not, relevant -> (1/1 + 2/3) / 2
    assert context_precision_with_reference([True, False, True]).value == pytest.approx((1 + 2 / 3) / 2)
    # not, relevant, not, relevant -> (1/2 + 2/4) / 2 = 0.5
    value = context_precision_with_reference([False, True, False, True])
    assert (value.value, value.n) == (pytest.approx(0.5), 4)
    assert context_precision_with_reference([False, False]).value == 0.0
    assert context_precision_with_reference([True]).value == 1.0
    undecided = context_precision_with_reference([True, None, False])
    assert undecided.value is None and undecided.n_unscored == 1  # a left-out chunk would move every later rank
    assert context_precision_with_reference([]).na_reason == "no chunk was retrieved"
