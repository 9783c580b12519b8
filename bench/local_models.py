"""The bundled local models as judges on the shared human-labelled slices: AUROC, kappa and CPU per check.

    python bench/local_models.py [--data /work/shared/data] [--model smollm2-135m --model gemma3-270m]
                                 [--suite wice --suite hotpotqa] [--wice-limit 20] [--hotpotqa-limit 3]

Each (model, suite) is one `ragcourt calibrate --suite S --file F --judge local:MODEL --logprobs --limit N
--home FRESH --json OUT` in a child process, the command a user runs; the command line is printed with its
figures. A fresh --home for each, so no verdict comes from the cache. CPU is the child's user + system time
(os.wait4), start-up and model load included; a check is one labelled claim (WiCE) or paragraph (HotpotQA),
judged or unscored. AUROC and Cohen's kappa are against the strict WiCE label (supported vs the rest) and
HotpotQA's supporting paragraphs, from the JSON the command writes: kappa over the items the model labelled,
AUROC over those with a P(yes) (logprobs at the decision token). Nothing is tuned on these figures.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ragcourt.llm.spec import BundledModel, ModelSpec, Provider
from ragcourt.validity.measure import HOTPOTQA_SUPPORTING, WICE_STRICT, Suite

FILES = {Suite.WICE: "wice/claim_dev_sample_60.jsonl", Suite.HOTPOTQA: "hotpotqa/dev_sample_100.jsonl"}
REFERENCES = {Suite.WICE: WICE_STRICT, Suite.HOTPOTQA: HOTPOTQA_SUPPORTING}  # the row of the table reported


@dataclass(frozen=True)
class Measurement:
    model: BundledModel
    suite: Suite
    command: str
    items: int  # claims or questions taken
    checks: int  # labelled checks: judged or unscored
    unscored: int
    without_probability: int
    auroc: str
    kappa: str
    cpu_s: float
    wall_s: float
    peak_mb: float

    def row(self) -> str:
        return (f"| {self.model} | {self.suite} | {self.items} | {self.checks} | {self.unscored} | "
                f"{self.without_probability} | {self.auroc} | {self.kappa} | {self.cpu_s / self.checks:.2f} | "
                f"{self.wall_s / self.checks:.2f} | {self.peak_mb:,.0f} |")


def _figure(metric: dict[str, object], interval: dict[str, object]) -> str:
    if metric["value"] is None:
        return f"n/a ({metric['na_reason']})"
    low, high = interval.get("low"), interval.get("high")
    bounds = f" [{low:.2f}, {high:.2f}]" if isinstance(low, float) and isinstance(high, float) else ""
    return f"{metric['value']:.3f}{bounds}"


def _argv(spec: str, suite: Suite, file: str, limit: int | None, bootstrap: int, home: str, figures: str) -> list[str]:
    return ["ragcourt", "calibrate", "--suite", suite.value, "--file", file, "--judge", spec, "--logprobs",
            *(["--limit", str(limit)] if limit else []), "--bootstrap", str(bootstrap), "--home", home,
            "--json", figures]


def measure(model: BundledModel, suite: Suite, data: Path, limit: int | None, bootstrap: int) -> Measurement:
    spec = ModelSpec(provider=Provider.LOCAL, model=model).id
    with tempfile.TemporaryDirectory(prefix="bench-local-models-") as scratch:
        figures, output = Path(scratch) / "figures.json", Path(scratch) / "output.txt"
        argv = _argv(spec, suite, str(data / FILES[suite]), limit, bootstrap, str(Path(scratch) / "home"),
                     str(figures))
        started = time.perf_counter()
        with output.open("wb") as sink:
            child = subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT)
            _, status, usage = os.wait4(child.pid, 0)  # the child's own rusage, not all children's so far
        wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)  # reaped by wait4: tell Popen, so it does not wait
        if child.returncode != 0:
            sys.exit(f"{shlex.join(argv)} exited {child.returncode}:\n{output.read_text(errors='replace')[-3000:]}")
        report = json.loads(figures.read_text())
    row = next(r for r in report["kinds"][0]["rows"] if r["reference"] == REFERENCES[suite])
    shown = _argv(spec, suite, f"$DATA/{FILES[suite]}", limit, bootstrap, "$(mktemp -d)", "figures.json")
    return Measurement(
        model=model, suite=suite, command=" ".join(shown), items=report["n_items"], checks=row["n"] + row["unscored"],
        unscored=row["unscored"], without_probability=row["without_probability"] or 0,
        auroc=_figure(row["auroc"], row["auroc_ci"]), kappa=_figure(row["kappa"], row["kappa_ci"]),
        cpu_s=usage.ru_utime + usage.ru_stime, wall_s=wall, peak_mb=usage.ru_maxrss / 1024)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path("/work/shared/data"))
    parser.add_argument("--model", type=BundledModel, action="append", help="repeatable; default: every bundled model")
    parser.add_argument("--suite", type=Suite, action="append", choices=list(FILES),
                        help="repeatable; default: wice and hotpotqa")
    parser.add_argument("--wice-limit", type=int, default=None, help="only the first N WiCE claims (of 60)")
    parser.add_argument("--hotpotqa-limit", type=int, default=None, help="only the first N HotpotQA questions (of 100)")
    parser.add_argument("--bootstrap", type=int, default=1000)
    args = parser.parse_args()
    limits = {Suite.WICE: args.wice_limit, Suite.HOTPOTQA: args.hotpotqa_limit}
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.1f}; DATA={args.data}", flush=True)
    measured = []
    for suite in args.suite or list(FILES):
        for model in args.model or list(BundledModel):
            found = measure(model, suite, args.data, limits[suite], args.bootstrap)
            print(f"{found.command}\n  {found.cpu_s:.1f} s CPU, {found.wall_s:.1f} s wall, load average "
                  f"{os.getloadavg()[0]:.1f}\n  {found.row()}", flush=True)  # kept if a later one is stopped
            measured.append(found)
    print("\n| model | suite | items | checks | unscored | no P(yes) | AUROC [95% CI] | kappa [95% CI] | CPU s / check "
          "| wall s / check | peak MB |")
    print("|---|---|---:|---:|---:|---:|---|---|---:|---:|---:|")
    for found in measured:
        print(found.row())


if __name__ == "__main__":
    main()
