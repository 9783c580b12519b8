"""The validity suite on the shared human-labelled slices: figures for the README (calibrate section).

    python bench/validity_suite.py [--data /work/shared/data] [--bootstrap 1000] [--wice-limit N]
                                   [--no-llm | --llm-only] [--suite wice --suite hotpotqa]

For each slice (RAGChecker pairs, WiCE claims, HotpotQA paragraphs) it runs `ragcourt calibrate --suite`'s
code with two configurations: the two baseline judges (`--judge lexical --judge semantic`), and a scripted LLM
judge with logprobs: bench/sim_server.py --logprobs started on 127.0.0.1, asked with json_schema output so
its decision tokens carry probabilities. The simulated judge draws its decisions from seeded probabilities
that ignore the prompt: its figures prove the plumbing (probabilities read, AUROC computed, n/a where an LLM
gives none), not any judge's quality. HotpotQA asks each paragraph in a call of its own (one target), where
an LLM's list of linked ids gives a P(yes) (judging/decision_tokens.py). On WiCE and HotpotQA it also learns
each judge's P(yes) threshold (balanced accuracy, 5-fold cross-validated) and prints the in-sample and
held-out figures. Nothing is tuned
on these figures: the rules' thresholds are the documented ones, and a learned threshold is reported, not
adopted. Prints each suite's tables and its wall and CPU seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ragcourt.commands.validity_tables import print_suite
from ragcourt.runs.models import Models
from ragcourt.runs.workspace import Workspace
from ragcourt.schema.calibration import ThresholdObjective
from ragcourt.schema.config import EvalConfig, JudgeSpec
from ragcourt.validity.measure import Suite
from ragcourt.validity.suite import run_suite

FILES = {Suite.RAGCHECKER: "ragchecker_pairs/human_labeled_sample.json",
         Suite.WICE: "wice/claim_dev_sample_60.jsonl", Suite.HOTPOTQA: "hotpotqa/dev_sample_100.jsonl"}


def start_sim() -> tuple[subprocess.Popen[str], str]:
    server = subprocess.Popen([sys.executable, str(Path(__file__).with_name("sim_server.py")), "--latency-ms", "0",
                               "--logprobs"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    return server, server.stdout.readline().strip()


def measure(suite: Suite, path: Path, specs: tuple[JudgeSpec, ...], home: Path, *, bootstrap: int,
            limit: int | None) -> None:
    config = EvalConfig(judges=specs)
    store = Workspace(home).open_store()
    try:
        judges = Models(config, store).judges()
        fit = None if suite is Suite.RAGCHECKER else ThresholdObjective.BALANCED_ACCURACY
        wall, cpu = time.perf_counter(), time.process_time()
        report = asyncio.run(run_suite(suite, path, judges, {s.judge_id: s.model for s in specs}, store,
                                       limit=limit, n_resamples=bootstrap, fit=fit))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    finally:
        store.close()
    print_suite(report)
    print(f"{suite} with {', '.join(s.judge_id for s in specs)}: {wall:.1f} s wall, {cpu:.1f} s CPU "
          f"(this process), limit {limit or 'none'}\n", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path("/work/shared/data"))
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--wice-limit", type=int, default=None, help="only the first N WiCE claims")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--no-llm", action="store_true", help="only the baseline judges")
    which.add_argument("--llm-only", action="store_true", help="only the scripted LLM judge")
    parser.add_argument("--suite", type=Suite, action="append", help="repeatable; default: all three")
    args = parser.parse_args()
    baselines = (JudgeSpec(model="lexical"), JudgeSpec(model="semantic"))
    server, url = (None, "") if args.no_llm else start_sim()
    try:
        with tempfile.TemporaryDirectory() as home:
            for suite in args.suite or list(Suite):
                limit = args.wice_limit if suite is Suite.WICE else None
                path = args.data / FILES[suite]
                if not args.llm_only:
                    measure(suite, path, baselines, Path(home), bootstrap=args.bootstrap, limit=limit)
                if server is not None:
                    llm = (JudgeSpec(model=f"openai:sim@{url}#json_schema", id="sim-llm", logprobs=True),)
                    measure(suite, path, llm, Path(home), bootstrap=args.bootstrap, limit=limit)
    finally:
        if server is not None and server.stdin is not None:
            server.stdin.close()  # the server serves until its stdin closes
            server.wait(timeout=10)


if __name__ == "__main__":
    main()
