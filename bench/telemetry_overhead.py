"""What OpenTelemetry spans cost a run: the same samples through the per-sample graph with no telemetry and with
spans exported to the SDK's InMemorySpanExporter (the span work without a network), in process, with the
scripted LLM decomposer and judge of tests/observability/test_telemetry.py (no HTTP: the graph and span work alone).

    python bench/telemetry_overhead.py [--samples 40] [--repeats 3]

Prints the median wall time per setting (a fresh store each time, so every LLM call is made), the overhead,
and the spans per sample.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the fakes
sys.path.insert(0, str(ROOT / "tests" / "runs"))  # the scripted run of test_telemetry

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from test_telemetry import EXAMPLE, context_of  # noqa: E402

from ragcourt.data.loaders import load_samples  # noqa: E402
from ragcourt.llm.usage import UsageMeter  # noqa: E402
from ragcourt.observability.telemetry import NO_TELEMETRY, Telemetry  # noqa: E402
from ragcourt.runs.runner import Runner  # noqa: E402
from ragcourt.stores.records import RecordStore  # noqa: E402


def samples(n: int) -> list:
    base = list(load_samples(EXAMPLE).samples)
    return [base[i % len(base)].model_copy(update={"id": f"s{i}"}) for i in range(n)]


async def one_run(batch: list, telemetry: Telemetry) -> float:
    with tempfile.TemporaryDirectory() as tmp, RecordStore(Path(tmp) / "store.sqlite") as store:
        context, _, _ = context_of(store, UsageMeter())
        runner = Runner(context, "bench", Path(tmp) / "run", telemetry=telemetry)
        started = time.perf_counter()
        async for _ in runner.astream(batch):
            pass
        return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    batch = samples(args.samples)
    exporter = InMemorySpanExporter()
    traced = Telemetry.exporting_to(exporter)
    times: dict[str, list[float]] = {"no telemetry": [], "spans (in-memory exporter)": []}
    for _ in range(args.repeats):  # interleaved, so a change in the machine's load falls on both
        times["no telemetry"].append(asyncio.run(one_run(batch, NO_TELEMETRY)))
        times["spans (in-memory exporter)"].append(asyncio.run(one_run(batch, traced)))
    spans = len(exporter.get_finished_spans()) / args.repeats
    print(f"{args.samples} samples x {args.repeats} repeats, Python {platform.python_version()}")
    off = statistics.median(times["no telemetry"])
    for setting, values in times.items():
        median = statistics.median(values)
        print(f"{setting:28s} median {median:.2f} s ({', '.join(f'{v:.2f}' for v in values)})  "
              f"overhead {100 * (median - off) / off:+.1f}%")
    print(f"spans per sample: {(spans - 1) / args.samples:.1f} (plus 1 per run)")


if __name__ == "__main__":
    main()
