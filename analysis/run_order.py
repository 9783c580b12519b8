"""A run's diagnostics in the run's own order (its samples' stored order), not in the order its questions
finished: with concurrent questions that order changes from one identical run to the next, and so would every
table or chart with a row per question."""

from __future__ import annotations

from ragcourt.schema import SampleDiagnostics
from ragcourt.stores.records import RecordStore


def diagnostics_in_run_order(store: RecordStore, run_id: str) -> list[SampleDiagnostics]:
    """`store.get_diagnostics(run_id)` sorted by the place of each question in the run."""
    place = {sample_id: i for i, (sample_id, _) in enumerate(store.sample_questions(run_id))}
    return sorted(store.get_diagnostics(run_id), key=lambda d: place.get(d.sample_id, len(place)))
