"""Re-test only changed rows (seed 003): a new run that evaluates the samples whose reference answer or
element list changed since a base run, and reuses every other row of the base run as it was.

A sample is re-run when
- it is not in the base run (new), or its stored sample differs from the given one (content hash): the
  reasons name the changed fields, "reference_answer" first;
- it failed in the base run (the system raised): a new run would otherwise carry the failure over untried;
- its element list now differs from the one the base run judged: the ids of the elements the decomposer
  node would build today (frozen, possibly edited list; pointer rule as configured) are compared with the
  element ids in the base run's diagnostics. Comparing contents, not timestamps, also catches an edit
  imported before the base run finished, and ignores an import that changed nothing.
Everything else is copied into the new run: the sample, its retrievals, answers, check links, reconciled
decisions and diagnostics (with their original times, so the report shows when each row was really
evaluated). The new RunInfo records base_run and rerun_sample_ids; the rows re-run carry the time they
were evaluated in their diagnostics.

A person's review decisions carry over wherever their check does, in copied and re-run rows alike: a check's
id is its content, so a check the new run still has is the same question, and asking it again would ask a
person twice. The base run's reviews of every sample in the dataset go into the new run before the changed
rows are evaluated (so their reconciliation applies them, as after `ragcourt review`); once those rows are
done, the reviews of checks the new run no longer has (an edited element, a changed answer) are taken out
again and counted as no longer applying.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ragcourt.nodes.state import EvalContext
from ragcourt.observability.telemetry import NO_TELEMETRY, Telemetry
from ragcourt.runs.element_lists import current_elements
from ragcourt.runs.runner import CONFIG_FILE, DIAGNOSTICS_FILE, Runner
from ragcourt.schema import ReviewAction, RunInfo, Sample, SampleDiagnostics, SampleStatus, content_id
from ragcourt.schema.config import EvalConfig, Method
from ragcourt.stores.records import RecordStore

NEW_SAMPLE = "not in the base run"
NO_BASE_ROW = "no diagnostics in the base run"
FAILED_IN_BASE = "failed in the base run"


@dataclass(frozen=True)
class ChangedSample:
    sample_id: str
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class ChangePlan:
    changed: tuple[ChangedSample, ...]
    unchanged: tuple[str, ...]  # sample ids whose rows are copied
    dropped: tuple[str, ...]  # in the base run but not in the given samples: not part of the new run

    @property
    def changed_ids(self) -> tuple[str, ...]:
        return tuple(c.sample_id for c in self.changed)


def _changed_fields(old: Sample, new: Sample) -> list[str]:
    before, after = old.model_dump(mode="json"), new.model_dump(mode="json")
    fields = [name for name in after if before.get(name) != after.get(name)]
    return sorted(fields, key=lambda name: name != "reference_answer")


def plan_changes(store: RecordStore, base_run_id: str, samples: Sequence[Sample], context: EvalContext) -> ChangePlan:
    """Which samples must be evaluated again, and why; the base run must exist in the store."""
    if store.get_run(base_run_id) is None:
        raise LookupError(f"no run '{base_run_id}' in the store")
    base_samples = {s.id: s for s in store.get_samples(base_run_id)}
    base_rows = {d.sample_id: d for d in store.get_diagnostics(base_run_id)}
    config = context.config
    changed: list[ChangedSample] = []
    unchanged: list[str] = []
    for sample in samples:
        old = base_samples.get(sample.id)
        if old is None:
            reasons = [NEW_SAMPLE]
        elif old.content_hash != sample.content_hash:
            reasons = [f"{name} changed" for name in _changed_fields(old, sample)]
        elif sample.id not in base_rows:
            reasons = [NO_BASE_ROW]
        elif base_rows[sample.id].status is SampleStatus.FAILED:  # evaluated again, not copied as a failure
            reasons = [f"{FAILED_IN_BASE}: {base_rows[sample.id].error}"]
        else:
            reasons = _element_change(store, context, config, sample, base_rows[sample.id])
        if reasons:
            changed.append(ChangedSample(sample.id, tuple(reasons)))
        else:
            unchanged.append(sample.id)
    given = {s.id for s in samples}
    return ChangePlan(tuple(changed), tuple(unchanged), tuple(i for i in base_samples if i not in given))


def _element_change(
    store: RecordStore, context: EvalContext, config: EvalConfig, sample: Sample, base: SampleDiagnostics
) -> list[str]:
    if Method.ELEMENTS not in config.methods or not sample.reference_answer:
        return []
    now = current_elements(store, context.decomposer, sample.reference_answer,
                           drop_pointers=config.drop_pointer_elements)
    judged = tuple(e.element_id for e in base.elements)
    if tuple(e.id for e in now.elements) == judged:
        return []
    if now.stored is None:
        return ["element list no longer stored (it will be split again)"]
    edited = " (edited by a person)" if now.stored.edited else ""
    return [f"element list changed{edited}: {len(judged)} -> {len(now.elements)} elements"]


def copy_rows(store: RecordStore, base_run_id: str, new_run_id: str, sample_ids: Sequence[str]) -> list[SampleDiagnostics]:
    """Copy the rows of `sample_ids` from the base run into the new run (idempotent); returns their diagnostics."""
    new = {"run_id": new_run_id}
    copied: list[SampleDiagnostics] = []
    for sample_id in sample_ids:
        records = [
            *(r.model_copy(update=new) for r in store.get_retrievals(base_run_id, sample_id)),
            *(a.model_copy(update=new) for a in store.get_answers(base_run_id, sample_id)),
            *(r.model_copy(update=new) for r in store.get_reconciled(base_run_id, sample_id)),
        ]
        diagnostics = [d.model_copy(update=new) for d in store.get_diagnostics(base_run_id, sample_id)]
        store.link_checks(new_run_id, sample_id, [c.id for c in store.checks_for(base_run_id, sample_id)])
        if records or diagnostics:
            store.put(*records, *diagnostics)
        copied.extend(diagnostics)
    store.copy_pinned_splits(base_run_id, new_run_id, sample_ids)
    return copied


@dataclass(frozen=True)
class CarriedReviews:
    """What became of the checks a person decided (accepted or overrode) in the base run."""

    carried: tuple[str, ...]  # check ids the new run has: the decision stands there, nobody is asked again
    gone: tuple[str, ...]  # check ids the new run no longer has (an edited or left-out sample's): no longer apply
    # check ids of samples the new run did not finish (they failed, or were stopped): kept, to be applied or
    # settled when the same command evaluates them again
    waiting: tuple[str, ...] = ()


def carry_reviews(store: RecordStore, base_run_id: str, new_run_id: str, sample_ids: Sequence[str]) -> None:
    """Copy the base run's reviews of the checks of `sample_ids` into the new run, whole histories (skips and
    changed minds included, so the latest review is the same one); idempotent, and a later review made in the
    new run stays the latest."""
    wanted = set(sample_ids)
    reviews = store.get_reviews(base_run_id)
    sample_of = _samples_of(store, [r.check_id for r in reviews])
    carried = [r.model_copy(update={"run_id": new_run_id}) for r in reviews if sample_of.get(r.check_id) in wanted]
    if carried:
        store.put(*carried)


def _samples_of(store: RecordStore, check_ids: Sequence[str]) -> dict[str, str]:
    """Check id -> its sample, for these checks only (reviews are few; a run's checks are many)."""
    return {c.id: c.sample_id for c in store.get_checks(check_ids)}


def settle_reviews(store: RecordStore, base_run_id: str, new_run_id: str, sample_ids: Sequence[str]) -> CarriedReviews:
    """Once the rows of the new run (`sample_ids`) are in: take out the carried reviews of checks that a finished
    sample no longer has, and count the base run's decisions that carried, no longer apply, or wait on a sample
    the new run did not finish."""
    held = [r.check_id for r in store.get_reviews(new_run_id)]
    decided = dict.fromkeys(r.check_id for r in store.get_reviews(base_run_id) if r.action is not ReviewAction.SKIP)
    checks = store.linked_check_ids(new_run_id, [*held, *decided])
    sample_of = _samples_of(store, [*held, *decided])
    unfinished = set(sample_ids) - store.finished_sample_ids(new_run_id)
    store.drop_reviews(new_run_id, [c for c in held if c not in checks and sample_of.get(c) not in unfinished])
    waiting = tuple(c for c in decided if c not in checks and sample_of.get(c) in unfinished)
    return CarriedReviews(carried=tuple(c for c in decided if c in checks),
                          gone=tuple(c for c in decided if c not in checks and c not in waiting), waiting=waiting)


@dataclass(frozen=True)
class RerunResult:
    run: RunInfo
    plan: ChangePlan
    rerun: tuple[SampleDiagnostics, ...]  # the re-evaluated rows, as they finished
    copied: tuple[SampleDiagnostics, ...]
    reviews: CarriedReviews


def rerun_id(base_run_id: str, samples: Sequence[Sample], plan: ChangePlan) -> str:
    """Deterministic, so the same command resumes the same new run."""
    return f"rerun-{content_id(base_run_id, [s.content_hash for s in samples], plan.changed_ids)[:10]}"


async def arerun_changed(
    context: EvalContext, base_run_id: str, samples: Sequence[Sample],
    *, new_run_id: str | None = None, runs_home: Path, dataset: str | None = None,
    telemetry: Telemetry = NO_TELEMETRY,
) -> RerunResult:
    """Evaluate only the changed samples in a new run and copy the rest from the base run.

    `context` must be built from the base run's configuration (the CLI does so); runs_home/<run id> is
    the new run directory; `telemetry`: where the re-evaluated samples' spans go (observability.telemetry).
    """
    store = context.store
    base = store.get_run(base_run_id)
    if base is None:
        raise LookupError(f"no run '{base_run_id}' in the store")
    plan = plan_changes(store, base_run_id, samples, context)
    run_id = new_run_id or rerun_id(base_run_id, samples, plan)
    run_dir = runs_home / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    existing = store.get_run(run_id)
    if existing is not None and existing.base_run != base_run_id:
        raise ValueError(f"run '{run_id}' exists and is not a re-run of '{base_run_id}'")
    info = existing or RunInfo(run_id=run_id, dataset=dataset or base.dataset, system=base.system,
                               config=base.config, collection=context.collection, base_run=base_run_id,
                               rerun_sample_ids=plan.changed_ids)
    if existing is None:
        store.put(info)
        (run_dir / CONFIG_FILE).write_text(context.config.model_dump_json(indent=2))
    store.put_samples(run_id, samples)
    copied = copy_rows(store, base_run_id, run_id, plan.unchanged)
    carry_reviews(store, base_run_id, run_id, [s.id for s in samples])
    if existing is None and copied:
        with (run_dir / DIAGNOSTICS_FILE).open("a", encoding="utf-8") as handle:
            for row in copied:
                handle.write(row.stream_line())
    todo = [s for s in samples if s.id in set(plan.changed_ids)]
    runner = Runner(context, run_id, run_dir, telemetry=telemetry)
    rerun = [d async for d in runner.astream(todo, dataset=info.dataset, system=base.system)]
    reviews = settle_reviews(store, base_run_id, run_id, [s.id for s in samples])
    return RerunResult(info, plan, tuple(rerun), tuple(copied), reviews)
