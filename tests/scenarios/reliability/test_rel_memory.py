"""Memory stays flat over a long run: bench/long_run_memory.py's scripted run (two lexical judges, the
precomputed system, the sentence decomposer) at 200 samples; RSS from /proc/self/status.

The bound is generous on purpose (the allocator and SQLite's page cache move RSS by a few MiB): it
fails a leak of about 70 KiB or more per sample over the 150 samples after the warm-up.
The 2,000-sample figures are in docs/RELIABILITY.md (run the bench to reproduce them).

The CLI's path (`ragcourt run`: commands.evaluation) once kept every finished sample's diagnostics to the end of the
run, about 13 KiB a sample (issue 36); its test counts the diagnostics alive as the run goes, with no RSS bound.
bench/cli_memory.py measures the CLI's RSS over 100,000 samples.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from fixtures import REPO, bench_module

sys.path.insert(0, str(REPO / "bench"))

from long_run_memory import WARM_UP, long_run, make_samples, rss_mib

from ragcourt.commands.evaluation import PRECOMPUTED, build_system, evaluate_and_print
from ragcourt.runs.models import Models
from ragcourt.runs.runner import Runner
from ragcourt.runs.workspace import Workspace
from ragcourt.schema import SampleDiagnostics
from ragcourt.schema.config import EvalConfig, JudgeSpec

MAX_GROWTH_MIB = 10.0


@pytest.mark.slow
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


def test_the_cli_run_holds_no_finished_samples_diagnostics(tmp_path: Path) -> None:
    """`ragcourt run --system precomputed --judge lexical` as the command builds it, over 40 samples two at a time:
    when a sample's line is printed, the diagnostics alive are only those of the samples still in flight (before
    the fix, every finished sample's: 40 at the end)."""
    samples = make_samples(40)
    ids = {s.id for s in samples}
    alive: list[int] = []

    def counted(runner: Runner, models: Models) -> Callable[..., AsyncIterator[SampleDiagnostics]]:
        async def stream(*args: Any, **kwargs: Any) -> AsyncIterator[SampleDiagnostics]:
            async for diagnostics in runner.astream(*args, **kwargs):
                yield diagnostics
                gc.collect()  # the CLI has printed and let go of it by now: only what is still held remains
                alive.append(sum(isinstance(o, SampleDiagnostics) and o.sample_id in ids for o in gc.get_objects()))
        return stream

    config = EvalConfig(judges=(JudgeSpec(model="lexical"),), concurrency=2)
    workspace = Workspace(tmp_path / "home")
    summary = evaluate_and_print(workspace, config, lambda models: build_system(PRECOMPUTED, workspace, models, None),
                                 samples, "cli-memory", "generated", None, check_endpoints=False, engine=counted)
    assert summary.n_samples == 40 and len(alive) == 40
    assert max(alive) <= config.concurrency + 1, alive


def test_the_cli_bench_counts_result_lines_piped_and_on_a_terminal() -> None:
    cli_memory = bench_module("cli_memory")
    piped = "✓ q1  c_prec=0.50  completeness=1.00\n"
    redrawn = ("evaluating (questions) \x1b[90m━━━\x1b[0m \x1b[32m 0/30\x1b[0m\r\x1b[2K\x1b[32m✓\x1b[0m q0  "
               "\x1b[33mc_prec\x1b[0m=\x1b[1;36m0\x1b[0m")
    failed = "\x1b[2K\x1b[31m✗\x1b[0m q9  failed: boom"
    progress = "evaluating (questions): 30/300 (10%), 52.7/s, ETA 0:05"
    assert [cli_memory.finished_in(line) for line in (piped, redrawn, failed, progress)] == [1, 1, 1, 0]
