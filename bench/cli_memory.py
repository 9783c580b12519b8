"""Memory of `ragcourt run` over many samples: RSS of the CLI process after warm-up and at the end, the growth in %
and in KiB per finished sample (issue 36: the CLI grew by about 11.6 KiB a sample where the Python API stayed flat).

Run: python bench/cli_memory.py [--samples 20000] [--every 500] [--warm-up 1000] [--terminal] [--stop-after N]
     python bench/cli_memory.py --samples 100000    # the issue's target: flat within 5 % after warm-up
     python bench/cli_memory.py --sizes 10000,200000 --stop-after 2000   # peak RSS independent of the dataset's size

`--sizes A,B` runs the command on A and on B samples and compares their peak RSS (VmHWM: the most the process ever
held, so the input phase's peak is in it, read at every reading); exit status 1 when they differ by more than
--max-peak-diff-pct. `--stop-after N` interrupts the command (Ctrl-C, as a person would) after N finished samples:
the input phase (checking the whole dataset, deriving the run id, storing the samples) is measured in full, and the
evaluation for N samples.

The command is the real one, `ragcourt run DATA --system precomputed --judge lexical --home TMP` (no LLM), in a
subprocess on generated tiny samples in the shape `tests/test_cli.py` uses (each with its own words, so no check
or split repeats across samples). A finished sample is a result line (✓ or ✗) on the command's output; every
`--every` of them the child's RSS is read from /proc/PID/status (VmRSS; Linux). Piped, the command prints plain
progress lines; `--terminal` runs it under a pseudo-terminal so it draws its rich bar instead. Exit status 1 when
the growth from warm-up to the end exceeds --max-growth-pct.
"""

from __future__ import annotations

import argparse
import json
import os
import pty
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

# The CLI's own entry point, as the `ragcourt` script calls it, run by this interpreter (so the same environment).
CLI = [sys.executable, "-c", "from ragcourt.cli import main; main()"]
RESULT_MARKS = ("✓ ", "✗ ")  # how a finished sample's line starts
INTERRUPTED = 130  # the command's exit status after Ctrl-C
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
SHOWN_READINGS = 10


def sample_row(i: int) -> dict[str, object]:
    return {
        "id": f"q{i}", "question": f"Where is the Acme{i} headquarters?",
        "reference_answer": f"The Acme{i} headquarters is in Springfield{i}.",
        "contexts": [{"id": f"c{i}a", "text": f"Acme{i} headquarters are in Springfield{i}."},
                     {"id": f"c{i}b", "text": f"Bananas{i} are yellow."}],
        "answer": f"The headquarters is in Springfield{i}.",
    }


def write_dataset(path: Path, n: int) -> None:
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            out.write(json.dumps(sample_row(i)) + "\n")


def finished_in(line: str) -> int:
    """How many result lines `line` holds. On a terminal the bar is redrawn on the line a result is printed on,
    each part after a carriage return, in colour; piped, a line is one plain part."""
    return sum(ANSI.sub("", part).startswith(RESULT_MARKS) for part in line.split("\r"))


