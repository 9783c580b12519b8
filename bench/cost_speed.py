"""LLM calls, tokens and time per sample of ragcourt against a simulated LLM server (bench/sim_server.py).

    python bench/cost_speed.py [--hotpot 100 --long-form 20 --latency-ms 200 --llm-concurrency 32]
    python bench/cost_speed.py --scale          # the 1,000-sample re-run and the 10,000-sample lexical run

Samples: HotpotQA dev questions with precomputed contexts (the gold paragraphs plus the three corpus
paragraphs that share most words with the question, ranked by that overlap) and an extractive answer;
long-form RAGChecker questions with their reference answer, the first model's response as the answer, and
the five passages (three-sentence windows of all reference answers) that share most words with the query.
The system under test is `Precomputed`, so every LLM call is the evaluator's: one LLM judge and the LLM
decomposer, both on the simulated server, with Q-CARE and element checks (the RAGAS-equivalent diagnostics).

Figures: calls per sample by output schema (and judge calls by prompt), prompt and completion tokens per
sample, wall time, achieved concurrency (the server's summed request time / wall time), the ideal time
(the larger of: every call at the server's mean latency spread over the LLM concurrency; and one sample's
chain of LLM rounds), the overhead ratio (wall / ideal), HTTP calls on an immediate re-run of the same
run (and of a new run id over the same store, served by the LLM cache), and the peak resident memory.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragcourt.data.loaders import BundledDataset, bundled, load_hotpotqa, load_ragchecker_pairs
from ragcourt.llm.limits import EndpointLimiter
from ragcourt.metrics.text import overlap, sentences
from ragcourt.runs import api
from ragcourt.schema import Check, Chunk, Sample, Verdict, content_id
from ragcourt.schema.config import Batching, EvalConfig, JudgeSpec, Method
from ragcourt.stores.records import RecordStore
from ragcourt.systems import ExtractiveGenerator, Precomputed

SIM_SERVER = Path(__file__).resolve().parent / "sim_server.py"
CONTEXT_K = 5
# LLM rounds one sample needs in sequence: the splits (question, reference and answer at once), then the judge calls.
RAGCOURT_ROUNDS = 2


# --------------------------------------------------------------------------- the server


@dataclass
class Sim:
    process: subprocess.Popen[str]
    base_url: str
    latency_ms: float

    def stats(self) -> dict[str, Any]:
        with urllib.request.urlopen(self.base_url.removesuffix("/v1") + "/sim/stats") as response:
            return json.loads(response.read())

    def reset(self) -> None:
        request = urllib.request.Request(self.base_url.removesuffix("/v1") + "/sim/reset", method="POST", data=b"")
        urllib.request.urlopen(request).read()

    @property
    def model(self) -> str:
        return f"openai:sim@{self.base_url}"


@contextmanager
def sim_server(latency_ms: float, *extra: str) -> Iterator[Sim]:
    """The simulated server in its own process (its own core: it must not compete with the evaluator)."""
    process = subprocess.Popen([sys.executable, str(SIM_SERVER), "--latency-ms", str(latency_ms), *extra],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdin is not None
    try:
        yield Sim(process, process.stdout.readline().strip(), latency_ms)
    finally:
        process.stdin.close()
        process.wait(timeout=10)


# --------------------------------------------------------------------------- samples


def _extractive_answer(question: str, chunks: Sequence[Chunk]) -> str:
    return asyncio.run(ExtractiveGenerator().generate(question, chunks)).text


def _ranked(question: str, pool: Sequence[Chunk], k: int, exclude: set[str] = frozenset()) -> list[Chunk]:  # type: ignore[assignment]
    scored = sorted((c for c in pool if c.id not in exclude), key=lambda c: (-overlap(question, c.text), c.id))
    return scored[:k]


def hotpot_samples(n: int) -> list[Sample]:
    data = load_hotpotqa(bundled(BundledDataset.HOTPOTQA_DEV_100))
    out = []
    for sample in data.samples[:n]:
        gold = list(sample.gold_documents)
        distractors = _ranked(sample.question, data.corpus, CONTEXT_K - len(gold), {c.id for c in gold})
        chunks = _ranked(sample.question, [*gold, *distractors], CONTEXT_K)
        contexts = tuple(c.model_copy(update={"rank": i}) for i, c in enumerate(chunks, start=1))
        out.append(sample.model_copy(update={"contexts": contexts,
                                             "answer": _extractive_answer(sample.question, contexts)}))
    return out


def long_form_samples(n: int) -> list[Sample]:
    pairs = load_ragchecker_pairs(bundled(BundledDataset.RAGCHECKER_PAIRS))
    passages: dict[str, Chunk] = {}
    for pair in pairs:
        said = sentences(pair.gt_answer)
        for start in range(0, len(said), 3):
            text = " ".join(said[start:start + 3])
            passages.setdefault(content_id("passage", text), Chunk(id=content_id("passage", text), text=text,
                                                                    title=f"{pair.dataset} {pair.instance_id}"))
    out = []
    for pair in pairs[:n]:
        chunks = _ranked(pair.query, list(passages.values()), CONTEXT_K)
        contexts = tuple(c.model_copy(update={"rank": i}) for i, c in enumerate(chunks, start=1))
        out.append(pair.to_sample().model_copy(update={"contexts": contexts, "answer": pair.model1.response}))
    return out


def bench_samples(hotpot: int, long_form: int, total: int | None = None) -> list[Sample]:
    """`hotpot` + `long_form` samples; with `total`, repeated as distinct variants: a suffix on the question, the
    answer and the reference answer, so no two samples share a prompt or a split (each variant needs its own
    sub-queries, claims and elements, as distinct samples do) and the LLM cache cannot serve one from another."""
    base = [*hotpot_samples(hotpot), *long_form_samples(long_form)]
    if total is None:
        return base
    out = []
    for index in range(total):
        sample, variant = base[index % len(base)], index // len(base)
        suffix = f" (variant {variant})"
        out.append(sample if variant == 0 else sample.model_copy(update={
            "id": f"{sample.id}~{variant}", "question": sample.question + suffix,
            "answer": (sample.answer or "") + suffix,
            "reference_answer": sample.reference_answer + suffix if sample.reference_answer else None}))
    return out


# --------------------------------------------------------------------------- running ragcourt


def llm_config(sim: Sim, batching: Batching, llm_concurrency: int, sample_concurrency: int,
               methods: Sequence[Method] = (Method.QCARE, Method.ELEMENTS)) -> EvalConfig:
    return EvalConfig(judges=(JudgeSpec(model=sim.model, id="sim-judge"),), decomposer=sim.model,
                      batching=batching, llm_concurrency=llm_concurrency, concurrency=sample_concurrency,
                      top_k=CONTEXT_K, methods=tuple(methods))


async def _run(samples: Sequence[Sample], config: EvalConfig, home: Path, run_id: str) -> int:
    count = 0
    async for _ in api.astream(samples, Precomputed(), config=config, home=home, run_id=run_id):
        count += 1
    return count


def run_ragcourt(samples: Sequence[Sample], config: EvalConfig, home: Path, run_id: str) -> float:
    started = time.perf_counter()
    finished = asyncio.run(_run(samples, config, home, run_id))
    assert finished == len(samples), f"{finished} of {len(samples)} samples finished"
    return time.perf_counter() - started


@contextmanager
def slot_holds() -> Iterator[list[float]]:
    """Seconds each request held an endpoint slot (ragcourt's limiter), against the server's own time per
    request: what the client does inside the slot (building, sending, parsing) or waits for (the loop)."""
    holds: list[float] = []
    enter, leave = EndpointLimiter.__aenter__, EndpointLimiter.__aexit__
    entered: dict[asyncio.Task[Any] | None, float] = {}

    async def timed_enter(self: EndpointLimiter) -> EndpointLimiter:
        limiter = await enter(self)
        entered[asyncio.current_task()] = time.perf_counter()
        return limiter

    async def timed_leave(self: EndpointLimiter, *exc: Any) -> None:
        holds.append(time.perf_counter() - entered.pop(asyncio.current_task()))
        await leave(self, *exc)

    EndpointLimiter.__aenter__, EndpointLimiter.__aexit__ = timed_enter, timed_leave  # type: ignore[method-assign]
    try:
        yield holds
    finally:
        EndpointLimiter.__aenter__, EndpointLimiter.__aexit__ = enter, leave  # type: ignore[method-assign]


def peak_memory_mb() -> float | None:
    """VmHWM of this process (Linux), else None."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def judge_calls_by_prompt(home: Path, run_id: str) -> Counter[str]:
    """Judge calls per prompt, from the store: one call per distinct (sample, condition, prompt) batch."""
    store = RecordStore(home / "store.sqlite")
    try:
        checks: dict[str, Check] = {c.id: c for c in store.checks_for(run_id)}
        verdicts: list[Verdict] = store.get_verdicts(list(checks))
    finally:
        store.close()
    batches = {(checks[v.check_id].sample_id, checks[v.check_id].condition.key, v.prompt_id) for v in verdicts}
    return Counter(prompt or "?" for _, _, prompt in batches)


@dataclass
class Measured:
    """One evaluator's run against the simulated server."""

    name: str
    samples: int
    wall_s: float
    stats: dict[str, Any]
    rounds: int
    llm_concurrency: int
    rerun_calls: int | None = None
    rerun_new_id_calls: int | None = None
    rerun_s: float | None = None
    calls_by_prompt: dict[str, int] | None = None
    peak_mb: float | None = None
    slot_hold_s: tuple[float, ...] = ()
    cpu_s: float | None = None  # process time of the evaluator over the run (its own CPU, all its threads)
    extra: dict[str, Any] = field(default_factory=dict)  # what a benchmark adds (follow-ups, metrics scored)

    @property
    def calls(self) -> int:
        return int(self.stats["requests"])

    def per_sample(self, key: str) -> float:
        return float(self.stats[key]) / self.samples

    @property
    def mean_service_s(self) -> float:
        return self.stats["busy_s"] / self.calls if self.calls else 0.0

    @property
    def achieved_concurrency(self) -> float:
        return self.stats["busy_s"] / self.wall_s

    @property
    def ideal_s(self) -> float:
        return max(self.calls * self.mean_service_s / self.llm_concurrency, self.rounds * self.mean_service_s)

    @property
    def overhead(self) -> float:
        return self.wall_s / self.ideal_s if self.ideal_s else float("nan")


def measure_ragcourt(sim: Sim, samples: Sequence[Sample], batching: Batching, llm_concurrency: int,
                     sample_concurrency: int, home: Path, methods: Sequence[Method] = (Method.QCARE, Method.ELEMENTS),
                     reruns: bool = True, name: str | None = None) -> Measured:
    config = llm_config(sim, batching, llm_concurrency, sample_concurrency, methods)
    run_id = f"bench-{batching}"
    sim.reset()
    cpu_started = time.process_time()
    with slot_holds() as holds:
        wall = run_ragcourt(samples, config, home, run_id)
    cpu = time.process_time() - cpu_started
    stats = sim.stats()
    label = name or f"ragcourt {batching}"
    if not reruns:
        return Measured(name=label, samples=len(samples), wall_s=wall, stats=stats, rounds=RAGCOURT_ROUNDS,
                        llm_concurrency=llm_concurrency, peak_mb=peak_memory_mb(), slot_hold_s=tuple(holds), cpu_s=cpu)
    sim.reset()
    rerun_started = time.perf_counter()
    run_ragcourt(samples, config, home, run_id)
    rerun_s = time.perf_counter() - rerun_started
    rerun_calls = sim.stats()["requests"]
    sim.reset()
    run_ragcourt(samples, config, home, f"{run_id}-again")
    return Measured(
        name=label, samples=len(samples), wall_s=wall, stats=stats, rounds=RAGCOURT_ROUNDS, cpu_s=cpu,
        llm_concurrency=llm_concurrency, rerun_calls=rerun_calls, rerun_new_id_calls=sim.stats()["requests"],
        rerun_s=rerun_s, calls_by_prompt=dict(judge_calls_by_prompt(home, run_id)), peak_mb=peak_memory_mb(),
        slot_hold_s=tuple(holds),
    )


# --------------------------------------------------------------------------- printing


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() else ""
    return (f"{platform.system()} {platform.release()}, {os.cpu_count()} CPUs ({cpu}), "
            f"{platform.python_implementation()} {platform.python_version()}")


def print_runs(runs: Sequence[Measured]) -> None:
    print(f"{'evaluator':<22}{'calls/s.':>9}{'prompt tok/s.':>14}{'compl. tok/s.':>14}{'wall s':>8}"
          f"{'concurr.':>9}{'ideal s':>8}{'wall/ideal':>11}{'re-run calls':>13}{'peak MB':>9}")
    for run in runs:
        rerun = "-" if run.rerun_calls is None else f"{run.rerun_calls}/{run.rerun_new_id_calls}"
        peak = "-" if run.peak_mb is None else f"{run.peak_mb:.0f}"
        print(f"{run.name:<22}{run.calls / run.samples:>9.2f}{run.per_sample('prompt_tokens'):>14.0f}"
              f"{run.per_sample('completion_tokens'):>14.0f}{run.wall_s:>8.2f}{run.achieved_concurrency:>9.1f}"
              f"{run.ideal_s:>8.2f}{run.overhead:>11.2f}{rerun:>13}{peak:>9}")
    described: set[str] = set()
    for run in runs:
        if run.name in described:  # repeats: the table above has each run's figures
            continue
        described.add(run.name)
        by_name = ", ".join(f"{name} {count / run.samples:.2f}" for name, count in sorted(run.stats["by_name"].items()))
        print(f"  {run.name}: calls per sample by output schema: {by_name}")
        if run.calls_by_prompt:
            by_prompt = ", ".join(f"{p} {c / run.samples:.2f}" for p, c in sorted(run.calls_by_prompt.items()))
            print(f"  {run.name}: judge calls per sample by prompt: {by_prompt}")
        if run.slot_hold_s:
            cuts = statistics.quantiles(run.slot_hold_s, n=10)
            print(f"  {run.name}: endpoint slot held per request: mean {statistics.mean(run.slot_hold_s) * 1000:.1f} ms, "
                  f"median {cuts[4] * 1000:.1f}, p90 {cuts[8] * 1000:.1f} (the server's own time per request: "
                  f"{run.mean_service_s * 1000:.1f} ms)")
        if run.rerun_s is not None:
            print(f"  {run.name}: immediate re-run of the same run: {run.rerun_calls} calls, {run.rerun_s:.2f} s; "
                  f"a new run id over the same store: {run.rerun_new_id_calls} calls")


# --------------------------------------------------------------------------- the scale targets


def _in_subprocess(part: str, *args: str) -> dict[str, Any]:
    """One scale part in a fresh process, so its peak memory is its own; it prints one JSON line last."""
    started = time.perf_counter()
    output = subprocess.run([sys.executable, __file__, "--part", part, *args], check=True, capture_output=True,
                            text=True).stdout
    result = json.loads(output.strip().splitlines()[-1])
    result["process_s"] = time.perf_counter() - started
    return result


def part_llm_run(home: Path, n: int, url: str, batching: Batching) -> dict[str, Any]:
    started = time.perf_counter()
    samples = bench_samples(100, 80, total=n)
    prepare_s = time.perf_counter() - started
    config = EvalConfig(judges=(JudgeSpec(model=f"openai:sim@{url}", id="sim-judge"),), decomposer=f"openai:sim@{url}",
                        batching=batching, llm_concurrency=32, concurrency=64, top_k=CONTEXT_K)
    wall = run_ragcourt(samples, config, home, "scale-llm")
    return {"samples": n, "wall_s": wall, "samples_per_s": n / wall, "peak_mb": peak_memory_mb(),
            "prepare_s": prepare_s}


def part_lexical_run(home: Path, n: int) -> dict[str, Any]:
    samples = bench_samples(100, 80, total=n)
    config = EvalConfig(concurrency=64, top_k=CONTEXT_K)  # lexical judge, sentence decomposer: no LLM
    wall = run_ragcourt(samples, config, home, "scale-lexical")
    return {"samples": n, "wall_s": wall, "samples_per_s": n / wall, "peak_mb": peak_memory_mb()}


def part_report(home: Path, run_id: str) -> dict[str, Any]:
    from ragcourt.analysis.summary import summarize
    from ragcourt.report.data import collect

    store = RecordStore(home / "store.sqlite")
    try:
        started = time.perf_counter()
        summarize(store, run_id)
        summary_s = time.perf_counter() - started
        started = time.perf_counter()
        collect(store, run_id)
        collect_s = time.perf_counter() - started
    finally:
        store.close()
    return {"summary_s": summary_s, "report_collect_s": collect_s, "peak_mb": peak_memory_mb()}


def store_mb(home: Path) -> str:
    """The store on disk: the SQLite file plus its write-ahead log (and shared-memory index) when present."""
    files = [home / f"store.sqlite{suffix}" for suffix in ("", "-wal", "-shm")]
    sizes = {f.name: f.stat().st_size / 1e6 for f in files if f.exists()}
    return f"{sum(sizes.values()):.1f} MB (" + ", ".join(f"{name} {mb:.1f}" for name, mb in sizes.items()) + ")"


def scale(args: argparse.Namespace) -> None:
    print(f"machine: {machine()}")
    with tempfile.TemporaryDirectory() as folder, sim_server(0.0) as sim:
        home = Path(folder) / "llm"
        batching = str(args.batching[0])
        first = _in_subprocess("llm", str(home), str(args.rerun_samples), sim.base_url, batching)
        print(f"{args.rerun_samples} samples, LLM judge + decomposer ({batching}), zero-latency server: "
              f"{first['wall_s']:.1f} s = {first['samples_per_s']:.1f} samples/s, {sim.stats()['requests']} calls, "
              f"peak {first['peak_mb']:.0f} MB; store on disk {store_mb(home)}")
        sim.reset()
        again = _in_subprocess("llm", str(home), str(args.rerun_samples), sim.base_url, batching)
        print(f"re-run of that unchanged run: {sim.stats()['requests']} LLM calls, {again['wall_s']:.2f} s in the "
              f"run call ({again['process_s'] - again['prepare_s']:.1f} s including the process start and imports, "
              f"not counting the {again['prepare_s']:.1f} s the benchmark takes to build its samples), "
              f"peak {again['peak_mb']:.0f} MB (the resume's own process); store on disk {store_mb(home)}")
        lexical_home = Path(folder) / "lexical"
        lexical = _in_subprocess("lexical", str(lexical_home), str(args.lexical_samples))
        print(f"{args.lexical_samples} samples, lexical judge: {lexical['wall_s']:.1f} s = "
              f"{lexical['samples_per_s']:.1f} samples/s, peak {lexical['peak_mb']:.0f} MB; store on disk "
              f"{store_mb(lexical_home)}")
        resumed = _in_subprocess("lexical", str(lexical_home), str(args.lexical_samples))
        print(f"re-run of that unchanged lexical run (no LLM configured): {resumed['wall_s']:.2f} s "
              f"in the run call, peak {resumed['peak_mb']:.0f} MB (the resume's own process); store on disk "
              f"{store_mb(lexical_home)}")
        report = _in_subprocess("report", str(lexical_home), "scale-lexical")
        print(f"report queries over that store: summarize {report['summary_s']:.2f} s, "
              f"report data (collect) {report['report_collect_s']:.2f} s")


# --------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="ragcourt cost and speed against a simulated LLM server")
    parser.add_argument("--hotpot", type=int, default=100, help="HotpotQA samples (at most 100)")
    parser.add_argument("--long-form", type=int, default=20, help="RAGChecker long-form samples (at most 80)")
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--jitter-ms", type=float, default=0.0)
    parser.add_argument("--distribution", choices=("fixed", "uniform", "lognormal"), default="fixed")
    parser.add_argument("--tokens-per-s", type=float, default=0.0)
    parser.add_argument("--llm-concurrency", type=int, default=32)
    parser.add_argument("--sample-concurrency", type=int, default=64)
    parser.add_argument("--batching", type=Batching, nargs="+", default=[Batching.PER_SAMPLE, Batching.PER_KIND])
    parser.add_argument("--repeat", type=int, default=1, help="timed runs per batching mode (wall time varies "
                        "with what else the machine does: the median says more than one run)")
    parser.add_argument("--scale", action="store_true", help="the re-run, memory and throughput targets")
    parser.add_argument("--rerun-samples", type=int, default=1000)
    parser.add_argument("--lexical-samples", type=int, default=10000)
    parser.add_argument("--part", nargs="+", help=argparse.SUPPRESS)  # internal: one scale part
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    if args.part:
        name, home, *rest = args.part
        if name == "llm":
            result = part_llm_run(Path(home), int(rest[0]), rest[1], Batching(rest[2]))
        elif name == "lexical":
            result = part_lexical_run(Path(home), int(rest[0]))
        else:
            result = part_report(Path(home), rest[0])
        print(json.dumps(result))
        return
    if args.scale:
        scale(args)
        return
    samples = bench_samples(args.hotpot, args.long_form)
    extra = ["--jitter-ms", str(args.jitter_ms), "--distribution", args.distribution,
             "--tokens-per-s", str(args.tokens_per_s)]
    runs = []
    with tempfile.TemporaryDirectory() as folder, sim_server(args.latency_ms, *extra) as sim:
        for batching in args.batching:
            for repeat in range(args.repeat):  # each in a new workspace: nothing cached
                runs.append(measure_ragcourt(sim, samples, batching, args.llm_concurrency, args.sample_concurrency,
                                             Path(folder) / f"{batching}-{repeat}"))
    print(f"machine: {machine()}")
    hotpot = sum(1 for s in samples if s.metadata.get("source") == "hotpotqa")
    print(f"{len(samples)} samples ({hotpot} HotpotQA, {len(samples) - hotpot} long-form); server latency "
          f"{args.latency_ms:.0f} ms ({args.distribution}), LLM concurrency {args.llm_concurrency}")
    print_runs(runs)
    if args.repeat > 1:
        for batching in args.batching:
            ratios = sorted(run.overhead for run in runs if run.name == f"ragcourt {batching}")
            print(f"ragcourt {batching}: wall / ideal over {len(ratios)} runs: "
                  f"{', '.join(f'{r:.2f}' for r in ratios)}; median {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
