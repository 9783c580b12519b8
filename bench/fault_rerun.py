"""A seeded run through a faulty LLM endpoint, then the same call again: nothing lost, nothing repeated, and in
the end the figures of a run without faults.

    python bench/fault_rerun.py [--samples 40 --faults 0.25 --seed 20 --timeout-s 1.0 --decomposer llm --calls 2]

Two simulated servers (bench/sim_server.py, each in its own process): one with its fault mode on (a seeded share
of chat requests faulted, drawn uniformly from HTTP 500, 429 with Retry-After, timeouts, connection resets,
garbage bodies and truncated bodies), one without. The same evaluation goes to each: `Precomputed` samples (given
contexts and answer), two LLM judges and the LLM decomposer on the server (or `--decomposer sentences`, the rule),
Q-CARE and element checks, the default retry policy (4 tries per call). Against the faulty server it runs
`--calls` times with the same arguments (the derived run id is the same, so each call resumes the one before),
against the clean one once.

Printed, and returned by `measure` (which tests/scenarios/reliability/test_rel_fault_rerun.py calls): faults by
kind; verdicts after each call by status and reason; samples and verdicts lost (a check of the run without one
verdict per judge) or duplicated (a diagnostics line or verdict twice); the server's replies that repeated an
answered conversation; the samples whose figures differ from the clean run's, and which of them are not
flagged (a sample whose split failed says so: its failed splits and the InputFlag of each figure they touch);
and the run's header and flagged-figures line after the last call, as `ragcourt run` prints them.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragcourt.analysis.summary import summarize
from ragcourt.runs import api
from ragcourt.runs.runner import DIAGNOSTICS_FILE
from ragcourt.runs.workspace import Workspace
from ragcourt.schema import Chunk, Sample, SampleDiagnostics
from ragcourt.schema.config import EvalConfig, JudgeSpec, Method
from ragcourt.systems import Precomputed

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/ is no package
from sim_server import running, stats  # noqa: E402

JUDGE_MODELS = ("sim-a", "sim-b")


def samples(n: int) -> list[Sample]:
    """n precomputed samples, each with its own words (so no two share a conversation)."""
    out = []
    for i in range(n):
        chunks = (Chunk(id=f"s{i}-c0", text=f"Mason{i} built tower {i} in {1900 + i}."),
                  Chunk(id=f"s{i}-c1", text=f"Bananas number {i} are yellow."),
                  Chunk(id=f"s{i}-c2", text=f"Tower {i} opened in {1901 + i}."))
        out.append(Sample(id=f"s{i}", question=f"Who built tower {i}? When was tower {i} built?",
                          reference_answer=f"Tower {i} was built by Mason{i}. It was built in {1900 + i}.",
                          contexts=chunks, answer=f"Mason{i} built tower {i}. It is tall."))
    return out


def config_for(url: str, timeout_s: float, llm_decomposer: bool) -> EvalConfig:
    return EvalConfig(judges=tuple(JudgeSpec(model=f"openai:{m}@{url}", id=m) for m in JUDGE_MODELS),
                      decomposer=f"openai:sim-d@{url}" if llm_decomposer else "sentences", methods=(Method.QCARE, Method.ELEMENTS), top_k=3,
                      timeout_s=timeout_s, concurrency=16, llm_concurrency=32)


def comparable(d: SampleDiagnostics) -> dict[str, Any]:
    """Everything a run decides about a sample (timestamps and usage aside)."""
    return {"status": d.status, "metrics": [(m.name, m.value, m.na_reason, m.n, m.n_unscored) for m in d.metrics],
            "elements": [(e.text, e.status) for e in d.elements], "unsupported": d.unsupported_claims,
            "uncovered": d.uncovered_subqueries, "escalations": sorted(d.escalations), "n_checks": d.n_checks,
            "n_unscored": d.n_unscored}


@dataclass
class RunState:
    """What the store holds for a run after one call."""

    verdicts: Counter[str] = field(default_factory=Counter)  # "ok", or "unscored/<reason>"
    lost: int = 0  # checks of the run without a verdict from each judge, and samples without diagnostics
    duplicated: int = 0  # verdicts stored twice for one (check, judge), and samples listed twice in the stream
    diagnostics: dict[str, dict[str, Any]] = field(default_factory=dict)
    flagged: set[str] = field(default_factory=set)  # samples with a failed split (so with flagged figures)
    header: str = ""  # the run's summary header
    flagged_line: str | None = None


def run_state(home: Path, run_id: str, n_samples: int) -> RunState:
    state = RunState()
    with Workspace(home).open_store() as store:
        checks = store.checks_for(run_id)
        verdicts = store.get_verdicts([c.id for c in checks])
        keys = Counter((v.check_id, v.judge_id) for v in verdicts)
        state.duplicated = sum(n - 1 for n in keys.values())
        state.lost = sum((c.id, j) not in keys for c in checks for j in JUDGE_MODELS)
        state.verdicts = Counter("ok" if v.scored else f"unscored/{v.unscored_reason}" for v in verdicts)
        stored = store.get_diagnostics(run_id)
        state.diagnostics = {d.sample_id: comparable(d) for d in stored}
        state.flagged = {d.sample_id for d in stored if d.failed_splits or any(m.flag for m in d.metrics)}
        summary = summarize(store, run_id)
        state.header, state.flagged_line = summary.header(), summary.flagged_line()
    state.lost += n_samples - len(state.diagnostics)
    lines = (home / "runs" / run_id / DIAGNOSTICS_FILE).read_text().splitlines()
    state.duplicated += len(lines) - len({json.loads(line)["sample_id"] for line in lines})
    return state


@dataclass
class Measured:
    faults: dict[str, int]
    chat_requests: int
    states: list[RunState]  # after each call
    repeated_answers: int  # replies to a conversation the server had answered before
    answered: int  # conversations answered over both calls
    clean_answered: int  # conversations the clean server answered
    clean: dict[str, dict[str, Any]]  # the clean run's diagnostics (`comparable`)

    @property
    def first(self) -> RunState:
        return self.states[0]

    @property
    def again(self) -> RunState:
        return self.states[-1]

    @property
    def differing(self) -> list[str]:
        """Samples whose figures differ from the clean run's after the last call."""
        return self.differing_after(len(self.states))

    @property
    def unflagged(self) -> list[str]:
        """Those of them not flagged (what must never happen)."""
        return self.unflagged_after(len(self.states))

    def differing_after(self, call: int) -> list[str]:
        """Samples whose figures after call number `call` (1-based) differ from the clean run's."""
        after = self.states[call - 1].diagnostics
        return sorted((s for s in self.clean if after.get(s) != self.clean[s]), key=lambda s: int(s[1:]))

    def unflagged_after(self, call: int) -> list[str]:
        """Those of them that say nothing of a failed split (no failed_splits, no flagged figure)."""
        return [s for s in self.differing_after(call) if s not in self.states[call - 1].flagged]

    def changed_by(self, call: int) -> int:
        """Samples whose diagnostics call number `call` (1-based, > 1) changed: those it re-opened."""
        before, after = self.states[call - 2].diagnostics, self.states[call - 1].diagnostics
        return sum(before.get(sample_id) != d for sample_id, d in after.items())