def status_kib(pid: int, field: str = "VmRSS") -> int:
    """A memory figure of process `pid` in KiB (the kernel's kB are KiB): VmRSS, the resident set size now, or
    VmHWM, its highest so far."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} line in /proc/{pid}/status (not Linux?)")


def reading(pid: int, finished: int, started: float) -> Reading:
    return Reading(finished, status_kib(pid), status_kib(pid, "VmHWM"), time.perf_counter() - started)


def piped_lines(process: subprocess.Popen[bytes]) -> Iterator[str]:
    assert process.stdout is not None
    for raw in process.stdout:
        yield raw.decode("utf-8", "replace")


def terminal_lines(master: int) -> Iterator[str]:
    """Lines the child writes to its pseudo-terminal, until it closes it (EIO once the child is gone)."""
    pending = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            chunk = b""
        if not chunk:
            break
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            yield line.decode("utf-8", "replace")
    if pending:
        yield pending.decode("utf-8", "replace")


@dataclass(frozen=True)
class Reading:
    finished: int
    rss_kib: int
    peak_kib: int  # VmHWM: the highest RSS so far
    seconds: float  # since the command started


@dataclass(frozen=True)
class Measurement:
    readings: tuple[Reading, ...]
    warm_up: Reading
    seconds: float

    @property
    def end(self) -> Reading:
        return self.readings[-1]

    @property
    def growth_pct(self) -> float:
        return 100 * (self.end.rss_kib - self.warm_up.rss_kib) / self.warm_up.rss_kib

    @property
    def kib_per_sample(self) -> float:
        return (self.end.rss_kib - self.warm_up.rss_kib) / max(self.end.finished - self.warm_up.finished, 1)


def measure(n: int, every: int, warm_up: int, terminal: bool, home: Path, stop_after: int | None = None) -> Measurement:
    """Run the CLI on n generated samples; RSS every `every` finished samples and at the last one (or at
    `stop_after`, where the command is interrupted)."""
    data = home / "data.jsonl"
    write_dataset(data, n)
    command = [*CLI, "run", str(data), "--system", "precomputed", "--judge", "lexical", "--home", str(home / "home")]
    master = None
    if terminal:
        master, child_end = pty.openpty()
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=child_end, stderr=child_end)
        os.close(child_end)  # the child holds its own copy: reading the master ends when the child exits
        lines = terminal_lines(master)
    else:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        lines = piped_lines(process)
    started, finished = time.perf_counter(), 0
    last = min(n, stop_after or n)
    readings: list[Reading] = []
    tail: list[str] = []
    for line in lines:
        results = finished_in(line)
        for _ in range(results):
            finished += 1
            if finished % every == 0 or finished in (1, last, warm_up):
                readings.append(reading(process.pid, finished, started))
            if finished == stop_after:
                process.send_signal(signal.SIGINT)
        if not results:
            tail = [*tail[-20:], line.rstrip()]  # the command's own last lines, shown if it fails
    exit_code = process.wait()
    seconds = time.perf_counter() - started
    if master is not None:
        os.close(master)
    stopped = stop_after is not None and finished >= stop_after and exit_code == INTERRUPTED
    if not stopped and (exit_code != 0 or finished < n):
        raise SystemExit(f"ragcourt run exited {exit_code} after {finished} of {n} samples:\n" + "\n".join(tail))
    readings = [r for r in readings if r.finished <= last]  # results printed as the interrupt arrived
    warm = next((r for r in readings if r.finished >= min(warm_up, last)), readings[-1])
    return Measurement(tuple(readings), warm, seconds)


def mib(kib: int) -> str:
    return f"{kib / 1024:.1f} MiB"


def report(m: Measurement, n: int, terminal: bool) -> None:
    print(f"samples: {n}  output: {'terminal (rich bar)' if terminal else 'piped (plain lines)'}")
    shown = m.readings[:: max(len(m.readings) // SHOWN_READINGS, 1)]  # the trend, not hundreds of lines
    for r in (*shown, m.end) if shown[-1] != m.end else shown:
        print(f"  {r.finished:>8} finished  RSS {mib(r.rss_kib)}  peak {mib(r.peak_kib)}  at {r.seconds:.0f} s")
    first = m.readings[0]
    print(f"input phase (checked, run id, stored) until the first sample at {first.seconds:.0f} s: peak RSS "
          f"{mib(first.peak_kib)}")
    print(f"RSS after warm-up ({m.warm_up.finished} samples): {mib(m.warm_up.rss_kib)}")
    print(f"RSS at the end ({m.end.finished} samples): {mib(m.end.rss_kib)}  (peak {mib(m.end.peak_kib)})")
    print(f"growth after warm-up: {m.growth_pct:+.2f} %  ({m.kib_per_sample:+.3f} KiB per finished sample)")
    print(f"time: {m.seconds:.0f} s")


def compare_sizes(sizes: list[int], args: argparse.Namespace) -> int:
    """Peak RSS of the command on each size; 0 when the largest peak is within --max-peak-diff-pct of the
    smallest."""
    peaks = []
    for n in sizes:
        with tempfile.TemporaryDirectory(prefix="ragcourt-cli-memory-") as home:
            m = measure(n, args.every, args.warm_up, args.terminal, Path(home), args.stop_after)
        report(m, n, args.terminal)
        peaks.append(m.end.peak_kib)
        print()
    low, high = min(peaks), max(peaks)
    diff = 100 * (high - low) / low
    print("peak RSS: " + ", ".join(f"{n} samples {mib(peak)}" for n, peak in zip(sizes, peaks, strict=True))
          + f"; the largest {diff:+.1f} % over the smallest")
    return 0 if diff <= args.max_peak_diff_pct else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=20_000)
    parser.add_argument("--every", type=int, default=500, help="read RSS every N finished samples")
    parser.add_argument("--warm-up", type=int, default=1_000, help="finished samples before the baseline reading")
    parser.add_argument("--terminal", action="store_true", help="run under a pseudo-terminal (the rich bar)")
    parser.add_argument("--max-growth-pct", type=float, default=5.0)
    parser.add_argument("--stop-after", type=int, default=None, help="interrupt the command after N finished samples")
    parser.add_argument("--sizes", default=None, help="A,B: compare the peak RSS on A and on B samples")
    parser.add_argument("--max-peak-diff-pct", type=float, default=10.0)
    args = parser.parse_args()
    if args.sizes:
        return compare_sizes([int(size) for size in args.sizes.split(",")], args)
    with tempfile.TemporaryDirectory(prefix="ragcourt-cli-memory-") as home:
        m = measure(args.samples, args.every, args.warm_up, args.terminal, Path(home), args.stop_after)
    report(m, args.samples, args.terminal)
    return 0 if m.growth_pct <= args.max_growth_pct else 1


if __name__ == "__main__":
    raise SystemExit(main())
