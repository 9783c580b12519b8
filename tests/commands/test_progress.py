"""Progress of long commands (commands.progress): counts, rate and ETA; a rich bar on a terminal, plain
periodic lines when piped or under CI; work from the store counts as done but not in the rate."""

from __future__ import annotations

import io

from rich.console import Console

from ragcourt.commands.progress import (
    ProgressStyle,
    duration_text,
    progress_style,
    rate_text,
    track_progress,
    under_ci,
)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def piped() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=200), out


def test_piped_progress_is_a_plain_line_each_tenth_and_one_at_the_end() -> None:
    console, out = piped()
    clock = Clock()
    with track_progress("evaluating", total=20, console=console, clock=clock) as progress:
        for _ in range(20):
            clock.now += 0.5  # 2 per second
            progress.advance()
    lines = out.getvalue().splitlines()
    # a line at each further tenth (every 2 of 20), none at 20/20: the closing line says it
    assert lines[0] == "evaluating: 2/20 (10%), 2.0/s, ETA 0:09"
    assert lines[4] == "evaluating: 10/20 (50%), 2.0/s, ETA 0:05"
    assert len(lines) == 10 and lines[-1] == "evaluating: 20/20 in 0:10, 2.0/s"


def test_a_slow_piped_run_prints_every_interval_even_within_a_tenth() -> None:
    console, out = piped()
    clock = Clock()
    with track_progress("indexing", total=1000, console=console, clock=clock, interval_s=10) as progress:
        clock.now += 4
        progress.advance(4)  # 0.4 %, 4 s: nothing yet
        assert out.getvalue() == ""
        clock.now += 6
        progress.advance(6)  # 10 s since the start: a line
    assert out.getvalue().splitlines()[0] == "indexing: 10/1000 (1%), 1.0/s, ETA 16:30"


def test_work_from_the_store_counts_as_done_but_not_in_the_rate() -> None:
    console, out = piped()
    clock = Clock()
    with track_progress("evaluating", total=10, console=console, clock=clock) as progress:
        progress.advance(5, from_store=True)  # a resumed run's finished samples, at once
        assert progress.rate is None and progress.eta is None
        clock.now += 10
        progress.advance()  # one new sample in 10 s: 0.1/s, 4 left -> 40 s
        assert progress.rate == 0.1 and progress.eta == 40.0
    lines = out.getvalue().splitlines()
    assert lines[-2] == "evaluating: 6/10 (60%), 5 from the store, 0.1/s, ETA 0:40"
    assert lines[-1] == "evaluating: 6/10 (5 from the store) in 0:10, 0.1/s"


def test_a_total_learned_later_and_slow_rates_read_per_minute() -> None:
    console, out = piped()
    clock = Clock()
    with track_progress("tournament matches", total=None, console=console, clock=clock) as progress:
        progress.set_total(3)
        clock.now += 120
        progress.advance()
    assert out.getvalue().splitlines() == ["tournament matches: 1/3 (33%), 0.5/min, ETA 4:00",
                                           "tournament matches: 1/3 in 2:00, 0.5/min"]
    assert rate_text(None) == "-/s" and duration_text(3723) == "1:02:03" and duration_text(None) == "-"


def test_a_terminal_gets_the_rich_bar_unless_ci_says_otherwise(monkeypatch) -> None:
    terminal = Console(file=io.StringIO(), force_terminal=True, width=120)
    monkeypatch.delenv("CI", raising=False)
    assert progress_style(terminal) is ProgressStyle.RICH
    assert progress_style(Console(file=io.StringIO())) is ProgressStyle.PLAIN  # a pipe
    monkeypatch.setenv("CI", "true")
    assert progress_style(terminal) is ProgressStyle.PLAIN
    assert not under_ci({"CI": "false"}) and not under_ci({"CI": "0"}) and not under_ci({})
    assert under_ci({"CI": "1"}) and under_ci({"CI": "gitlab"})


