"""CUE-R (seed 004) tables read from a run: per-chunk utility (the mean change when a chunk is removed, replaced or
duplicated), grounding, confidence error and trace divergence per condition with the sources of the traces and
confidences behind them, the perturbed answers behind it all, and the closed-book control.

Each figure says why it is missing (no perturbations, closed book not run or not answered) instead of guessing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from ragcourt.metrics import cuer
from ragcourt.metrics.values import MetricName
from ragcourt.schema import (
    Answer,
    Condition,
    ConditionKind,
    ConfidenceSource,
    PerturbationEffect,
    Retrieval,
    Sample,
    SampleDiagnostics,
    TraceSource,
    VerdictStatus,
)
from ragcourt.stores.records import RecordStore

CUER_KINDS = (ConditionKind.REMOVE, ConditionKind.REPLACE, ConditionKind.DUPLICATE)
CUER_DELTAS = ("d_soft_correct", "d_f1", "d_confidence", "trace_divergence")
CUER_NO_CHECKS = "no judged checks: unscored/escalated checks do not apply"


@dataclass(frozen=True)
class CuerCount:
    """The perturbed answers behind CUE-R's figures for one perturbation kind. CUE-R compares answers with the
    gold answers (no jury), so these replace the unscored and escalated checks of the judged methods.

    failed, unavailable and uncompared are None when the run's answers and retrievals were not read."""

    kind: ConditionKind
    answers: int  # perturbed answers compared with the normal answer: the rows of the figures
    soft: int  # rows where the change in soft correctness is defined (both answers scored): the bars and means
    changed: int | None = None  # of those, the rows where soft correctness changed (None: not counted)
    failed: int | None = None  # rows whose perturbed answer the system failed to give (unscored): no change
    unavailable: int | None = None  # perturbed conditions retrieved but never answered (the system cannot)
    uncompared: int | None = None  # perturbed answers without a normal answer to compare with: no row


def _soft_note(soft: int, changed: int | None) -> str:
    """How many rows have a soft-correctness value to compare (the change is defined) and how many changed."""
    of = "" if changed is None else f", {changed} of them changed"
    return f"{soft} with a soft-correctness value to compare with the normal answer{of}"


def _answer_key(sample_id: str, condition: Condition) -> tuple[str, str]:
    return sample_id, condition.key


def _kind(key: tuple[str, str]) -> ConditionKind:
    return Condition.parse(key[1]).kind


def cuer_counts(diagnostics: Sequence[SampleDiagnostics], answers: Sequence[Answer] | None = None,
                retrievals: Sequence[Retrieval] | None = None) -> tuple[CuerCount, ...]:
    """Per perturbation kind present in the run (CUER_KINDS order): the rows of the diagnostics and, with
    the run's answers and retrievals, the answers that failed or could not be produced."""
    rows = {_answer_key(d.sample_id, p.condition): p for d in diagnostics for p in d.perturbations}
    answered = {_answer_key(a.sample_id, a.condition): a for a in answers or () if a.condition.kind in CUER_KINDS}
    planned = {_answer_key(r.sample_id, r.condition) for r in retrievals or () if r.condition.kind in CUER_KINDS}
    present = {_kind(key) for key in (*rows, *answered, *planned)}
    out = []
    for kind in (k for k in CUER_KINDS if k in present):
        mine = [key for key in rows if _kind(key) is kind]
        out.append(CuerCount(
            kind=kind, answers=len(mine), soft=sum(rows[key].d_soft_correct is not None for key in mine),
            changed=sum(rows[key].d_soft_correct not in (None, 0.0) for key in mine),
            failed=None if answers is None else sum(
                key in answered and answered[key].status is VerdictStatus.UNSCORED for key in mine),
            unavailable=None if answers is None or retrievals is None else sum(
                _kind(key) is kind and key not in answered for key in planned),
            uncompared=None if answers is None else sum(
                _kind(key) is kind and key not in rows for key in answered),
        ))
    return tuple(out)


def cuer_totals(counts: Sequence[CuerCount]) -> tuple[str, str, str]:
    """Lines for a CUE-R figure: its n and that no check was judged; the answers that failed or could not be
    produced; the answers left out for want of a normal answer ("not counted" when the answers were not read)."""
    n = sum(c.answers for c in counts)
    soft = sum(c.soft for c in counts)
    changed = None if any(c.changed is None for c in counts) else sum(c.changed or 0 for c in counts)

    def total(field: str) -> str:
        values = [getattr(c, field) for c in counts]
        return "not counted" if any(v is None for v in values) else str(sum(values))

    return (f"n={n} perturbed answers ({_soft_note(soft, changed)}); {CUER_NO_CHECKS}",
            f"not produced: failed {total('failed')} (the system's answer is unscored: no change) · "
            f"unavailable {total('unavailable')} (the system could not answer the condition)",
            f"not compared: {total('uncompared')} perturbed answers without a normal answer")


