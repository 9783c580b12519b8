"""Memory over a long scripted run: RSS at the start, the middle and the end, and samples per second.

Run: python bench/long_run_memory.py [--samples 2000] [--concurrency 8]

The run is offline and deterministic: two lexical judges, the precomputed system (each sample brings its
own contexts and answer), the sentence decomposer, a fresh record store in a temporary folder. RSS is
read from /proc/self/status (VmRSS; Linux). "start" is taken after the first samples finished (imports,
graph compilation and the SQLite page cache are paid by then), "middle" at half the run, "end" after the
last sample. Exit status 1 when the growth from start to end exceeds --max-growth-mib.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ragcourt.judging import BaselineJudge, BaselineRule
from ragcourt.judging.decomposers import SentenceDecomposer
from ragcourt.nodes.state import EvalContext
from ragcourt.runs.runner import Runner
from ragcourt.schema import Chunk, Sample
from ragcourt.schema.config import EvalConfig, JudgeSpec, Method
from ragcourt.stores.records import RecordStore
from ragcourt.systems import Precomputed

WARM_UP = 50  # samples finished before "start" is read


def rss_mib() -> float:
    """Resident set size of this process in MiB, from /proc/self/status (no psutil needed)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024  # the kernel reports kB
    raise RuntimeError("no VmRSS line in /proc/self/status (not Linux?)")


def make_samples(n: int) -> list[Sample]:
    """n samples in one shape, each with its own words (so no check id repeats across samples)."""
    return [
        Sample(
            id=f"m{i}", question=f"Who built tower {i}? When was tower {i} built?",
            reference_answer=f"Tower {i} was built by Mason{i}. Tower {i} was built in year {i}.",
            contexts=(Chunk(id=f"m{i}c1", text=f"Mason{i} built tower {i}.", rank=1),
                      Chunk(id=f"m{i}c2", text=f"Bananas number {i}.", rank=2),
                      Chunk(id=f"m{i}c3", text=f"Tower {i} opened in year {i}.", rank=3)),
            answer=f"Mason{i} built tower {i}. It is tall.",
        )
        for i in range(n)
    ]


@dataclass(frozen=True)
class Measurement:
    samples: int
    rss_start_mib: float
    rss_middle_mib: float
    rss_end_mib: float
    seconds: float

    @property
    def growth_mib(self) -> float:
        return self.rss_end_mib - self.rss_start_mib

    @property
    def samples_per_s(self) -> float:
        return self.samples / self.seconds


async def long_run(n: int, home: Path, concurrency: int = 8) -> Measurement:
    """Evaluate n scripted samples; RSS after WARM_UP samples, at n/2 and at the end."""
    config = EvalConfig(judges=(JudgeSpec(model="lex-a"), JudgeSpec(model="lex-b")), top_k=3,
                        methods=(Method.QCARE, Method.ELEMENTS), concurrency=concurrency)
    judges = [BaselineJudge(BaselineRule.LEXICAL, name="lex-a"), BaselineJudge(BaselineRule.LEXICAL, name="lex-b")]
    samples = make_samples(n)
    readings: dict[str, float] = {}
    with RecordStore(home / "store.sqlite") as store:
        context = EvalContext(config=config, system=Precomputed(), judges=judges, decomposer=SentenceDecomposer(),
                              store=store)
        runner = Runner(context, "long", home / "runs" / "long")
        started, done = time.perf_counter(), 0
        async for _ in runner.astream(samples):
            done += 1
            if done == min(WARM_UP, n):
                readings["start"] = rss_mib()
            if done == n // 2:
                readings["middle"] = rss_mib()
        seconds = time.perf_counter() - started
    return Measurement(samples=n, rss_start_mib=readings["start"], rss_middle_mib=readings.get("middle", 0.0),
                       rss_end_mib=rss_mib(), seconds=seconds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--max-growth-mib", type=float, default=50.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ragcourt-long-run-") as home:
        m = asyncio.run(long_run(args.samples, Path(home), args.concurrency))
    print(f"samples: {m.samples}  concurrency: {args.concurrency}")
    print(f"RSS start (after {WARM_UP} samples): {m.rss_start_mib:.1f} MiB")
    print(f"RSS middle ({m.samples // 2} samples): {m.rss_middle_mib:.1f} MiB")
    print(f"RSS end ({m.samples} samples): {m.rss_end_mib:.1f} MiB  (growth {m.growth_mib:+.1f} MiB)")
    print(f"time: {m.seconds:.1f} s  ({m.samples_per_s:.1f} samples/s)")
    return 0 if m.growth_mib <= args.max_growth_mib else 1


if __name__ == "__main__":
    raise SystemExit(main())
