"""The failure message of `assert_rag`: the figures that failed, then, per sample that pulled them down, what
explains it (the answer, unsupported claims, sub-queries the context does not cover, missing reference
elements and where each was lost, escalated checks awaiting review, unscored checks, the error of a failed
sample), as a reader of a CI log needs it without opening the report."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ragcourt.analysis.gate import GateFailure
from ragcourt.runs.api import EvalResult
from ragcourt.schema import Check, ElementStatus, SampleDiagnostics, SampleStatus

SHOWN_SAMPLES = 5  # the samples explained, of however many pulled a figure down
SHOWN_ITEMS = 5  # the claims, elements or checks listed per sample
TEXT_WIDTH = 160  # a long answer or claim is cut: the report has it whole


def _cut(text: str | None, width: int = TEXT_WIDTH) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= width else flat[:width - 1] + "…"


def _listed(title: str, items: Sequence[str]) -> list[str]:
    if not items:
        return []
    more = f" (+{len(items) - SHOWN_ITEMS} more)" if len(items) > SHOWN_ITEMS else ""
    return [f"    {title} ({len(items)}){more}:", *(f"      - {item}" for item in items[:SHOWN_ITEMS])]


def is_to_blame(d: SampleDiagnostics, thresholds: Mapping[str, float]) -> bool:
    """Whether a sample failed, or has one of these metrics below its minimum or n/a."""
    if d.status is SampleStatus.FAILED:
        return True
    for name, minimum in thresholds.items():
        found = d.metric(name)
        if found is None or found.value is None or found.value < minimum:
            return True
    return False


def explain_sample(d: SampleDiagnostics, result: EvalResult, thresholds: Mapping[str, float],
                   checks: Mapping[str, Check]) -> list[str]:
    given = result.inputs.get(d.sample_id)
    lines = [f"  sample {d.sample_id}: {_cut(d.question, 100)!r}"]
    if d.status is SampleStatus.FAILED:
        return [*lines, f"    failed: {d.error}"]
    if given is not None:
        lines.append(f"    answer: {_cut(given.answer)!r}" if given.answer is not None else "    answer: none")
    figures = []
    for name in thresholds:
        found = d.metric(name)
        figures.append(f"{name} n/a ({found.na_reason})" if found is not None and found.value is None
                       else f"{name}={found.value:.3f}" if found is not None and found.value is not None
                       else f"{name} not computed")
    if figures:
        lines.append(f"    {'; '.join(figures)}")
    lines += _listed("unsupported claims (not backed by the retrieved chunks)",
                     [repr(_cut(c)) for c in d.unsupported_claims])
    lines += _listed("sub-queries the retrieved chunks do not cover", [repr(_cut(q)) for q in d.uncovered_subqueries])
    lines += _listed("missing reference elements (where each was lost)",
                     [f"{_cut(e.text)!r}: {e.status}" for e in d.elements if e.status is not ElementStatus.ANSWERED])
    escalated = [f"{checks[c].kind}: {_cut(checks[c].subject_text, 80)!r} against {_cut(checks[c].target_text, 80)!r}"
                 if c in checks else c for c in d.escalations]
    lines += _listed("escalated checks awaiting review (the judges disagreed; `ragcourt review` decides them)",
                     escalated)
    if d.n_unscored:
        lines.append(f"    {d.n_unscored} of {d.n_checks} checks unscored (no usable verdict: left out of the "
                     "figures)")
    return lines


def explain(result: EvalResult, failures: Sequence[GateFailure], thresholds: Mapping[str, float],
            checks: Mapping[str, Check], home: str) -> str:
    """The whole failure message of one `assert_rag`."""
    failed_samples = [d for d in result.diagnostics if d.status is SampleStatus.FAILED]
    head = []
    if failures:
        head.append(f"ragcourt: {len(failures)} of {len(thresholds)} figures failed over "
                    f"{len(result.diagnostics)} sample(s)")
        head += [f"  {failure.line()}" for failure in failures]
    if failed_samples:
        head.append(f"ragcourt: {len(failed_samples)} of {len(result.diagnostics)} sample(s) could not be evaluated")
    failing = {failure.metric: failure.threshold for failure in failures}  # a figure that passed blames nobody
    blamed = [d for d in result.diagnostics if is_to_blame(d, failing)]
    body = [line for d in blamed[:SHOWN_SAMPLES] for line in explain_sample(d, result, thresholds, checks)]
    if len(blamed) > SHOWN_SAMPLES:
        body.append(f"  ... and {len(blamed) - SHOWN_SAMPLES} more sample(s)")
    where = (f"run {result.run_id} in workspace {home}: `ragcourt report {result.run_id} --home {home}` shows "
             "every verdict")
    return "\n".join([*head, *body, where])
