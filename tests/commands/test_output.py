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


def test_llm_usage_prints_as_a_table_with_a_total(monkeypatch) -> None:
    """Issue 23, item 7: usage was printed as a Python list of dicts."""
    from ragcourt.commands.output import print_usage
    from ragcourt.llm.usage import UsageMeter
    from ragcourt.schema import TokenUsage

    meter = UsageMeter(prices={"openai:big": (0.5, 1.5)})
    meter.record("openai:big", "judge", TokenUsage(prompt_tokens=12_000, completion_tokens=2_000, calls=30,
                                                   cached_calls=4))
    meter.record("openai:small", "answerer", TokenUsage(prompt_tokens=800, completion_tokens=200, calls=10))
    monkeypatch.setattr(console, "_width", 140)
    with console.capture() as captured:
        print_usage(meter.rows())
    lines = [" ".join(line.replace("│", " ").split()) for line in captured.get().splitlines()]
    assert "{" not in captured.get() and "model_id" not in captured.get()
    # 12,000 x 0.5 / 1000 + 2,000 x 1.5 / 1000 = 9.0 USD; the small model has no price, so no total cost
    assert "openai:big judge 30 4 12,000 2,000 9.0000" in lines
    assert "openai:small answerer 10 0 800 200 n/a (no price)" in lines
    assert "total 40 4 12,800 2,200 n/a (a model has no price)" in lines
    with console.capture() as nothing:
        print_usage([])
    assert nothing.get() == ""


def test_piped_lines_are_not_wrapped_at_80_columns() -> None:
    """Issue 23, item 7: a pipe is 80 columns to rich, and every per-question line of a logged run broke in
    two. Piped, a printed line stays one line; a table still fits the width."""
    import io

    from ragcourt.commands.output import PipeFriendlyConsole

    out = io.StringIO()
    piped = PipeFriendlyConsole(file=out, width=80)
    line = "✓ 5a8c4c625542  c_prec=1.00  completeness=0.50  verifiableness=1.00  element_coverage=0.67  unscored=0"
    piped.print(line)
    assert out.getvalue() == line + "\n"
    terminal_out = io.StringIO()
    terminal = PipeFriendlyConsole(file=terminal_out, width=80, force_terminal=True, color_system=None)
    terminal.print(line)
    assert len(terminal_out.getvalue().splitlines()) == 2  # a terminal still wraps at its width
    table_out = io.StringIO()
    PipeFriendlyConsole(file=table_out, width=80).print(_wide_table())
    assert max(len(line) for line in table_out.getvalue().splitlines()) <= 80


def _wide_table() -> Table:
    table = Table(title="a title long enough to wrap at eighty columns when the table is printed to a pipe, twice")
    table.add_column("why")
    table.add_row("a reason long enough to wrap at eighty columns when the table is printed to a pipe, twice over")
    return table


def test_a_question_line_shows_both_sides_of_element_coverage_in_order() -> None:
    from ragcourt.commands.output import question_metrics
    from ragcourt.schema import MetricValue, SampleDiagnostics

    metrics = (MetricValue(name="element_answer_coverage", value=0.5, n=2),
               MetricValue(name="c_prec@5", value=1.0, n=5), MetricValue(name="element_coverage", value=None, n=0, na_reason="the sample has no elements"),
               MetricValue(name="soft_relevance", value=0.3, n=1))  # not a headline: not shown
    line = question_metrics(SampleDiagnostics(run_id="r", sample_id="s", question="q", metrics=metrics))
    assert line == "c_prec=1.00  element_coverage=n/a  element_answer_coverage=0.50"
