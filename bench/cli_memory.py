"""Memory of `ragcourt run` over many samples: RSS of the CLI process after warm-up and at the end, the growth in %
and in KiB per finished sample (issue 36: the CLI grew by about 11.6 KiB a sample where the Python API stayed flat).

Run: python bench/cli_memory.py [--samples 20000] [--every 500] [--warm-up 1000] [--terminal]
     python bench/cli_memory.py --samples 100000    # the issue's target: flat within 5 % after warm-up

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


def rss_kib(pid: int) -> int:
    """Resident set size of process `pid` in KiB (the kernel's kB are KiB)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS line in /proc/{pid}/status (not Linux?)")


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


def measure(n: int, every: int, warm_up: int, terminal: bool, home: Path) -> Measurement:
    """Run the CLI on n generated samples; RSS every `every` finished samples and at the last one."""
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
    readings: list[Reading] = []
    tail: list[str] = []
    for line in lines:
        results = finished_in(line)
        for _ in range(results):
            finished += 1
            if finished % every == 0 or finished in (n, warm_up):
                readings.append(Reading(finished, rss_kib(process.pid)))
        if not results:
            tail = [*tail[-20:], line.rstrip()]  # the command's own last lines, shown if it fails
    exit_code = process.wait()
    seconds = time.perf_counter() - started
    if master is not None:
        os.close(master)
    if exit_code != 0 or finished < n:
        raise SystemExit(f"ragcourt run exited {exit_code} after {finished} of {n} samples:\n" + "\n".join(tail))
    warm = next(r for r in readings if r.finished >= min(warm_up, n))
    return Measurement(tuple(readings), warm, seconds)


def mib(kib: int) -> str:
    return f"{kib / 1024:.1f} MiB"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=20_000)
    parser.add_argument("--every", type=int, default=500, help="read RSS every N finished samples")
    parser.add_argument("--warm-up", type=int, default=1_000, help="finished samples before the baseline reading")
    parser.add_argument("--terminal", action="store_true", help="run under a pseudo-terminal (the rich bar)")
    parser.add_argument("--max-growth-pct", type=float, default=5.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ragcourt-cli-memory-") as home:
        m = measure(args.samples, args.every, args.warm_up, args.terminal, Path(home))
    print(f"samples: {args.samples}  output: {'terminal (rich bar)' if args.terminal else 'piped (plain lines)'}")
    shown = m.readings[:: max(len(m.readings) // SHOWN_READINGS, 1)]  # the trend, not hundreds of lines
    for reading in (*shown, m.end) if shown[-1] != m.end else shown:
        print(f"  {reading.finished:>8} finished  RSS {mib(reading.rss_kib)}")
    peak = max(m.readings, key=lambda r: r.rss_kib)
    print(f"RSS after warm-up ({m.warm_up.finished} samples): {mib(m.warm_up.rss_kib)}")
    print(f"RSS at the end ({m.end.finished} samples): {mib(m.end.rss_kib)}  (peak {mib(peak.rss_kib)} at "
          f"{peak.finished})")
    print(f"growth after warm-up: {m.growth_pct:+.2f} %  ({m.kib_per_sample:+.3f} KiB per finished sample)")
    print(f"time: {m.seconds:.0f} s  ({args.samples / m.seconds:.1f} samples/s, loading and summary included)")
    return 0 if m.growth_pct <= args.max_growth_pct else 1


if __name__ == "__main__":
    raise SystemExit(main())
