"""`ragcourt review RUN`: decide a run's pending escalations in the terminal; decisions override the jury."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from ragcourt.analysis.summary import summarize
from ragcourt.commands.output import Home, console, existing_store, fail, print_summary
from ragcourt.runs.rescore import rescore_run
from ragcourt.runs.workspace import DEFAULT_HOME, Workspace
from ragcourt.schema import CheckKind, Label, Reconciled, Review, ReviewAction
from ragcourt.stores.records import RecordStore
from ragcourt.validity.review_budget import REVIEW_ORDER, review_queue


def review(
    run_id: str,
    reviewer: Annotated[str, typer.Option(help="your name, stored with every decision")] = "reviewer",
    kind: Annotated[list[CheckKind] | None, typer.Option(
        help="repeatable: only escalations of these check kinds (e.g. element_in_answer)")] = None,
    budget: Annotated[int | None, typer.Option(
        min=1, help="review only the first N escalations of the review order; default: every one")] = None,
    home: Home = DEFAULT_HOME,
) -> None:
    """Walk the run's pending escalations in the terminal; decisions override the jury.

    They come in the review desk's order: {order}.

    A reply that is not a decision (a typo) is asked again; q or the end of input stops."""
    store = existing_store(home)
    if store.get_run(run_id) is None:
        fail(f"no run '{run_id}' in {Workspace(home).store_path}")
    pending = [r for r in review_queue(store, run_id) if not kind or r.kind in kind]
    if not pending:
        console.print("no pending escalations" + (f" of kind {', '.join(kind)}" if kind else ""))
        return
    if budget is not None:
        console.print(f"budget: {min(budget, len(pending))} of {len(pending)} pending escalations, those that can "
                      "move the headline figures most first")
        pending = pending[:budget]
    console.print(f"{len(pending)} escalated checks awaiting review. Keys: y/n (binary), A/B/T (pairwise), "
                  "0-10 (scores), a = accept the provisional decision, s = skip, q = quit")
    for number, rec in enumerate(pending, start=1):
        if not _review_one(store, run_id, rec, reviewer, number, len(pending)):
            break
    rescore_run(store, run_id, Workspace(home).run_dir(run_id))
    print_summary(summarize(store, run_id))


def _review_one(store: RecordStore, run_id: str, rec: Reconciled, reviewer: str, number: int, total: int) -> bool:
    check = store.get_checks([rec.check_id])[0]
    console.rule(escape(f"{number}/{total}  {check.kind}  sample {check.sample_id}  ({rec.escalation_reason})"))
    console.print(f"[bold]question:[/bold] {escape(check.question)}")
    console.print(f"[bold]subject:[/bold] {escape(check.subject_text)}")
    console.print(f"[bold]evidence ({escape(check.target_id)}):[/bold] {escape(check.target_text[:1500])}")
    for verdict in store.get_verdicts([check.id]):
        decision = (verdict.label if verdict.label is not None else verdict.score if verdict.score is not None
                    else f"unscored ({verdict.unscored_reason})")
        console.print(f"  judge {escape(verdict.judge_id)}: {decision}  {escape(verdict.rationale)}")
    while True:
        try:
            answer = typer.prompt("decision", default="s").strip()
        except typer.Abort:  # end of input (a piped file ran out) or Ctrl-D: stop here, as q does
            console.print()
            return False
        if answer == "q":
            return False
        action, label, score = _parse_decision(answer, rec, check.kind)
        if action is not None:
            break
        # a typo must not cost the check its turn (it used to be skipped): ask again, saying what fits
        console.print(f"[yellow]not understood: {escape(answer)!r}[/yellow]; {_keys(rec, check.kind)}")
    store.add_review(Review(run_id=run_id, check_id=check.id, reviewer=reviewer, action=action, label=label,
                            score=score))
    return True


def _keys(rec: Reconciled, kind: CheckKind) -> str:
    """The replies this check takes, for the re-ask after a typo."""
    decisions = ("y / n" if kind.is_binary else "A / B / T" if kind is CheckKind.PAIRWISE else "0-10")
    accept = ", a = accept the provisional decision" if rec.decided else ""
    return f"type {decisions}{accept}, s = skip, q = quit"


def _parse_decision(answer: str, rec: Reconciled,
                    kind: CheckKind) -> tuple[ReviewAction | None, Label | None, float | None]:
    if answer == "s":
        return ReviewAction.SKIP, None, None
    if answer == "a":
        if rec.label is None and rec.score is None:
            return None, None, None
        return ReviewAction.ACCEPT, rec.label, rec.score
    labels = {"y": Label.YES, "n": Label.NO, "A": Label.A, "B": Label.B, "T": Label.TIE}
    if answer in labels and labels[answer] in kind.labels:  # the desk's rule: a decision fits the check
        return ReviewAction.OVERRIDE, labels[answer], None
    if kind is CheckKind.DIMENSION_SCORE and answer.isdigit() and 0 <= int(answer) <= 10:
        return ReviewAction.OVERRIDE, None, float(answer)
    return None, None, None


def register(app: typer.Typer) -> None:
    assert review.__doc__ is not None
    # the order is stated once, where it is decided (validity.review_budget)
    app.command("review", help=review.__doc__.format(order=REVIEW_ORDER))(review)
