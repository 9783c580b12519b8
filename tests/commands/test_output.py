"""Tables every command prints: nothing a person needs to read is cut at a narrow terminal."""

from __future__ import annotations

from rich.table import Table

from ragcourt.commands.output import console, print_table


def test_a_table_too_wide_for_the_console_keeps_names_whole(monkeypatch) -> None:
    """Narrower than even the wrapped table: headers and multi-word values wrap, then the table runs past the
    console (the terminal wraps the lines) rather than cutting a name or a number."""
    monkeypatch.setattr(console, "_width", 40)
    rows = [["1", "a_rather_long_system_name_k1", "1509.7", "[1506, 1513]"],
            ["2", "a_rather_long_system_name_k5", "1507.0", "n/a (no per-question outcomes)"]]
    with console.capture() as captured:
        print_table(Table(), ["#", "system", "Elo", "95% CI"], rows)
    text = captured.get()
    assert "…" not in text and "a_rather_long_system_name_k1" in text and "a_rather_long_system_name_k5" in text
    assert "[1506," in text and "1513]" in text and "per-question" in text



def test_frames_and_ids_print_whole_at_80_columns(monkeypatch) -> None:
    import pandas as pd

    from ragcourt.commands.output import print_frame

    monkeypatch.setattr(console, "_width", 80)
    frame = pd.DataFrame({"sample_id": ["5a8c4c625542995e66a475a1"], "why": ["element list changed (edited by a "
                          "person): 1 -> 2 elements"], "share": [0.5], "note": [None], "[red]x": ["[bold]y"]})
    with console.capture() as captured:
        print_frame("rows [of] a frame", frame)
    text = captured.get()
    assert "5a8c4c625542995e66a475a1" in text and "…" not in text
    assert "0.500" in text and "n/a" in text and "[red]x" in text and "[bold]y" in text and "[of]" in text


def test_the_unscored_by_judge_line_claims_other_judges_only_where_one_scored() -> None:
    """Issue 20, item 9: "the other judges decided those checks" was printed for a lone judge whose every
    verdict was unscored. Another judge is credited only when some other judge scored."""
    from ragcourt.analysis.summary import RunSummary
    from ragcourt.commands.output import unscored_by_judge_line

    def summary(unscored: tuple[tuple[str, int, int], ...], scored: tuple[str, ...]) -> RunSummary:
        return RunSummary(run_id="r", n_samples=1, n_failed=0, n_checks=6, n_verdicts=12, n_unscored=6,
                          n_escalated=0, n_pending=0, metrics=(), element_shares={}, failures=(),
                          unscored_by_judge=unscored, scored_judges=scored)

    lone = unscored_by_judge_line(summary((("a", 6, 6),), ()))
    assert lone == ("unscored verdicts by judge: a 6 of 6. No other judge scored any check, so nobody decided "
                    "those checks: they count in a metric's 'unscored checks' (checks no judge scored).")
    # a judge that scored some of its own checks is no other judge for them
    assert "nobody decided" in unscored_by_judge_line(summary((("a", 2, 6),), ("a",)))
    both_dead = unscored_by_judge_line(summary((("a", 6, 6), ("b", 6, 6)), ()))
    assert "nobody decided" in both_dead and "a 6 of 6, b 6 of 6" in both_dead
    helped = unscored_by_judge_line(summary((("a", 6, 6),), ("b",)))
    assert helped == ("unscored verdicts by judge: a 6 of 6. Where another judge scored such a check, it was "
                      "decided without them; a metric's 'unscored checks' counts the checks no judge scored.")
