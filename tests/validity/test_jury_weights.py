"""`reconcile: weighted` end to end: a run of a scripted jury of known accuracies (fakes.scripted_jury), its
estimates, its decisions, the reviews clamped at a re-score, and a majority run of the same jury untouched."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes.scripted_jury import SAMPLES, majority, runner_for, truth

from ragcourt.runs.rescore import arescore_run, aweigh_run
from ragcourt.schema import CheckKind, ReconcileMethod, Review, ReviewAction
from ragcourt.schema.config import Reconcile
from ragcourt.stores.records import RecordStore
from ragcourt.validity.jury_weights import MIN_CHECKS, fit_jury


@pytest.fixture
def store(tmp_path: Path):
    with RecordStore(tmp_path / "store.sqlite") as opened:
        yield opened


async def test_a_weighted_run_decides_by_the_jurys_estimates(store, tmp_path):
    runner = runner_for(store, tmp_path, "w", Reconcile.WEIGHTED)
    first = [d async for d in runner.astream(SAMPLES)]
    assert {r.method for r in store.get_reconciled("w") if r.kind.is_binary} <= {ReconcileMethod.MAJORITY}
    final = await aweigh_run(runner, SAMPLES)
    assert {d.sample_id for d in final} == {d.sample_id for d in first}

    weights = fit_jury(store, "w")
    fitted = [k for k in weights.kinds if k.fit is not None]
    claim_supported = next(k for k in fitted if k.kind is CheckKind.CLAIM_SUPPORTED)
    assert claim_supported.n_checks == 12 * 3 * 4  # three claims x four chunks per sample
    strong, weak = claim_supported.fit.judge("strong"), claim_supported.fit.judge("weak")
    assert strong.accuracy > weak.accuracy and strong.interval[0] > weak.interval[1]
    assert all(k.n_checks < MIN_CHECKS or k.fit is not None for k in weights.kinds if k.n_checks)

    checks = {c.id: c for c in store.checks_for("w")}
    decided = [r for r in store.get_reconciled("w") if r.check_id in weights.posteriors]
    assert decided and all(r.method is ReconcileMethod.WEIGHTED for r in decided)
    right_weighted = sum(r.label is truth(checks[r.check_id]) for r in decided)
    right_majority = sum(majority(store, r.check_id) is truth(checks[r.check_id]) for r in decided)
    assert right_weighted > right_majority
    changed = sum(r.label is not majority(store, r.check_id) for r in decided)
    assert changed == weights.n_changed > 0
    for r in decided:  # the posterior is the record's probabilities; a low one escalates
        p = r.probabilities or {}
        assert max(p.values()) == pytest.approx(max(weights.posteriors[r.check_id].values()))
        if max(p.values()) < 0.8:
            assert r.escalated and "posterior" in (r.escalation_reason or "")


async def test_a_rescore_clamps_the_reviews_and_estimates_again(store, tmp_path):
    runner = runner_for(store, tmp_path, "w", Reconcile.WEIGHTED)
    _ = [d async for d in runner.astream(SAMPLES)]
    await aweigh_run(runner, SAMPLES)
    before = fit_jury(store, "w")
    reviewed = [r for r in store.pending_escalations("w") if r.kind is CheckKind.CLAIM_SUPPORTED][:10]
    assert reviewed
    checks = {c.id: c for c in store.checks_for("w")}
    for rec in reviewed:
        store.add_review(Review(run_id="w", check_id=rec.check_id, reviewer="ann", action=ReviewAction.OVERRIDE,
                                label=truth(checks[rec.check_id])))
    await arescore_run(store, "w", tmp_path / "runs" / "w")
    after = fit_jury(store, "w")
    kind = next(k for k in after.kinds if k.kind is CheckKind.CLAIM_SUPPORTED)
    assert kind.n_reviewed == len(reviewed)
    for rec in reviewed:
        assert after.posteriors[rec.check_id][truth(checks[rec.check_id])] == 1.0
    assert after.posteriors != before.posteriors
    stored = {r.check_id: r for r in store.get_reconciled("w")}
    assert all(stored[rec.check_id].method is ReconcileMethod.HUMAN for rec in reviewed)


async def test_a_majority_run_of_the_same_jury_is_decided_by_the_vote(store, tmp_path):
    runner = runner_for(store, tmp_path, "m", Reconcile.MAJORITY)
    _ = [d async for d in runner.astream(SAMPLES)]
    binary = [r for r in store.get_reconciled("m") if r.kind.is_binary]
    assert binary and {r.method for r in binary} == {ReconcileMethod.MAJORITY}
    assert all(r.label is majority(store, r.check_id) for r in binary)
    # the rescore of a majority run fits no jury and changes nothing
    before = {r.check_id: r.model_dump(exclude={"created_at"}) for r in binary}
    await arescore_run(store, "m", tmp_path / "runs" / "m")
    after = {r.check_id: r.model_dump(exclude={"created_at"}) for r in store.get_reconciled("m") if r.kind.is_binary}
    assert after == before
