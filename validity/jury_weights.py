"""How much each judge of a run is worth: Dawid-Skene estimates per check kind from the run's own verdicts,
semi-supervised by its reviews, and the weighted reconciliation's final step.

`fit_jury` reads the run's binary checks, its jury's scored labels and the latest review of each check (a
person's yes / no is clamped as the check's class), and fits one one-coin Dawid-Skene model per check kind
(metrics.dawid_skene: why one-coin). A kind with fewer than `MIN_CHECKS` checks two judges labelled is not
fitted (EM on a handful of checks drifts where the few labels push it): its checks keep the majority rule.
It also counts the decisions the posterior changes against the majority rule (reviewed checks excluded: a
person decides those either way). The final step of a `reconcile: weighted` run, which evaluates the run's
samples again with the posteriors, is runs.rescore.aweigh_run.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from ragcourt.metrics.dawid_skene import Confusion, DawidSkene, fit_dawid_skene
from ragcourt.schema import CheckKind, Label, ReviewAction
from ragcourt.schema.config import EvalConfig
from ragcourt.stores.records import RecordStore
from ragcourt.validity.profile import stored_judge_ids

MIN_CHECKS = 20  # checks of a kind with two or more judges' labels before its judges are estimated
BINARY = (Label.YES, Label.NO)


@dataclass(frozen=True)
class KindJury:
    kind: CheckKind
    n_checks: int  # binary checks of this kind with at least one scored label or a review
    n_reviewed: int  # of them, decided by a person (clamped)
    fit: DawidSkene | None  # None: too few checks (`MIN_CHECKS`), the majority rule decides them
    n_changed: int = 0  # unreviewed checks whose weighted decision differs from the majority's
    n_split_decided: int = 0  # of them, checks the majority left split (no label) that the posterior decides


@dataclass(frozen=True)
class JuryWeights:
    run_id: str
    judges: tuple[str, ...]
    kinds: tuple[KindJury, ...]
    posteriors: dict[str, dict[Label, float]] = field(default_factory=dict)  # check id -> P(yes), P(no)

    @property
    def n_changed(self) -> int:
        return sum(k.n_changed for k in self.kinds)


def run_judges(config: EvalConfig, seen: Collection[str] | None = None) -> list[str]:
    """The ids the run's verdicts are stored under (a judge its calibration profile calibrates has its own;
    `seen`: the judge ids of the checks' verdicts, validity.profile.stored_judge_ids)."""
    return stored_judge_ids(config, seen)


def estimate_text(kind: KindJury, judge: str) -> str:
    """A judge's estimated accuracy on a kind as the summary and the report show it: `0.91 [0.85, 0.95] n=120`
    (95 % interval, checks it labelled); "-" where it was not estimated or labelled none of the kind."""
    found = [] if kind.fit is None else [j for j in kind.fit.judges if j.judge == judge]
    if not found:
        return "-"
    estimate = found[0]
    return (f"{estimate.accuracy:.2f} [{estimate.interval[0]:.2f}, {estimate.interval[1]:.2f}] "
            f"n={estimate.n_labelled}")


def changed_text(kind: KindJury) -> str:
    """How many of the kind's decisions the weighting changes against the majority (splits it decides in
    brackets), or why the kind is left to the majority."""
    if kind.fit is None:
        return f"not estimated (< {MIN_CHECKS} checks): majority"
    return f"{kind.n_changed}" + (f" ({kind.n_split_decided} splits)" if kind.n_split_decided else "")


def changed_heading(weighted: bool) -> str:
    return "changed vs majority" if weighted else "would change vs majority"


def weighting_sentence(weights: JuryWeights, weighted: bool) -> str:
    verb = "changed" if weighted else "would change"
    return (f"the weighting {verb} {weights.n_changed} binary decisions against the majority rule "
            "(reviewed checks not counted: a person decides them either way)")


def fit_jury(store: RecordStore, run_id: str, config: EvalConfig | None = None) -> JuryWeights:
    """The run's jury estimates (module docstring); `config` defaults to the run's stored one."""
    if config is None:
        run = store.get_run(run_id)
        if run is None:
            raise LookupError(f"no run '{run_id}' in the store")
        config = EvalConfig.of_stored_run(run.config)
    checks = [c for c in store.checks_for(run_id) if c.kind.is_binary]
    unique = list({c.id: c for c in checks}.values())
    stored = store.get_verdicts([c.id for c in unique])
    judges = run_judges(config, {v.judge_id for v in stored})
    verdicts: dict[str, dict[str, Label]] = {}
    for verdict in stored:
        if verdict.judge_id in judges and verdict.scored and verdict.label in BINARY:
            verdicts.setdefault(verdict.check_id, {})[verdict.judge_id] = verdict.label
    reviewed = {
        check_id: review.label for check_id, review in store.latest_reviews(run_id).items()
        if review.action is not ReviewAction.SKIP and review.label in BINARY
    }
    kinds, posteriors = [], {}
    for kind in sorted({c.kind for c in unique}):
        of_kind = [c for c in unique if c.kind is kind and (c.id in verdicts or c.id in reviewed)]
        labels = {c.id: verdicts[c.id] for c in of_kind if c.id in verdicts}
        known = {c.id: reviewed[c.id] for c in of_kind if c.id in reviewed}
        if sum(1 for given in labels.values() if len(given) >= 2) < MIN_CHECKS:
            kinds.append(KindJury(kind, len(of_kind), len(known), None))
            continue
        fit = fit_dawid_skene(labels, BINARY, known, confusion=Confusion.ONE_COIN)
        changed = split_decided = 0
        for check in of_kind:
            posterior = dict(zip(BINARY, fit.posteriors[check.id], strict=True))
            posteriors[check.id] = posterior
            if check.id in known:
                continue
            weighted, majority = fit.decision(check.id), _majority(verdicts.get(check.id, {}))
            if weighted != majority:
                changed += 1
                split_decided += majority is None
        kinds.append(KindJury(kind, len(of_kind), len(known), fit, changed, split_decided))
    return JuryWeights(run_id, tuple(judges), tuple(kinds), posteriors)


def _majority(votes: dict[str, Label]) -> Label | None:
    """The majority rule's label from the judges' labels (None: split, or nobody scored the check)."""
    yes, no = sum(v is Label.YES for v in votes.values()), sum(v is Label.NO for v in votes.values())
    return Label.YES if yes > no else Label.NO if no > yes else None
