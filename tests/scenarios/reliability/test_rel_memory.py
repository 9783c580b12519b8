"""Memory stays flat over a long run: bench/long_run_memory.py's scripted run (two lexical judges, the
precomputed system, the sentence decomposer) at 200 samples; RSS from /proc/self/status.

The bound is generous on purpose (the allocator and SQLite's page cache move RSS by a few MiB): it
fails a leak of about 70 KiB or more per sample over the 150 samples after the warm-up.
The 2,000-sample figures are in docs/RELIABILITY.md (run the bench to reproduce them).
"""

from __future__ import annotations

import sys
from pathlib import Path

from fixtures import REPO

sys.path.insert(0, str(REPO / "bench"))

from long_run_memory import WARM_UP, long_run, make_samples, rss_mib

MAX_GROWTH_MIB = 10.0


async def test_rss_stays_flat_over_a_200_sample_run(tmp_path: Path) -> None:
    measurement = await long_run(200, tmp_path)
    assert measurement.samples == 200 and WARM_UP < 100
    assert measurement.growth_mib < MAX_GROWTH_MIB, measurement
    assert measurement.rss_middle_mib - measurement.rss_start_mib < MAX_GROWTH_MIB, measurement


def test_rss_is_read_from_proc_and_samples_are_distinct() -> None:
    assert 10 < rss_mib() < 10_000
    samples = make_samples(3)
    assert [s.id for s in samples] == ["m0", "m1", "m2"]
    assert len({s.question for s in samples}) == 3
