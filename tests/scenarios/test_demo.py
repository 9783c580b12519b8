"""The README's demo, for real: bundled HotpotQA indexed with the offline MiniLM into an embedded chromadb, the
reference RAG evaluated at top_k 5 and top_k 1 by a lexical + semantic jury; the printed gap shares and
difference are those of the stored runs; the store reads back into pandas; a repeat asks nothing again."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from ragcourt.analysis.noise import compare_frame
from ragcourt.analysis.qcare_tables import gap_share_frame
from ragcourt.cli import app
from ragcourt.commands.output import console
from ragcourt.runs.workspace import Workspace
from ragcourt.schema import Review, SampleDiagnostics, Verdict
from ragcourt.validity.review_budget import review_queue


def _share(value) -> str:
    return "n/a" if value is None else f"{float(value):.0%}"


@pytest.fixture
def wide_console() -> Iterator[None]:
    """rich reads COLUMNS once, when the console is made (on the first import of commands.output, which may be
    another test's): the tables below are read cell by cell, so they get a known width, then the old one back."""
    before = console.width
    console.width = 160
    yield
    console.width = before


@pytest.mark.slow
def test_demo_compares_two_configurations_and_leaves_a_readable_store(tmp_path, wide_console):
    result = CliRunner().invoke(app, ["demo", "--home", str(tmp_path), "--questions", "3"], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    out = result.output
    assert "headline figures" in out and "where quality is lost" in out and "noise band" in out
    assert re.search(r"A top_k=5: run demo-\w+, 3 questions \(3 evaluated, 0 from the store\)", out)
    assert re.search(r"B top_k=1: run demo-\w+, 3 questions \(3 evaluated, 0 from the store\)", out)
    headline = out.split("headline figures")[1].split("not headline figures")[0]
    assert "element_coverage" in headline and "answer_f1" in headline and "c_prec@5 / c_prec@1" in headline
    assert "soft_correctness" not in headline  # 0 by construction for the extractive answerer: said why below
    assert "soft_correctness and exact_match: 0 by construction" in out

    store = Workspace(tmp_path).open_store()
    try:
        runs = {r.config["top_k"]: r.run_id for r in store.list_runs()}
        assert set(runs) == {5, 1}
        diagnostics = {k: store.get_diagnostics(run_id) for k, run_id in runs.items()}
        for k, run_id in runs.items():
            assert len(diagnostics[k]) == 3
            verdicts = store.to_frame(Verdict, run_id=run_id)
            assert set(verdicts["judge_id"]) == {"lexical", "semantic+e5+minilm"}
            assert store.to_frame(Review, run_id=run_id).empty  # nobody has reviewed yet; the frame has a shape
            assert len(store.to_frame(SampleDiagnostics, run_id=run_id)) == 3
        pending = {k: len(store.pending_escalations(run_id)) for k, run_id in runs.items()}
        checks = {k: {c.id: c for c in store.checks_for(run_id)} for k, run_id in runs.items()}
        desk_first = {k: [(checks[k][r.check_id].kind, checks[k][r.check_id].sample_id[:12])
                          for r in review_queue(store, run_id)[:3]] for k, run_id in runs.items()}
    finally:
        store.close()
    # the printed gap shares are the stored runs' own
    for name, k in (("A top_k=5", 5), ("B top_k=1", 1)):
        frame = gap_share_frame(diagnostics[k]).set_index("status")
        shares = [_share(frame.loc[s, "gap_share"]) for s in ("retrieval_gap", "generation_gap", "document_gap")]
        row = next(line for line in out.splitlines() if line.startswith(f"│ {name}"))
        assert [c.strip() for c in row.strip("│").split("│")][1:4] == shares
        assert f"{name}: {pending[k]} checks await review" in out
        # the escalations it lists are the first the review desk asks (one order, the same on every run)
        listed = out.split(f"{name}: {pending[k]} checks await review")[1].split("await review")[0]
        assert re.findall(r"\((\w+), question (\w+)\)", listed)[:3] == desk_first[k]
    # and the difference with its band is compare_frame's (paired band)
    compared = compare_frame(diagnostics[5], diagnostics[1]).set_index("metric")
    coverage = next(line for line in out.splitlines() if line.startswith("│ element_coverage"))
    difference = compared.loc["element_coverage", "difference"]
    assert (f"{difference:+.3f}" if difference is not None else "n/a") in coverage

    again = CliRunner().invoke(app, ["demo", "--home", str(tmp_path), "--questions", "3"], env={"COLUMNS": "160"})
    assert again.exit_code == 0, again.output
    assert "(0.0s spent indexing)" in again.output  # the collection reopens in a new client
    assert again.output.count("(0 evaluated, 3 from the store)") == 2  # nothing is asked again
