"""commands/demo_story: the demo explains the figures of the answerer that actually ran. The extractive
baseline's soft correctness is 0 by construction; a language model's is not, and the demo used to say it was."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ragcourt.commands.demo_story import DemoRun, print_headline
from ragcourt.commands.output import console
from ragcourt.metrics.values import MetricName
from ragcourt.schema import MetricValue, SampleDiagnostics


def run(label: str, soft: tuple[float, ...]) -> DemoRun:
    questions = tuple(
        SampleDiagnostics(run_id=label, sample_id=f"q{i}", question="Who?", metrics=(
            MetricValue(name=MetricName.SOFT_CORRECTNESS, value=value, n=1),
            MetricValue(name=MetricName.EXACT_MATCH, value=0.0, n=1),
            MetricValue(name=MetricName.ANSWER_F1, value=0.4, n=1),
            MetricValue(name=MetricName.VERIFIABLENESS, value=0.5, n=2)))
        for i, value in enumerate(soft))
    return DemoRun(label, label, questions)


@pytest.fixture
def printed() -> Iterator[None]:
    before = console.width
    console.width = 400  # one note per line
    yield
    console.width = before


def shown(answerer: str, a: DemoRun, b: DemoRun) -> str:
    with console.capture() as capture:
        print_headline(a, b, answerer)
    return capture.get()


def test_a_language_models_soft_correctness_is_a_headline_figure_not_zero_by_construction(printed: None) -> None:
    out = shown("local", run("A top_k=5", (1.0, 0.0, 0.0)), run("B top_k=1", (1.0, 1.0, 0.0)))
    assert "by construction (the extractive answer" not in out and "extractive" not in out
    headline, notes = out.split("not headline figures, and why:")
    soft_row = next(line for line in headline.splitlines() if "soft_correctness" in line)
    assert "0.333 (n=3)" in soft_row and "0.667 (n=3)" in soft_row and "+0.333" in soft_row
    assert "exact_match: the strict form of soft_correctness" in notes
    assert "(A top_k=5: exact_match 0.000; B top_k=1: exact_match 0.000)" in notes
    assert "verifiableness and completeness and conciseness: decided by the jury" in notes
    assert "verifiableness 0.500, completeness n/a, conciseness n/a" in notes


def test_the_extractive_answers_notes_say_why_and_show_the_runs_own_figures(printed: None) -> None:
    out = shown("extractive", run("A top_k=5", (0.0, 0.0)), run("B top_k=1", (0.0, 0.0)))
    headline, notes = out.split("not headline figures, and why:")
    assert "soft_correctness" not in headline
    assert "soft_correctness and exact_match: 0 by construction (the extractive answer is a whole sentence" in notes
    assert "(A top_k=5: soft_correctness 0.000, exact_match 0.000; B top_k=1: soft_correctness 0.000" in notes