@dataclass(frozen=True)
class ClosedBookControl:
    """Seed 004's zero-retrieval control: per sample, the closed-book answer (the question alone) compared with the
    normal answer, as a perturbation is (closed book - normal). reason says why there is no comparison, and
    what to do, when effects is empty."""

    effects: tuple[tuple[str, PerturbationEffect], ...]  # (sample id, closed book vs normal)
    soft_closed: float | None = None  # mean soft correctness of the compared closed-book answers
    soft_normal: float | None = None  # ... and of the normal answers of the same samples
    f1_closed: float | None = None
    f1_normal: float | None = None
    n_soft: int = 0  # samples where both answers have a soft correctness (the means are over them)
    reason: str | None = None

    @property
    def n(self) -> int:
        return len(self.effects)

    def note(self) -> str:
        """One line for the CUE-R table and chart."""
        if not self.effects:
            return f"closed-book control (seed 004: the question alone, no context): {self.reason}"

        def pair(closed: float | None, normal: float | None) -> str:
            return ("n/a" if closed is None or normal is None else
                    f"{closed:.3f} vs normal {normal:.3f} (change {closed - normal:+.3f})")

        return (f"closed-book control (seed 004: the question alone, no context), n={self.n} samples "
                f"({self.n_soft} with both answers scored): soft correctness {pair(self.soft_closed, self.soft_normal)}"
                f"; F1 {pair(self.f1_closed, self.f1_normal)}")


CLOSED_BOOK_NOT_RUN = ("not run (add closed_book to the config's conditions, e.g. conditions: [normal, closed_book]; "
                       "--method cuer adds it to a new run)")


