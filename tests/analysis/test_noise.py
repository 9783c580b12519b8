"""analysis/noise: the metric names two runs share, in one order whatever order their questions finished in."""

from __future__ import annotations

from ragcourt.analysis.noise import metric_names
from ragcourt.schema import MetricValue, SampleDiagnostics


def question(sample_id: str, *names: str) -> SampleDiagnostics:
    return SampleDiagnostics(run_id="r", sample_id=sample_id, question="q?",
                             metrics=tuple(MetricValue(name=name, value=0.5, n=1) for name in names))


def test_the_shared_metric_names_do_not_follow_which_question_finished_first() -> None:
    # a failed or partial question lacks some metrics: first-seen order depended on where it came
    partial, full = question("q1", "answer_f1"), question("q2", "element_coverage", "answer_f1")
    assert metric_names([partial, full], [full, partial]) == metric_names([full, partial], [partial, full])
    assert metric_names([full, partial]) == ["answer_f1", "element_coverage"]  # q1 first, then q2's new name
