"""The review budget on a run of a scripted jury of known accuracies (fakes.scripted_jury): the order, the
expected changes against what a review really does to a figure, and the remaining uncertainty."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes.scripted_jury import SAMPLES, runner_for, truth

from ragcourt.analysis.summary import summarize
from ragcourt.runs.rescore import arescore_run
from ragcourt.schema import NORMAL, CheckKind, Label, Review, ReviewAction
from ragcourt.schema.config import Reconcile
from ragcourt.stores.records import RecordStore
from ragcourt.validity.jury_weights import fit_jury
from ragcourt.validity.review_budget import budget_order, p_yes, plan_reviews, review_queue

COVERAGE = "element_coverage"
ANSWER_COVERAGE = "element_answer_coverage"


@pytest.fixture
def store(tmp_path: Path):
    with RecordStore(tmp_path / "store.sqlite") as opened:
        yield opened


async def run(store: RecordStore, tmp_path: Path) -> None:
    runner = runner_for(store, tmp_path, "m", Reconcile.MAJORITY)
    _ = [d async for d in runner.astream(SAMPLES)]


def figure(store: RecordStore, name: str) -> float:
    row = next(r for r in summarize(store, "m").metrics if r.name == name)
    assert row.mean is not None
    return row.mean


async def test_the_budget_order_ranks_by_expected_change_and_keeps_every_escalation(store, tmp_path):
    await run(store, tmp_path)
    pending = store.pending_escalations("m")
    plan = plan_reviews(store, "m")
    assert sorted(s.escalation.check_id for s in plan.swings) == sorted(r.check_id for r in pending)
    totals = [s.total for s in plan.swings]
    assert totals == sorted(totals, reverse=True) and totals[0] > 0
    assert [r.check_id for r in budget_order(store, "m", pending)] == [s.escalation.check_id for s in plan.swings]
    jury = fit_jury(store, "m")
    for swing in plan.swings:  # the probability is the jury's posterior wherever its kind was estimated
        if swing.escalation.check_id in jury.posteriors:
            assert swing.p_yes == jury.posteriors[swing.escalation.check_id][Label.YES]


@pytest.mark.parametrize(("coverage", "kind"), [(COVERAGE, CheckKind.ELEMENT_IN_CONTEXT),
                                              (ANSWER_COVERAGE, CheckKind.ELEMENT_IN_ANSWER)])
async def test_an_element_coverage_review_moves_the_figure_by_its_unit_share(store, tmp_path, coverage, kind):
    """Element coverage is the mean over samples of the mean of their element-in-context decisions (the answer
    side: element-in-answer), so a decision flipped moves the run figure by exactly 1 / (its sample's such
    checks x samples with a value)."""
    await run(store, tmp_path)
    checks = {c.id: c for c in store.checks_for("m")}
    plan = plan_reviews(store, "m")
    swing = next(s for s in plan.swings if s.escalation.kind is kind
                 and s.escalation.label is not None and checks[s.escalation.check_id].condition == NORMAL)
    rec, check = swing.escalation, checks[swing.escalation.check_id]
    n_units = sum(1 for c in checks.values() if c.sample_id == check.sample_id
                  and c.kind is kind and c.condition == NORMAL)
    n_samples = next(r.n_samples for r in summarize(store, "m").metrics if r.name == coverage)
    p = p_yes(rec, fit_jury(store, "m"))
    v = 1.0 if rec.label is Label.YES else 0.0
    assert swing.expected == {coverage: pytest.approx((p * (1 - v) + (1 - p) * v) / (n_units * n_samples))}

    before = figure(store, coverage)
    flipped = Label.NO if rec.label is Label.YES else Label.YES
    store.add_review(Review(run_id="m", check_id=rec.check_id, reviewer="ann", action=ReviewAction.OVERRIDE,
                            label=flipped))
    await arescore_run(store, "m", tmp_path / "runs" / "m")
    assert abs(figure(store, coverage) - before) == pytest.approx(1 / (n_units * n_samples))


async def test_remaining_uncertainty_shrinks_as_reviews_arrive(store, tmp_path):
    await run(store, tmp_path)
    first = {u.name: u for u in plan_reviews(store, "m").uncertainty}
    assert COVERAGE in first
    for u in first.values():
        assert u.low <= u.value <= u.high and u.sd >= 0
    assert first[COVERAGE].n_pending > 0 and first[COVERAGE].high > first[COVERAGE].low
    checks = {c.id: c for c in store.checks_for("m")}
    for rec in store.pending_escalations("m"):
        store.add_review(Review(run_id="m", check_id=rec.check_id, reviewer="ann", action=ReviewAction.OVERRIDE,
                                label=truth(checks[rec.check_id])))
    await arescore_run(store, "m", tmp_path / "runs" / "m")
    # every element escalation decided: nothing is left to move element coverage. (The reviewed serve checks
    # make new sufficiency checks due, which a replay cannot judge: those escalate, unscored, and keep
    # completeness open.)
    after = {u.name: u for u in plan_reviews(store, "m").uncertainty}
    assert after[COVERAGE].n_pending == 0 and after[COVERAGE].sd == 0
    assert after[COVERAGE].low == after[COVERAGE].value == after[COVERAGE].high


async def test_the_review_order_is_the_same_whatever_order_the_escalations_were_stored_in(store, tmp_path):
    """Ties (many escalations move the figures by the same amount) are broken by the question's place in the run,
    then by the order its checks were made, never by which question happened to finish first."""
    await run(store, tmp_path)
    pending = store.pending_escalations("m")
    ordered = budget_order(store, "m", pending)
    assert budget_order(store, "m", pending[::-1]) == ordered
    assert review_queue(store, "m") == ordered
    totals = {s.escalation.check_id: s.total for s in plan_reviews(store, "m").swings}
    assert len(set(totals.values())) < len(totals)  # there are ties to break
    place = {sample_id: i for i, (sample_id, _) in enumerate(store.sample_questions("m"))}
    checks = {c.id: c for c in store.checks_for("m")}
    for before, after in zip(ordered, ordered[1:], strict=False):
        if totals[before.check_id] == totals[after.check_id]:
            assert place[checks[before.check_id].sample_id] <= place[checks[after.check_id].sample_id]