def test_the_rich_bar_shows_counts_rate_and_eta_and_lines_above_it() -> None:
    out = io.StringIO()
    terminal = Console(file=out, force_terminal=True, width=120, color_system=None)
    clock = Clock()
    with track_progress("evaluating", total=4, console=terminal, style=ProgressStyle.RICH, clock=clock) as progress:
        clock.now += 2
        progress.print("✓ q1 done")
        progress.advance()
        bar = progress._bar
        assert bar is not None
        (task,) = bar.tasks
        assert (task.completed, task.total, task.fields["stats"]) == (1, 4, "0.5/s, ETA 0:06")
    text = out.getvalue()
    assert "✓ q1 done" in text and "evaluating: 1/4 in 0:02, 0.5/s" in text


def test_a_block_that_raises_prints_no_closing_count() -> None:
    """A refused run says why itself: no "0/2 in 0:00" under its error."""
    console, out = piped()
    try:
        with track_progress("evaluating", total=2, console=console):
            raise ValueError("refused")
    except ValueError:
        pass
    assert out.getvalue() == ""


def test_run_prints_its_id_first_then_plain_progress_and_a_mapped_parquet_dataset_works(tmp_path, monkeypatch) -> None:
    """`ragcourt run` piped: the run id with the commands that follow it, each question on one line, the closing
    count; the dataset a Parquet file with the user's own column names (--map)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from typer.testing import CliRunner

    from ragcourt.cli import app

    monkeypatch.chdir(tmp_path)
    pq.write_table(pa.table({"qid": ["q1", "q2"], "query": ["Who founded Acme?", "How long is the warranty?"],
                             "gt": ["Ada Lovelace founded Acme.", "Two years."],
                             "passages": [["Ada Lovelace founded Acme."], ["The warranty is two years."]],
                             "reply": ["Ada Lovelace founded Acme.", "Two years."]}), "mine.parquet")
    result = CliRunner().invoke(app, ["run", "mine.parquet", "--system", "precomputed", "--home", "home",
                                      "--map", "id=qid,question=query,reference_answer=gt",
                                      "--map", "contexts=passages,answer=reply"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    (run_id,) = {line.split()[1] for line in lines if line.startswith("run ") and "follow it with" in line}
    first = next(i for i, line in enumerate(lines) if "follow it with" in line)
    assert lines[first] == (f"run {run_id} (home/runs/{run_id}): follow it with ragcourt watch {run_id} --home home "
                            f"or ragcourt serve {run_id} --home home")
    answered = [i for i, line in enumerate(lines) if line.startswith("✓ q")]
    assert len(answered) == 2 and first < answered[0]
    closing = next(line for line in lines if line.startswith("evaluating (questions): 2/2 in "))
    assert lines.index(closing) > answered[-1]


def test_planned_matches_are_the_tournaments_own_count() -> None:
    from ragcourt.metrics.dice import TournamentMode
    from ragcourt.runs.ranking import RankSettings, planned_matches

    # Swiss, 4 systems: ceil(log2 4) + 1 = 3 rounds of 2 matches; round robin: every pair once
    assert planned_matches(4, RankSettings()) == 6
    assert planned_matches(5, RankSettings(mode=TournamentMode.ROUND_ROBIN)) == 10
    assert planned_matches(4, RankSettings(mode=TournamentMode.ROUND_ROBIN, rounds=1)) == 2


def test_rank_shows_the_matches_played_of_those_planned(tmp_path, monkeypatch) -> None:
    import json

    from typer.testing import CliRunner

    from ragcourt.cli import app

    monkeypatch.chdir(tmp_path)
    answers = {"a": "Ada Lovelace founded Acme.", "b": "Acme was founded by Ada.", "c": "Nobody knows."}
    for name, text in answers.items():
        (tmp_path / f"{name}.jsonl").write_text(json.dumps({"id": "q1", "question": "Who founded Acme?",
                                                            "reference_answer": "Ada Lovelace founded Acme.",
                                                            "answer": text}) + "\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["rank", "a.jsonl", "b.jsonl", "c.jsonl", "--mode", "round_robin",
                                      "--bootstrap", "10", "--home", "home"])
    assert result.exit_code == 0, result.output
    assert any(line.startswith("tournament matches: 3/3 in ") for line in result.output.splitlines())
