"""Pandas tables of the Q-CARE and element-level diagnosis, for the report and notebooks.

All functions are pure over `SampleDiagnostics` (read them with `store.get_diagnostics(run_id)`).
Undefined figures stay None in object columns, each with its reason; nothing is NaN.

- `qcare_sample_frame`: one row per sample, the five Q-CARE metrics (and element coverage) with n/a reasons.
- `element_status_frame`: one row per element: its three verdicts, its status and, for `undecided`, why.
- `gap_share_frame`: run-level counts and shares of each element status.
- `undecided_frame`: undecided elements counted by reason (what the run could not attribute, and why).
- `uncovered_subquery_frame`, `unsupported_claim_frame`: one row per sub-query no retrieved chunk covers
  and per claim no retrieved chunk supports.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import pandas as pd

from ragcourt.metrics.elements import split_attribution, status_shares
from ragcourt.metrics.values import MetricKey, MetricName, NaCause
from ragcourt.schema import ElementOutcome, ElementStatus, ElementVerdict, SampleDiagnostics, SampleStatus

QCARE_METRICS = (
    MetricName.C_PRECISION, MetricName.C_NDCG, MetricName.COMPLETENESS, MetricName.CONCISENESS,
    MetricName.VERIFIABLENESS, MetricName.ELEMENT_COVERAGE,
)

NO_ANSWER_VERDICT = "not decided whether the answer states it (no answer, or every verdict unscored)"
NO_CONTEXT_VERDICT = ("missing from the answer, but not decided whether the normal retrieval holds it "
                      "(retrieval unknown, e.g. precomputed answers without contexts, or verdicts unscored)")
NO_LOOSE_VERDICT = ("missing from the answer and the normal context, but no loose-retrieval verdict (coverage "
                    "at or above the threshold, loose retrieval unavailable, or verdicts unscored)")


UNDECIDED_TABLE = "Undecided elements by reason"  # the report's title of `undecided_frame`
UNDECIDED_NO_SHARE = (
    "undecided elements get no share: a verdict needed to place them (in the answer, in the retrieved "
    "context or in the loose retrieval) is missing or unscored; why, reason by reason: the table "
    f"'{UNDECIDED_TABLE}' below, and each question's 'Elements of the reference answer' under Questions"
)


SPLIT_SHARED_OUT = (
    "the judges split evenly on a verdict these elements need: each is shared out over the statuses above "
    "(seed 003 averages the two judges; e.g. split on 'in the answer', found in the context: half answered, "
    "half generation_gap), so it has no share of its own; its checks await review"
)


RETRIEVAL_UNKNOWN = ("missing from the answer, and the system's retrieval is unknown (precomputed answers "
                     "without contexts), so a retrieval gap cannot be told from a generation gap")


def undecided_reason(outcome: ElementOutcome, sample: SampleDiagnostics | None = None) -> str | None:
    """Why an element is undecided (mirrors `metrics.elements.element_status`); None when it is decided.

    With the sample's diagnostics, an unknown retrieval is named as such (its element coverage is n/a
    because the retrieved chunks are unknown, not because verdicts were unscored).
    """
    if outcome.status is not ElementStatus.UNDECIDED:
        return None
    # a verdict the judges split on is decided (0.5): the missing one is further down
    if outcome.in_answer is None and ElementVerdict.IN_ANSWER not in outcome.split:
        return NO_ANSWER_VERDICT
    if outcome.in_context is None and ElementVerdict.IN_CONTEXT not in outcome.split:
        coverage = sample.metric(MetricName.ELEMENT_COVERAGE.value) if sample is not None else None
        if NaCause.UNKNOWN_CHUNKS.explains(coverage):
            return RETRIEVAL_UNKNOWN
        return NO_CONTEXT_VERDICT
    return NO_LOOSE_VERDICT


def qcare_sample_frame(diagnostics: Sequence[SampleDiagnostics]) -> pd.DataFrame:
    """sample_id, question, status, then per metric `<name>` (value or None) and `<name>_na_reason`.

    Metric columns use the base name (c_prec, not c_prec@5); `k` holds the cut-off (the run's top_k) when
    there is one (given contexts have none).
    """
    rows = []
    for d in diagnostics:
        row: dict[str, Any] = {"sample_id": d.sample_id, "question": d.question, "status": str(d.status), "k": None}
        for metric in QCARE_METRICS:
            found = next((m for m in d.metrics if MetricKey.of(m.name).base == metric.value), None)
            row[metric.value] = None if found is None else found.value
            row[f"{metric.value}_na_reason"] = (
                ("not computed for this sample" if d.status is SampleStatus.OK else f"sample failed: {d.error}")
                if found is None else found.na_reason
            )
            if found is not None and MetricKey.of(found.name).k is not None:
                row["k"] = MetricKey.of(found.name).k
        row["n_unsupported_claims"] = len(d.unsupported_claims)
        row["n_uncovered_subqueries"] = len(d.uncovered_subqueries)
        row["n_escalated"] = len(d.escalations)
        rows.append(row)
    columns = ["sample_id", "question", "status", "k"]
    for metric in QCARE_METRICS:
        columns += [metric.value, f"{metric.value}_na_reason"]
    columns += ["n_unsupported_claims", "n_uncovered_subqueries", "n_escalated"]
    return pd.DataFrame(rows, columns=columns, dtype=object)


def element_status_frame(diagnostics: Sequence[SampleDiagnostics]) -> pd.DataFrame:
    """One row per element: sample_id, element_id, index in the sample, text, the three verdicts
    (True / False / None), judges_split (the verdicts the judges split on, comma-separated; None when none),
    status and undecided_reason."""
    rows = [
        {"sample_id": d.sample_id, "element_id": e.element_id, "position": position, "text": e.text,
         "in_context": e.in_context, "in_loose_context": e.in_loose_context, "in_answer": e.in_answer,
         "judges_split": ", ".join(e.split) or None,
         "status": str(e.status), "undecided_reason": undecided_reason(e, d)}
        for d in diagnostics for position, e in enumerate(d.elements)
    ]
    columns = ["sample_id", "element_id", "position", "text", "in_context", "in_loose_context", "in_answer",
               "judges_split", "status", "undecided_reason"]
    return pd.DataFrame(rows, columns=columns, dtype=object)


def gap_share_frame(diagnostics: Sequence[SampleDiagnostics]) -> pd.DataFrame:
    """One row per status: count (elements with that status); share (its weight over the decided elements);
    gap_share (its weight over the gaps' total weight, gap statuses only); na_reason. A status's weight is its
    count plus the fractions of the judges_split elements shared out to it (`attrs["weights"]`; the count when
    no judges split). `judges_split` and `undecided` have a count and no share."""
    elements = [e for d in diagnostics for e in d.elements]
    shares = status_shares((e.status for e in elements), split_attribution(elements))
    rows = []
    for status in ElementStatus:
        share = shares.shares.get(status)
        gap = shares.gap_shares.get(status)
        reasons = [m.na_reason for m in (share, gap) if m is not None and m.na_reason]
        rows.append({
            "status": str(status), "count": shares.counts[status],
            "share": None if share is None else share.value,
            "gap_share": None if gap is None else gap.value,
            "na_reason": UNDECIDED_NO_SHARE if status is ElementStatus.UNDECIDED
            else SPLIT_SHARED_OUT if status is ElementStatus.JUDGES_SPLIT
            else ("; ".join(dict.fromkeys(reasons)) or None),
        })
    frame = pd.DataFrame(rows, columns=["status", "count", "share", "gap_share", "na_reason"], dtype=object)
    frame.attrs.update(n_decided=shares.n_decided, n_undecided=shares.n_undecided, n_split=shares.n_split,
                       weights={str(status): weight for status, weight in shares.weights.items()})
    return frame


def undecided_frame(diagnostics: Sequence[SampleDiagnostics]) -> pd.DataFrame:
    """Undecided elements by reason: reason, count, samples (how many samples have one)."""
    counts: Counter[str] = Counter()
    samples: dict[str, set[str]] = {}
    for d in diagnostics:
        for e in d.elements:
            reason = undecided_reason(e, d)
            if reason is not None:
                counts[reason] += 1
                samples.setdefault(reason, set()).add(d.sample_id)
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))  # ties by reason, not by who came first
    rows = [{"reason": r, "count": n, "samples": len(samples[r])} for r, n in ranked]
    return pd.DataFrame(rows, columns=["reason", "count", "samples"], dtype=object)


def uncovered_subquery_frame(diagnostics: Sequence[SampleDiagnostics]) -> pd.DataFrame:
    rows = [{"sample_id": d.sample_id, "question": d.question, "subquery": text}
            for d in diagnostics for text in d.uncovered_subqueries]
    return pd.DataFrame(rows, columns=["sample_id", "question", "subquery"], dtype=object)


def unsupported_claim_frame(diagnostics: Sequence[SampleDiagnostics]) -> pd.DataFrame:
    rows = [{"sample_id": d.sample_id, "question": d.question, "claim": text}
            for d in diagnostics for text in d.unsupported_claims]
    return pd.DataFrame(rows, columns=["sample_id", "question", "claim"], dtype=object)


def element_diagnosis_lines(diagnostics: Sequence[SampleDiagnostics]) -> list[str]:
    """Plain-text lines for the terminal: status counts, gap shares (or why they are n/a), undecided reasons."""
    frame = gap_share_frame(diagnostics)
    n_elements = int(sum(frame["count"]))
    if n_elements == 0:
        return []
    counts = ", ".join(f"{row.status} {row.count}" for row in frame.itertuples()
                       if row.count or row.status != ElementStatus.JUDGES_SPLIT)  # a run with one judge has none
    n_samples = sum(1 for d in diagnostics if d.elements)
    lines = [f"elements: {n_elements} in {n_samples} samples: {counts}"]
    gaps = frame[frame["gap_share"].notna()]
    if len(gaps):
        shares = ", ".join(f"{row.status} {row.gap_share:.0%}" for row in gaps.itertuples())
        lines.append(f"gap shares (of decided elements missing from the answer): {shares}; document_gap means "
                     "'documents doubtful': a suspicion, not proof")
    else:
        reason = frame.loc[frame["status"] == str(ElementStatus.GENERATION_GAP), "na_reason"].iloc[0]
        undecided = frame.attrs["n_undecided"]
        why = f"{undecided} elements undecided, why below" if undecided else "no element undecided"
        lines.append(f"gap shares: n/a: {reason} ({why})")
    if frame.attrs["n_split"]:
        lines.append(f"judges split: {frame.attrs['n_split']} elements shared out over the statuses (seed 003 "
                     "averages the two judges); their checks await review")
    for row in undecided_frame(diagnostics).itertuples():
        lines.append(f"undecided: {row.count} elements in {row.samples} samples: {row.reason}")
    return lines