def measure(n_samples: int, rate: float, seed: int, timeout_s: float, folder: Path,
            llm_decomposer: bool = True, calls: int = 2) -> Measured:
    batch = samples(n_samples)
    hold = str(timeout_s * 3)
    with running("--faults", str(rate), "--fault-seed", str(seed), "--fault-hold-s", hold) as faulty, \
            running() as clean:
        config = config_for(faulty, timeout_s, llm_decomposer)
        states = []
        for _ in range(calls):
            run_id = api.evaluate(batch, Precomputed(), config=config, home=folder / "faulty").run_id
            states.append(run_state(folder / "faulty", run_id, n_samples))
        faulty_stats = stats(faulty)
        reference = api.evaluate(batch, Precomputed(), config=config_for(clean, timeout_s, llm_decomposer),
                                 home=folder / "clean")
        clean_stats = stats(clean)
    expected = run_state(folder / "clean", reference.run_id, n_samples).diagnostics
    return Measured(
        faults=dict(sorted(faulty_stats["faults"].items())), chat_requests=faulty_stats["chat_requests"],
        states=states, repeated_answers=faulty_stats["repeated_answers"], answered=faulty_stats["answered_conversations"],
        clean_answered=clean_stats["answered_conversations"],
        clean=expected,
    )


def report(m: Measured, n_samples: int, rate: float, seed: int, decomposer: str) -> str:
    faulted = sum(m.faults.values())
    lines = [
        f"{n_samples} samples, {decomposer} decomposer, fault rate {rate:g}, seed {seed}: {m.chat_requests} chat "
        f"requests, {faulted} faulted "
        f"({faulted / max(m.chat_requests, 1):.1%}): " + ", ".join(f"{k} {v}" for k, v in m.faults.items()),
        "| after call | verdicts | by status | samples it changed | lost | duplicated |", "|---|---|---|---|---|---|",
    ]
    for call, state in enumerate(m.states, start=1):
        by_status = ", ".join(f"{k} {v}" for k, v in sorted(state.verdicts.items()))
        changed = "all (new)" if call == 1 else str(m.changed_by(call))
        lines.append(f"| {call} | {sum(state.verdicts.values())} | {by_status} | {changed} | {state.lost} | "
                     f"{state.duplicated} |")
    lines += [
        f"server replies that repeated an answered conversation: {m.repeated_answers}; conversations answered: "
        f"{m.answered} (the clean server: {m.clean_answered})",
        f"samples whose figures differ from the fault-free run after the last call: {len(m.differing)}"
        + (f" ({', '.join(m.differing)})" if m.differing else "")
        + f"; not flagged: {len(m.unflagged)}" + (f" ({', '.join(m.unflagged)})" if m.unflagged else ""),
        f"flagged samples after the last call: {len(m.again.flagged)}"
        + (f" ({', '.join(sorted(m.again.flagged, key=lambda s: int(s[1:])))})" if m.again.flagged else ""),
        f"header: {m.again.header}",
        *([m.again.flagged_line] if m.again.flagged_line else []),
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--faults", type=float, default=0.25)
    parser.add_argument("--seed", type=int, default=20)
    parser.add_argument("--timeout-s", type=float, default=1.0)
    parser.add_argument("--decomposer", choices=("llm", "sentences"), default="llm")
    parser.add_argument("--calls", type=int, default=2, help="how many times the same call runs (2: once again)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        measured = measure(args.samples, args.faults, args.seed, args.timeout_s, Path(folder),
                           args.decomposer == "llm", args.calls)
    print(report(measured, args.samples, args.faults, args.seed, args.decomposer))


if __name__ == "__main__":
    main()
