"""analysis/cuer_tables: each condition's own soft correctness and answer F1 beside the changes (issue 35, item 5:
seed 004's tables give every condition's figures, the tables here gave only perturbed - normal)."""

from __future__ import annotations

import pytest

from ragcourt.analysis.cuer_tables import cuer_condition_frame, cuer_frame
from ragcourt.metrics.cuer import Outcome, perturbation_effect
from ragcourt.metrics.values import MetricName
from ragcourt.schema import Condition, ConditionKind, MetricValue, SampleDiagnostics

NORMAL = Outcome(condition=Condition(kind=ConditionKind.NORMAL), soft_correct=True, f1=0.8, confidence=None,
                 used_chunk_ids=None)
TITLES = {"c1": "Gold page", "c2": "Other page"}


def removed(chunk_id: str, soft_correct: bool, f1: float) -> Outcome:
    return Outcome(condition=Condition(kind=ConditionKind.REMOVE, chunk_id=chunk_id), soft_correct=soft_correct,
                   f1=f1, confidence=None, used_chunk_ids=None)


def diagnostics(sample_id: str, gold_f1: float) -> SampleDiagnostics:
    effects = (perturbation_effect(NORMAL, removed("c1", False, gold_f1), TITLES, ["Gold page"]),
               perturbation_effect(NORMAL, removed("c2", True, 1.0), TITLES, ["Gold page"]))
    metrics = (MetricValue(name=MetricName.SOFT_CORRECTNESS, value=1.0, n=1),
               MetricValue(name=MetricName.ANSWER_F1, value=0.8, n=1))
    return SampleDiagnostics(run_id="r", sample_id=sample_id, question="Who?", perturbations=effects, metrics=metrics)


def test_a_perturbation_effect_keeps_the_perturbed_answers_own_soft_correctness_and_f1() -> None:
    effect = perturbation_effect(NORMAL, removed("c1", False, 0.25), TITLES, ["Gold page"])
    assert (effect.soft_correct, effect.f1) == (0.0, 0.25)
    assert (effect.d_soft_correct, effect.d_f1) == pytest.approx((-1.0, -0.55))


def test_the_condition_table_gives_each_conditions_soft_correctness_and_f1() -> None:
    frame = cuer_condition_frame([diagnostics("a", 0.25), diagnostics("b", 0.75)])
    table = {(r.perturbation, r.chunk): (r.soft_correct, round(r.f1, 6), r.n_soft_correct, r.n_f1)
             for r in frame.itertuples(index=False)}
    assert table == {("normal", "none perturbed"): (1.0, 0.8, 2, 2), ("remove", "gold"): (0.0, 0.5, 2, 2),
                     ("remove", "non-gold"): (1.0, 1.0, 2, 2)}


def perturbed(kind: ConditionKind, chunk_id: str) -> Outcome:
    return Outcome(condition=Condition(kind=kind, chunk_id=chunk_id), soft_correct=False, f1=0.5, confidence=None,
                   used_chunk_ids=None)


def mixed(sample_id: str, kinds: tuple[tuple[ConditionKind, str], ...]) -> SampleDiagnostics:
    effects = tuple(perturbation_effect(NORMAL, perturbed(kind, chunk), TITLES, ["Gold page"]) for kind, chunk in kinds)
    return diagnostics(sample_id, 0.5).model_copy(update={"perturbations": effects})


def test_both_cuer_tables_keep_one_row_order_whatever_order_the_questions_finished_in() -> None:
    """Two identical runs list their questions in the order they finished; the "CUE-R per condition" rows
    followed the first question seen."""
    first = mixed("a", ((ConditionKind.DUPLICATE, "c1"), (ConditionKind.REPLACE, "c2")))
    second = mixed("b", ((ConditionKind.REMOVE, "c2"), (ConditionKind.REMOVE, "c1")))
    expected = [("normal", "none perturbed"), ("remove", "gold"), ("remove", "non-gold"), ("replace", "non-gold"),
                ("duplicate", "gold")]
    for order in ([first, second], [second, first]):
        rows = [(r.perturbation, r.chunk) for r in cuer_condition_frame(order).itertuples(index=False)]
        assert rows == expected
        assert [(r.perturbation, r.chunk) for r in cuer_frame(order).itertuples(index=False)] == expected[1:]
