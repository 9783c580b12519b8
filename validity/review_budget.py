"""A review budget: which escalations a person should decide first, and how uncertain each headline figure
still is given the reviews so far.

A headline figure is a run-level mean of a per-sample metric (`analysis.summary`). One binary check moves
its sample's metric by at most one unit share, 1 / (checks of the metric's kinds in that sample and
condition), and the run's mean by that over the samples with a value: the unit-share model. It is exact for
both sides of element coverage (the mean of the element-in-context decisions; element_answer_coverage, of the
element-in-answer ones) and C-Prec@k (each sub-query-in-chunk check
is 1 / (|Q| k)); for the others (C-nDCG, completeness, conciseness, verifiableness) it is a first-order
approximation: one decision can move them by more (an any-of rule) or less.

A pending escalation's decision is yes with probability p: the jury's Dawid-Skene posterior where its kind
was estimated (validity.jury_weights, whatever the run's reconcile rule), else the mean of the judges' own
probabilities, else their vote shares, else 1/2. Its provisional value v is 1 (yes), 0 (no) or 1/2 (split or
undecided), so its expected change of a figure is share x (p (1 - v) + (1 - p) v). The budget order sorts
escalations by the sum of their expected changes over the headline figures (ties: the question's place in
the run, then the order its checks were made, so two identical runs give one order whatever question finished
first). The
remaining uncertainty of a figure: its range if every pending escalation feeding it were decided yes, or
every one no, and its posterior standard deviation, sqrt(sum of share^2 p (1 - p)), decisions independent.
Scores (CuBE dimensions) and pairwise checks feed no headline mean here: they come last, in question order.
This is the one order in which the review desk, its API and `ragcourt review` ask (REVIEW_ORDER says it).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ragcourt.analysis.summary import summarize
from ragcourt.metrics.values import MetricKey, MetricName
from ragcourt.nodes.scorer import QCARE_KINDS
from ragcourt.schema import NORMAL, CheckKind, Label, Reconciled
from ragcourt.stores.records import RecordStore
from ragcourt.validity.jury_weights import JuryWeights, fit_jury

REVIEW_ORDER = ("those whose decisions can move the run's headline figures most first (expected change from the "
                "verdicts' probabilities and the jury's estimates), ties in question order")

# metric base name -> the check kinds whose decisions it is computed from (normal condition)
FEEDS: dict[str, tuple[CheckKind, ...]] = {
    **QCARE_KINDS, MetricName.ELEMENT_COVERAGE.value: (CheckKind.ELEMENT_IN_CONTEXT,),
    MetricName.ELEMENT_ANSWER_COVERAGE.value: (CheckKind.ELEMENT_IN_ANSWER,),
}


@dataclass(frozen=True)
class Swing:
    """One pending escalation's expected change of each headline figure it feeds."""

    escalation: Reconciled
    p_yes: float
    expected: dict[str, float]  # headline figure name -> expected absolute change of the run's mean

    @property
    def total(self) -> float:
        return math.fsum(self.expected.values())


@dataclass(frozen=True)
class Uncertainty:
    """A headline figure and what its pending escalations may still do to it (module docstring)."""

    name: str
    value: float
    low: float  # every pending escalation feeding it decided no
    high: float  # ... decided yes
    sd: float
    n_pending: int


@dataclass(frozen=True)
class BudgetPlan:
    swings: tuple[Swing, ...]  # in budget order
    uncertainty: tuple[Uncertainty, ...]


def p_yes(rec: Reconciled, jury: JuryWeights | None) -> float:
    if jury is not None and rec.check_id in jury.posteriors:
        return jury.posteriors[rec.check_id][Label.YES]
    if rec.probabilities and Label.YES in rec.probabilities:
        return rec.probabilities[Label.YES]
    return 0.5


def plan_reviews(store: RecordStore, run_id: str, jury: JuryWeights | None = None,
                 pending: Sequence[Reconciled] | None = None) -> BudgetPlan:
    """The run's pending escalations in budget order and each headline figure's remaining uncertainty.
    `jury` defaults to `fit_jury` of the run; `pending` to the store's pending escalations."""
    if jury is None:
        jury = fit_jury(store, run_id)
    if pending is None:
        pending = store.pending_escalations(run_id)
    rows = {row.name: row for row in summarize(store, run_id).metrics if row.mean is not None and row.n_samples}
    checks = {c.id: c for c in store.checks_for(run_id)}
    place = {sample_id: i for i, (sample_id, _) in enumerate(store.sample_questions(run_id))}
    made = {check_id: i for i, check_id in enumerate(checks)}  # within a question: the order its checks were made
    units = Counter((c.sample_id, c.kind, c.condition.key) for c in checks.values())
    swings, shares = [], []
    for rec in pending:
        check = checks.get(rec.check_id)
        p = p_yes(rec, jury)
        v = 0.5 if rec.yes_value is None else rec.yes_value
        expected: dict[str, float] = {}
        share_of: dict[str, float] = {}
        if check is not None and rec.kind.is_binary and check.condition == NORMAL:
            for name, row in rows.items():
                kinds = FEEDS.get(MetricKey.of(name).base, ())
                if rec.kind in kinds:
                    n = sum(units[(check.sample_id, kind, NORMAL.key)] for kind in kinds)
                    share_of[name] = 1.0 / (n * row.n_samples)
                    expected[name] = share_of[name] * (p * (1.0 - v) + (1.0 - p) * v)
        swings.append(Swing(rec, p, expected))
        shares.append((p, v, share_of))
    def tie_break(rec: Reconciled) -> tuple[int, int, str]:
        check = checks.get(rec.check_id)
        question = len(place) if check is None else place.get(check.sample_id, len(place))
        return question, made.get(rec.check_id, len(made)), rec.check_id

    order = sorted(range(len(swings)), key=lambda i: (-swings[i].total, *tie_break(swings[i].escalation)))
    uncertainty = []
    for name, row in rows.items():
        if MetricKey.of(name).base not in FEEDS:  # not computed from jury decisions: no review moves it
            continue
        feeding = [(p, v, share[name]) for p, v, share in shares if name in share]
        assert row.mean is not None
        uncertainty.append(Uncertainty(
            name=name, value=row.mean,
            low=max(0.0, row.mean - math.fsum(v * s for _, v, s in feeding)),
            high=min(1.0, row.mean + math.fsum((1.0 - v) * s for _, v, s in feeding)),
            sd=math.sqrt(math.fsum(s * s * p * (1.0 - p) for p, _, s in feeding)), n_pending=len(feeding),
        ))
    return BudgetPlan(tuple(swings[i] for i in order), tuple(uncertainty))


def budget_order(store: RecordStore, run_id: str, pending: Sequence[Reconciled]) -> list[Reconciled]:
    """`pending` in review order (REVIEW_ORDER): how much their decisions can move the headline figures, most
    first; the same order whatever order `pending` comes in."""
    return [swing.escalation for swing in plan_reviews(store, run_id, pending=pending).swings]


def review_queue(store: RecordStore, run_id: str) -> list[Reconciled]:
    """The run's pending escalations in review order: what the review desk shows first, the desk's API names as
    next and `ragcourt review` asks first."""
    return budget_order(store, run_id, store.pending_escalations(run_id))
