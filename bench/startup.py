"""CPU seconds to start the command line: `ragcourt --help` and `ragcourt summary RUN`.

Run: python bench/startup.py [--repeats 5]

Each command runs in a fresh interpreter (a subprocess, as a user types it); the figure is the child's user +
system CPU time (os.wait4), the median over the repeats, so the page cache is warm after the first. The run
that `summary` reads is a small offline precomputed run (20 samples written here, lexical judge) made once in a
temporary workspace before timing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path


def cpu_seconds(argv: list[str]) -> float:
    """User + system CPU of one child process running argv to its end."""
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv)} failed with status {status}")
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    ragcourt = shutil.which("ragcourt") or sys.exit("ragcourt is not on PATH: install the project first")
    with tempfile.TemporaryDirectory() as scratch:
        home, dataset = Path(scratch) / "home", Path(scratch) / "samples.jsonl"
        dataset.write_text("".join(json.dumps({
            "id": f"q{i}", "question": f"Which river flows through city {i}?", "answer": f"River {i} flows there.",
            "reference_answer": f"The river {i} flows through city {i}.",
            "contexts": [f"City {i} lies on river {i}.", "An unrelated paragraph."]}) + "\n" for i in range(20)))
        subprocess.run([ragcourt, "run", str(dataset), "--system",
                        "precomputed", "--judge", "lexical", "--run-id", "startup", "--home", str(home)],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for label, argv in (("ragcourt --help", [ragcourt, "--help"]),
                            ("ragcourt summary RUN", [ragcourt, "summary", "startup", "--home", str(home)])):
            times = sorted(cpu_seconds(argv) for _ in range(args.repeats))
            print(f"{label:<22} CPU median {statistics.median(times):.2f} s "
                  f"(min {times[0]:.2f}, max {times[-1]:.2f}, {args.repeats} runs)")


if __name__ == "__main__":
    main()