def _mean_of(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def cuer_closed_book(samples: Sequence[Sample], answers: Sequence[Answer], retrievals: Sequence[Retrieval]
                     ) -> ClosedBookControl:
    """The closed-book control of a run from its samples and answers (the stored diagnostics keep only the
    chunk perturbations); retrievals: the run's, to tell "not run" (no closed-book condition was planned) from
    "not answered"."""
    by_key = {(a.sample_id, a.condition.kind): a for a in answers
              if a.condition.kind in (ConditionKind.NORMAL, ConditionKind.CLOSED_BOOK) and a.condition.chunk_id is None}
    closed = [s for s in samples if (s.id, ConditionKind.CLOSED_BOOK) in by_key]
    if not closed:
        planned = any(r.condition.kind is ConditionKind.CLOSED_BOOK for r in retrievals)
        return ClosedBookControl(effects=(), reason=(
            "not answered: the system gave no closed-book answer (a precomputed system needs a generator for "
            "it: set bounds_generator in the config)" if planned else CLOSED_BOOK_NOT_RUN))
    paired = [s for s in closed if (s.id, ConditionKind.NORMAL) in by_key]
    if not paired:
        return ClosedBookControl(effects=(), reason="no sample has a normal answer to compare its closed-book answer "
                                 "with (see the failed samples)")

    def outcome(answer: Answer, sample: Sample) -> cuer.Outcome:
        text = answer.text if answer.status is VerdictStatus.OK else None
        # Shown nothing, the closed-book answer used nothing. A normal answer without a reported trace has a
        # judged one only in the scorer (from the claim-chunk checks): here it is unknown, its divergence n/a.
        source, used = answer.trace_source, answer.used_chunk_ids if text is not None else None
        if answer.condition.kind is ConditionKind.CLOSED_BOOK and source is TraceSource.NONE:
            source = TraceSource.JUDGED
        elif source is TraceSource.NONE:
            used = None
        return cuer.Outcome.score(answer.condition, text, sample.gold_answers, answer.confidence, used,
                                  trace_source=source, confidence_source=answer.confidence_source)

    pairs = [(s, outcome(by_key[(s.id, ConditionKind.NORMAL)], s), outcome(by_key[(s.id, ConditionKind.CLOSED_BOOK)], s))
             for s in paired]
    effects = tuple((s.id, cuer.perturbation_effect(normal, closed_book, {}, s.gold_titles))
                    for s, normal, closed_book in pairs)
    both = [(n.soft_correct, c.soft_correct) for _, n, c in pairs
            if n.soft_correct is not None and c.soft_correct is not None]
    f1 = [(n, c) for _, n, c in pairs if n.f1 is not None and c.f1 is not None]
    reason = None
    if not both:
        reason = "no sample has both answers scored against a gold answer (the samples need gold answers)"
    return ClosedBookControl(
        effects=effects, n_soft=len(both), reason=reason,
        soft_closed=_mean_of([float(c) for _, c in both]),
        soft_normal=_mean_of([float(n) for n, _ in both]),
        f1_closed=_mean_of([c.f1 for _, c in f1]), f1_normal=_mean_of([n.f1 for n, _ in f1]),
    )


def cuer_closed_book_of_run(store: RecordStore, run_id: str, answers: Sequence[Answer] | None = None,
                            retrievals: Sequence[Retrieval] | None = None) -> ClosedBookControl:
    """`cuer_closed_book` read from the store (answers, retrievals: the run's, when already read)."""
    answers = store.get_answers(run_id) if answers is None else answers
    retrievals = store.get_retrievals(run_id) if retrievals is None else retrievals
    return cuer_closed_book(store.get_samples(run_id), answers, retrievals)


CLOSED_BOOK_ROW = ("closed_book", "none (no context)")
NORMAL_ROW = ("normal", "none perturbed")
_CHUNK_NAMES: dict[bool | None, str] = {True: "gold", False: "non-gold"}  # a chunk of unknown gold: "unknown"
# The rows of both CUE-R tables in one fixed order, whatever order the questions finished in: the normal answers,
# then each perturbation kind (CUER_KINDS) on gold, non-gold and unknown chunks, then the closed-book control.
_ROW_ORDER = [NORMAL_ROW[0], *(str(kind) for kind in CUER_KINDS), CLOSED_BOOK_ROW[0]]
_CHUNK_ORDER = [NORMAL_ROW[1], *_CHUNK_NAMES.values(), "unknown", CLOSED_BOOK_ROW[1]]


def _in_row_order(table: pd.DataFrame) -> pd.DataFrame:
    """`table` (perturbation and chunk columns) sorted into _ROW_ORDER, then _CHUNK_ORDER."""
    key = table["perturbation"].map(_ROW_ORDER.index) * len(_CHUNK_ORDER) + table["chunk"].map(_CHUNK_ORDER.index)
    return table.iloc[key.argsort(kind="stable")].reset_index(drop=True)


def cuer_frame(diagnostics: Sequence[SampleDiagnostics], answers: Sequence[Answer] | None = None,
               closed_book: ClosedBookControl | None = None) -> pd.DataFrame:
    """Mean effect of each perturbation kind on gold and non-gold chunks (seed 004), with row counts: rows
    (perturbed answers), n_<delta> (rows with that change: each mean is over them) and, given the run's
    answers, failed (rows whose perturbed answer is unscored). With closed_book, a last row "closed_book / none
    (no context)": the closed-book control's mean change against the normal answer."""
    status = {_answer_key(a.sample_id, a.condition): a.status for a in answers or ()}

    def row(sample_id: str, p: PerturbationEffect, chunk: str | None = None) -> dict[str, object]:
        return {"perturbation": str(p.condition.kind),
                "chunk": chunk or _CHUNK_NAMES.get(p.chunk_is_gold, "unknown"),
                "d_soft_correct": p.d_soft_correct, "d_f1": p.d_f1, "d_confidence": p.d_confidence,
                "trace_divergence": p.trace_divergence,
                "failed": status.get(_answer_key(sample_id, p.condition)) is VerdictStatus.UNSCORED}

    rows = [row(d.sample_id, p) for d in diagnostics for p in d.perturbations]
    control = [row(sample_id, p, CLOSED_BOOK_ROW[1]) for sample_id, p in (closed_book.effects if closed_book else ())]
    if not rows and not control:
        return pd.DataFrame()
    tables = [_cuer_means(pd.DataFrame(found), answers is not None) for found in (rows, control) if found]
    return _in_row_order(pd.concat(tables, ignore_index=True))


def _cuer_means(frame: pd.DataFrame, failed: bool) -> pd.DataFrame:
    frame[list(CUER_DELTAS)] = frame[list(CUER_DELTAS)].astype(float)  # None -> NaN: left out of the means
    grouped = frame.groupby(["perturbation", "chunk"])
    table = grouped[list(CUER_DELTAS)].mean()
    table["rows"] = grouped.size()
    counted = grouped[list(CUER_DELTAS)].count()
    for column in CUER_DELTAS:
        table[f"n_{column}"] = counted[column]
    if failed:
        table["failed"] = grouped["failed"].sum().astype(int)
    return table.reset_index()


CUER_CONDITION_VALUES = ("soft_correct", "f1", "grounding", "d_grounding", "trace_divergence", "confidence_error",
                         "d_confidence_error")


def _sources(values: pd.Series) -> str:
    """The trace or confidence sources of a group's rows, e.g. "judged" or "judged, reported"."""
    return ", ".join(sorted({str(v) for v in values}))


def cuer_condition_frame(diagnostics: Sequence[SampleDiagnostics]) -> pd.DataFrame:
    """Soft correctness, answer F1, grounding, confidence error and trace divergence per condition (seed 004
    computes them for every condition, not only the normal one; its tables give each condition's own figures
    beside the changes): a first row "normal / none perturbed" with the normal answers' means, then per
    perturbation kind and chunk gold status (in that order: _ROW_ORDER) the perturbed answers' means and their
    change against the normal answer. `trace` and `confidence` name the sources behind the
    rows (reported by the system, judged from the claim-chunk checks, probed, none); n_<value> counts the
    rows with that value (each mean is over them); trace_unscored / trace_escalated sum the claim-chunk checks
    behind the rows' judged traces left undecided (unscored, or judges split: the trace is then unknown) or
    escalated."""
    normal = [_normal_row(d) for d in diagnostics if d.perturbations]
    rows = [{"perturbation": str(p.condition.kind), "chunk": _CHUNK_NAMES.get(p.chunk_is_gold, "unknown"),
             "trace": str(p.trace_source), "confidence": str(p.confidence_source or ConfidenceSource.NONE),
             "soft_correct": p.soft_correct, "f1": p.f1,
             "grounding": p.grounding, "d_grounding": p.d_grounding, "trace_divergence": p.trace_divergence,
             "confidence_error": p.confidence_error, "d_confidence_error": p.d_confidence_error,
             "trace_unscored": p.trace_unscored, "trace_escalated": p.trace_escalated}
            for d in diagnostics for p in d.perturbations]
    if not rows:
        return pd.DataFrame()
    frame = pd.DataFrame([*normal, *rows])
    frame[list(CUER_CONDITION_VALUES)] = frame[list(CUER_CONDITION_VALUES)].astype(float)  # None -> NaN
    grouped = frame.groupby(["perturbation", "chunk"])
    table = grouped[list(CUER_CONDITION_VALUES)].mean()
    table.insert(0, "confidence", grouped["confidence"].agg(_sources))
    table.insert(0, "trace", grouped["trace"].agg(_sources))
    table["rows"] = grouped.size()
    counted = grouped[list(CUER_CONDITION_VALUES)].count()
    for column in CUER_CONDITION_VALUES:
        table[f"n_{column}"] = counted[column]
    table["trace_unscored"] = grouped["trace_unscored"].sum().astype(int)
    table["trace_escalated"] = grouped["trace_escalated"].sum().astype(int)
    return _in_row_order(table.reset_index())


def _normal_row(diagnostics: SampleDiagnostics) -> dict[str, object]:
    """The normal answer's soft correctness, F1, grounding and confidence error (per-sample metrics), for the
    first row."""
    grounding, error = diagnostics.metric("grounding_score"), diagnostics.metric("confidence_error")
    soft, f1 = diagnostics.metric(MetricName.SOFT_CORRECTNESS), diagnostics.metric(MetricName.ANSWER_F1)
    return {"perturbation": NORMAL_ROW[0], "chunk": NORMAL_ROW[1],
            "trace": str(diagnostics.trace_source or TraceSource.NONE),
            "confidence": str(diagnostics.confidence_source or ConfidenceSource.NONE),
            "soft_correct": None if soft is None else soft.value, "f1": None if f1 is None else f1.value,
            "grounding": None if grounding is None else grounding.value, "d_grounding": None,
            "trace_divergence": None, "confidence_error": None if error is None else error.value,
            "d_confidence_error": None, "trace_unscored": 0 if grounding is None else grounding.n_unscored,
            "trace_escalated": 0 if grounding is None else grounding.n_escalated}
