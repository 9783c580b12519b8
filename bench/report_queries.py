"""The report's queries over a 10,000-sample store: `summarize`, report `collect` and `write_report`, and
the export of every table (`ragcourt report RUN --export DIR`: every check and verdict, a slice at a time).

    python bench/report_queries.py                      # builds the store (lexical judge, ~3-5 min), then times
    python bench/report_queries.py --home DIR --keep    # build once into DIR and keep it
    python bench/report_queries.py --home DIR           # DIR already holds the run: time only

The store is the one `bench/cost_speed.py --scale` measures: N samples (HotpotQA and long-form, with
precomputed contexts and answers) evaluated with the lexical judge and the sentence decomposer, run id
`scale-lexical`. Each query runs in a fresh process, so its time and peak memory are its own; the first
open of a store written before the aggregate indexes existed builds them (timed separately as `open`).
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

RUN_ID = "scale-lexical"
COST_SPEED = Path(__file__).resolve().parent / "cost_speed.py"


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def time_queries(home: Path) -> dict[str, Any]:
    """One process: open the store, then each query once, in the order a `ragcourt report` runs them."""
    from ragcourt.analysis.summary import summarize
    from ragcourt.report.data import collect
    from ragcourt.report.html import write_report
    from ragcourt.stores.records import RecordStore

    started = time.perf_counter()
    store = RecordStore(home / "store.sqlite")
    timings: dict[str, Any] = {"open_s": time.perf_counter() - started}
    try:
        started = time.perf_counter()
        summary = summarize(store, RUN_ID)
        timings["summarize_s"] = time.perf_counter() - started
        started = time.perf_counter()
        drill_down = len(collect(store, RUN_ID).samples)  # not kept: the peak is one report's
        timings["collect_s"] = time.perf_counter() - started
        started = time.perf_counter()
        out = write_report(store, RUN_ID, home / "report.html")
        timings["write_report_s"] = time.perf_counter() - started
    finally:
        store.close()
    return {**timings, "report_mb": out.stat().st_size / 1e6, "samples": summary.n_samples,
            "checks": summary.n_checks, "verdicts": summary.n_verdicts, "drill_down": drill_down,
            "peak_mb": _peak_mb()}


def time_export(home: Path) -> dict[str, Any]:
    """Another process: what `ragcourt report RUN --export DIR` does after the page, with its own peak."""
    from ragcourt.report.data import collect
    from ragcourt.report.export import export_run
    from ragcourt.report.sections import method_sections
    from ragcourt.stores.records import RecordStore

    store = RecordStore(home / "store.sqlite")
    try:
        started = time.perf_counter()
        data = collect(store, RUN_ID)
        written = export_run(store, data, method_sections(store, data), home / "export")
        seconds = time.perf_counter() - started
    finally:
        store.close()
    return {"export_s": seconds, "files": len(written), "export_mb": sum(p.stat().st_size for p in written) / 1e6,
            "peak_mb": _peak_mb()}


def build_store(home: Path, samples: int) -> dict[str, Any]:
    output = subprocess.run([sys.executable, str(COST_SPEED), "--part", "lexical", str(home), str(samples)],
                            check=True, capture_output=True, text=True).stdout
    return json.loads(output.strip().splitlines()[-1])


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="time the report's queries over a large lexical run")
    parser.add_argument("--home", type=Path, help="workspace holding (or to hold) the run")
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--keep", action="store_true", help="keep a store built into --home")
    parser.add_argument("--time-only", type=Path, help=argparse.SUPPRESS)  # internal: the timing process
    parser.add_argument("--export-only", type=Path, help=argparse.SUPPRESS)  # internal: the export process
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    if args.time_only:
        print(json.dumps(time_queries(args.time_only)))
        return
    if args.export_only:
        print(json.dumps(time_export(args.export_only)))
        return
    home = args.home or Path(tempfile.mkdtemp(prefix="ragcourt-report-queries-"))
    built = not (home / "store.sqlite").exists()
    try:
        if built:
            run = build_store(home, args.samples)
            print(f"built {run['samples']} samples with the lexical judge in {run['wall_s']:.1f} s "
                  f"(peak {run['peak_mb']:.0f} MB)")
        output = subprocess.run([sys.executable, __file__, "--time-only", str(home)], check=True,
                                capture_output=True, text=True).stdout
        found = json.loads(output.strip().splitlines()[-1])
        print(f"store: {found['samples']} samples, {found['checks']} checks, {found['verdicts']} verdicts")
        print(f"open {found['open_s']:.2f} s, summarize {found['summarize_s']:.2f} s, collect "
              f"{found['collect_s']:.2f} s, write_report {found['write_report_s']:.2f} s "
              f"({found['report_mb']:.1f} MB, {found['drill_down']} questions in the drill-down), "
              f"peak {found['peak_mb']:.0f} MB")
        output = subprocess.run([sys.executable, __file__, "--export-only", str(home)], check=True,
                                capture_output=True, text=True).stdout
        exported = json.loads(output.strip().splitlines()[-1])
        print(f"export of every table (collect + export_run): {exported['export_s']:.1f} s, {exported['files']} "
              f"files, {exported['export_mb']:.0f} MB on disk, peak {exported['peak_mb']:.0f} MB")
    finally:
        if built and not (args.home and args.keep):
            shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
