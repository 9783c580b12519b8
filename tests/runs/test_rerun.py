"""A re-test's reviews (runs.rerun): the base run's decisions go wherever their check is unchanged, in re-run and
copied rows, are applied by the re-run row's reconciliation, and the rest are counted as no longer applying."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from ragcourt.judging import BaselineJudge, BaselineRule
from ragcourt.judging.decomposers import SentenceDecomposer
from ragcourt.nodes.state import EvalContext
from ragcourt.runs.rerun import CarriedReviews, arerun_changed
from ragcourt.runs.runner import Runner
from ragcourt.schema import (
    Check,
    CheckKind,
    Chunk,
    Condition,
    Label,
    ReconcileMethod,
    Review,
    ReviewAction,
    Sample,
)
from ragcourt.schema.config import EvalConfig, Method
from ragcourt.stores.records import RecordStore
from ragcourt.systems import Generation, Precomputed

CONFIG = EvalConfig(methods=(Method.ELEMENTS, Method.QCARE), top_k=2)


def sample(sid: str, reference: str) -> Sample:
    return Sample(id=sid, question=f"What about {sid}?", reference_answer=reference,
                  contexts=(Chunk(id=f"{sid}-c", text=f"{sid} fact one. {sid} fact two."),), answer=f"{sid} fact one.")


def context(store: RecordStore) -> EvalContext:
    return EvalContext(config=CONFIG, system=Precomputed(), judges=[BaselineJudge(BaselineRule.LEXICAL)],
                       decomposer=SentenceDecomposer(), store=store)


def decide(store: RecordStore, check: Check, label: Label, run_id: str = "base") -> Review:
    review = Review(run_id=run_id, check_id=check.id, reviewer="ana", action=ReviewAction.OVERRIDE, label=label)
    store.add_review(review)
    return review


def one(store: RecordStore, run_id: str, sample_id: str, kind: CheckKind, subject: str) -> Check:
    (found,) = [c for c in store.checks_for(run_id, sample_id) if c.kind is kind and c.subject_text == subject]
    return found


@pytest.fixture
async def store(tmp_path: Path):
    with RecordStore(tmp_path / "store.sqlite") as opened:
        base = [sample("s1", "s1 fact one."), sample("s2", "s2 fact one."), sample("s3", "s3 fact one.")]
        assert len([d async for d in Runner(context(opened), "base", tmp_path / "runs" / "base").astream(base)]) == 3
        yield opened


async def test_decisions_follow_unchanged_checks_and_the_others_are_counted(store: RecordStore, tmp_path: Path):
    copied = decide(store, one(store, "base", "s1", CheckKind.ELEMENT_IN_CONTEXT, "s1 fact one."), Label.NO)
    claim = one(store, "base", "s2", CheckKind.CLAIM_SUPPORTED, "s2 fact one.")  # the answer stays: so does the check
    store.add_review(Review(run_id="base", check_id=claim.id, reviewer="ana", action=ReviewAction.SKIP))
    kept = decide(store, claim, Label.NO)
    edited_away = decide(store, one(store, "base", "s2", CheckKind.ELEMENT_IN_CONTEXT, "s2 fact one."), Label.NO)
    left_out = decide(store, one(store, "base", "s3", CheckKind.ELEMENT_IN_CONTEXT, "s3 fact one."), Label.NO)

    edited = [sample("s1", "s1 fact one."), sample("s2", "s2 fact two.")]  # s2's element changed, s3 left out
    result = await arerun_changed(context(store), "base", edited, runs_home=tmp_path / "runs")
    new = result.run.run_id
    assert result.plan.changed_ids == ("s2",) and result.plan.dropped == ("s3",)
    assert set(result.reviews.carried) == {copied.check_id, kept.check_id}
    assert set(result.reviews.gone) == {edited_away.check_id, left_out.check_id}
    # the whole history came along (the skip before the decision), and nothing of the checks the new run lacks
    assert [(r.check_id, r.action, r.created_at) for r in store.get_reviews(new)] == [
        (r.check_id, r.action, r.created_at) for r in store.get_reviews("base")
        if r.check_id in {copied.check_id, kept.check_id}]
    # the re-run row's reconciliation applied the decision: the jury (lexical) found the claim supported
    assert {r.check_id: r for r in store.get_reconciled("base")}[kept.check_id].label is Label.YES
    decided = {r.check_id: r for r in store.get_reconciled(new)}[kept.check_id]
    assert (decided.method, decided.label) == (ReconcileMethod.HUMAN, Label.NO)
    assert store.get_diagnostics(new, "s2")[0].unsupported_claims == ("s2 fact one.",)
    assert store.get_diagnostics("base", "s2")[0].unsupported_claims == ()

    # the same command resumes: the same counts, no review twice, and a decision made in the new run stays latest
    later = decide(store, claim, Label.YES, run_id=new)
    again = await arerun_changed(context(store), "base", edited, runs_home=tmp_path / "runs")
    assert again.run.run_id == new and again.reviews == result.reviews
    assert len(store.get_reviews(new)) == 4 and store.latest_reviews(new)[claim.id] == later


@dataclass
class DownGenerator(Precomputed):
    async def generate(self, sample: Sample, chunks: Sequence[Chunk], condition: Condition) -> Generation:
        raise RuntimeError(f"generator down for {sample.id}")


async def test_decisions_on_a_sample_that_failed_again_wait_for_it_and_settle_when_it_is_evaluated(
        store: RecordStore, tmp_path: Path):
    claim = decide(store, one(store, "base", "s2", CheckKind.CLAIM_SUPPORTED, "s2 fact one."), Label.NO)
    element = decide(store, one(store, "base", "s2", CheckKind.ELEMENT_IN_CONTEXT, "s2 fact one."), Label.NO)
    edited = [sample("s1", "s1 fact one."), sample("s2", "s2 fact two.")]
    broken = context(store)
    broken.system = DownGenerator()
    failed = await arerun_changed(broken, "base", edited, runs_home=tmp_path / "runs")
    assert [d.error for d in failed.rerun] == ["RuntimeError: generator down for s2"]
    assert failed.reviews == CarriedReviews(carried=(), gone=(), waiting=(claim.check_id, element.check_id))
    assert {r.check_id for r in store.get_reviews(failed.run.run_id)} == {claim.check_id, element.check_id}

    again = await arerun_changed(context(store), "base", edited, runs_home=tmp_path / "runs")
    assert again.run.run_id == failed.run.run_id
    assert again.reviews == CarriedReviews(carried=(claim.check_id,), gone=(element.check_id,))
    assert [r.check_id for r in store.get_reviews(again.run.run_id)] == [claim.check_id]
