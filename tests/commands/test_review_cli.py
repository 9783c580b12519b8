"""`ragcourt review RUN --budget N` reviews the N escalations that can move the headline figures most, in
that order; a typo is asked again instead of skipping the check; `summary` shows the remaining uncertainty."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from fakes.scripted_jury import SAMPLES, runner_for
from typer.testing import CliRunner

from ragcourt.cli import app
from ragcourt.commands.output import console
from ragcourt.runs.api import evaluate
from ragcourt.runs.workspace import Workspace
from ragcourt.schema import Chunk, Label, ReviewAction, Sample
from ragcourt.schema.config import EvalConfig, JudgeSpec, Reconcile
from ragcourt.stores.records import RecordStore
from ragcourt.systems import Precomputed
from ragcourt.validity.review_budget import REVIEW_ORDER, budget_order, review_queue

RUN = "budget"


def samples() -> list[Sample]:
    return [
        Sample(id=f"s{i}", question=f"Which city is the capital of country {i}?",
               reference_answer=f"City {i} is the capital. It lies on river {i}.",
               contexts=(Chunk(id=f"c{i}a", text=f"City {i} is the capital of country {i}."),
                         Chunk(id=f"c{i}b", text=f"River {i} flows through the old town and its harbour.")),
               answer=f"The capital is City {i}. The river is wide.")
        for i in range(3)
    ]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    config = EvalConfig(judges=(JudgeSpec(model="lexical"), JudgeSpec(model="semantic")))
    evaluate(samples(), Precomputed(), config=config, home=tmp_path, run_id=RUN)
    return tmp_path


def invoke(*args: str, home: Path, stdin: str = "") -> tuple[int, str]:
    result = CliRunner().invoke(app, [*args, "--home", str(home)], input=stdin)
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit), (
        repr(result.exception))
    return result.exit_code, " ".join(result.output.split())


def test_review_budget_decides_the_escalations_of_most_weight_first(home: Path) -> None:
    with RecordStore(home / "store.sqlite") as store:
        pending = store.pending_escalations(RUN)
        wanted = [r.check_id for r in budget_order(store, RUN, pending)][:2]
    assert len(pending) > 2
    code, out = invoke("review", RUN, "--budget", "2", home=home, stdin="y\ny\n")
    assert code == 0 and f"budget: 2 of {len(pending)} pending escalations" in out
    with RecordStore(home / "store.sqlite") as store:
        reviews = store.latest_reviews(RUN)
        left = store.pending_escalations(RUN)
    assert set(reviews) == set(wanted)
    assert all(r.action is ReviewAction.OVERRIDE and r.label is Label.YES for r in reviews.values())
    assert len(left) == len(pending) - 2


def test_a_typo_is_asked_again_and_the_next_reply_decides(home: Path) -> None:
    with RecordStore(home / "store.sqlite") as store:
        first = review_queue(store, RUN)[0]
    code, out = invoke("review", RUN, home=home, stdin="yy\nn\nq\n")
    assert code == 0 and "not understood: 'yy'" in out and "type y / n" in out
    with RecordStore(home / "store.sqlite") as store:
        reviews = store.latest_reviews(RUN)
    assert list(reviews) == [first.check_id]  # the typo did not skip the check: its next reply decided it
    assert reviews[first.check_id].action is ReviewAction.OVERRIDE and reviews[first.check_id].label is Label.NO


def test_summary_shows_the_remaining_uncertainty_and_the_jury(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(console, "width", 200)  # headings on one line: "pending escalations" is looked for whole
    code, out = invoke("summary", RUN, "--jury", home=home)
    assert code == 0
    assert "remaining uncertainty given the reviews so far" in out and "pending escalations" in out
    # the three escalations are claim-supported checks: only verifiableness may still move
    assert "verifiableness │ 1.000 │ 0.875 .. 1.000 │ 0.072 │ 3" in out
    assert "jury: estimated accuracy per judge" in out and "lexical" in out and "semantic" in out


def test_review_asks_in_the_desks_order_and_its_help_says_which(tmp_path: Path) -> None:
    """Without --budget it used to ask in the order the escalations were stored, while the desk (and the demo,
    which promises the desk's order) asked the ones that can move the figures most first."""
    async def evaluate_scripted(store: RecordStore) -> None:
        _ = [d async for d in runner_for(store, tmp_path, "m", Reconcile.MAJORITY).astream(SAMPLES)]

    with Workspace(tmp_path).open_store() as store:
        asyncio.run(evaluate_scripted(store))
        desk_first = review_queue(store, "m")[0].check_id
        assert store.pending_escalations("m")[0].check_id != desk_first  # the two orders differ here
    code, _ = invoke("review", "m", home=tmp_path, stdin="y\nq\n")
    with Workspace(tmp_path).open_store() as store:
        assert code == 0 and list(store.latest_reviews("m")) == [desk_first]
    shown = " ".join(CliRunner().invoke(app, ["review", "--help"], env={"COLUMNS": "250"}).output.split())
    assert f"They come in the review desk's order: {REVIEW_ORDER}." in shown and "arrival" not in shown
