"""Through the CLI: run, review, edit a sample, `rerun --changed`. A person's decision carries into the new run
wherever its check (its id is its content) is unchanged, in the re-run row as in the copied ones; decisions whose
check the edit removed are counted as no longer applying; nobody is asked a carried question again, and the re-run
row's figures are those a fresh run of the edited sample gets after the same decisions in `ragcourt review`."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from ragcourt.cli import app
from ragcourt.schema import Label, ReconcileMethod, ReviewAction
from ragcourt.stores.records import RecordStore

# Lexical and semantic judges split on the loosely grounded claims of each answer: three escalations a sample.
ANSWER = "The capital is City {i}. The river is wide. The town is historic. The harbour is busy. The old town flows."
EDITED = "The capital is City 0. The river is wide. The town is historic. The harbour is quiet. The old town flows."
DECIDED_ON_S0 = {"The river is wide.": "y", "The town is historic.": "n", "The harbour is busy.": "y"}


def rows(answer_of_s0: str | None = None) -> list[dict]:
    out = [{"id": f"s{i}", "question": f"Which city is the capital of country {i}?",
            "reference_answer": f"City {i} is the capital. It lies on river {i}.",
            "contexts": [f"City {i} is the capital of country {i}.",
                         f"River {i} flows through the old town and its harbour."],
            "answer": ANSWER.format(i=i)} for i in range(3)]
    if answer_of_s0:
        out[0]["answer"] = answer_of_s0
    return out


def write(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def cli(*args: str, stdin: str = "") -> str:
    result = CliRunner().invoke(app, list(args), input=stdin)
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


def pending(home: Path, run_id: str) -> list[tuple[str, str, str]]:
    """(check id, sample, claim) of the run's escalations nobody has decided, in the order `review` asks them."""
    with RecordStore(home / "store.sqlite") as store:
        found = [store.get_checks([r.check_id])[0] for r in store.pending_escalations(run_id)]
    return [(c.id, c.sample_id, c.subject_text) for c in found]


def review(home: Path, run_id: str, replies: dict[str, str]) -> None:
    """`ragcourt review RUN`, replying to the pending checks in `replies` (by id); the others are skipped."""
    stdin = "".join(replies.get(check_id, "s") + "\n" for check_id, _, _ in pending(home, run_id))
    cli("review", run_id, "--reviewer", "ana", "--home", str(home), stdin=stdin)


def test_rerun_changed_carries_every_unchanged_decision_and_counts_the_rest(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    config = tmp_path / "jury.yaml"
    config.write_text("judges:\n  - model: lexical\n  - model: semantic\n")
    common = ("--system", "precomputed", "--config", str(config), "--home", str(home))
    cli("run", str(write(tmp_path / "data.jsonl", rows())), "--run-id", "base", *common)
    asked = pending(home, "base")
    on_s0 = {claim: check_id for check_id, sample, claim in asked if sample == "s0"}
    assert sorted(on_s0) == sorted(DECIDED_ON_S0)
    decisions = {on_s0[claim]: reply for claim, reply in DECIDED_ON_S0.items()}
    decisions |= {check_id: "n" for check_id, sample, claim in asked if (sample, claim) == ("s1", "The river is wide.")}
    review(home, "base", decisions)
    assert len(decisions) == 4 and len(pending(home, "base")) == len(asked) - 4

    edited = write(tmp_path / "edited.jsonl", rows(EDITED))  # s0's fourth claim is another one now
    out = cli("rerun", "--changed", "base", "--dataset", str(edited), "--home", str(home))
    assert "1 rows re-run, 2 rows copied from the base run" in out
    assert ("review decisions: 3 carried from the base run (their checks are unchanged: nobody is asked again), "
            "1 no longer applies (the check is not in the new run)") in out

    with RecordStore(home / "store.sqlite") as store:
        (new,) = [r.run_id for r in store.list_runs() if r.base_run == "base"]
        checks = {c.id: c for c in store.checks_for(new)}
        reconciled = {r.check_id: r for r in store.get_reconciled(new)}
        reviews = store.latest_reviews(new)
        rerun_s0 = store.get_diagnostics(new, "s0")[0]
    gone = on_s0["The harbour is busy."]
    carried = {check_id: reply for check_id, reply in decisions.items() if check_id != gone}
    assert gone not in checks and {c.sample_id for c in map(checks.get, carried)} == {"s0", "s1"}
    # in the re-run row and the copied one alike: the person's label decides, and the check is not pending
    for check_id, reply in carried.items():
        decided = reconciled[check_id]
        assert (decided.method, decided.label, decided.provisional) == (
            ReconcileMethod.HUMAN, Label.YES if reply == "y" else Label.NO, False), checks[check_id]
    # the gone check's review did not come along; skips did, as the history they are (they decide nothing)
    assert gone not in reviews and {c for c, r in reviews.items() if r.action is not ReviewAction.SKIP} == set(carried)
    still_asked = pending(home, new)
    assert not {check_id for check_id, _, _ in still_asked} & set(decisions)
    assert [claim for _, sample, claim in still_asked if sample == "s0"] == ["The harbour is quiet."]

    # a fresh run of the edited data, reviewed the same way, gives s0 the figures the re-run row has
    cli("run", str(edited), "--run-id", "fresh", *common)
    review(home, "fresh", carried)
    with RecordStore(home / "store.sqlite") as store:
        fresh_s0 = store.get_diagnostics("fresh", "s0")[0]
        jury_only = store.get_diagnostics(new, "s2")[0]  # s2: the same claims, nobody decided them
    assert [(m.name, m.value) for m in rerun_s0.metrics] == [(m.name, m.value) for m in fresh_s0.metrics]
    assert rerun_s0.metric("verifiableness").value != jury_only.metric("verifiableness").value
