"""analysis/run_order: a run's diagnostics in its samples' order, not in the order its questions finished."""

from __future__ import annotations

from pathlib import Path

from ragcourt.analysis.run_order import diagnostics_in_run_order
from ragcourt.schema import Sample, SampleDiagnostics
from ragcourt.stores.records import RecordStore


def test_diagnostics_come_in_the_runs_order_whatever_order_they_were_stored_in(tmp_path: Path) -> None:
    with RecordStore(tmp_path / "store.sqlite") as store:
        store.put_samples("r", [Sample(id=f"s{i}", question=f"q{i}?") for i in range(3)])
        for sample_id in ("s2", "s0", "s1"):  # finished in this order
            store.put(SampleDiagnostics(run_id="r", sample_id=sample_id, question="q?"))
        assert [d.sample_id for d in store.get_diagnostics("r")] == ["s2", "s0", "s1"]
        assert [d.sample_id for d in diagnostics_in_run_order(store, "r")] == ["s0", "s1", "s2"]
