"""The app's latency with and without the live handler, at 10% and 100% sampling, per kind of worker.

Run: python bench/live_overhead.py [--requests 1200] [--rounds 60] [--latency-ms 50] [--busy-neighbour]
                                   [--worker process thread] [--rates 0.1 1.0]

The app is examples/langchain_app (Chroma retriever with feature-hashing embeddings, ChatOpenAI). Its model is a
FakeOpenAIServer (tests/fakes) that answers after a fixed latency, in its own process at normal priority, as the
app's model server would be. The judge of the live evaluator is a second FakeOpenAIServer; it stands for a remote
API, which does not run on the app's machine, so here it runs at the lowest CPU priority (the same as the worker:
live.process.run_in_background) rather than taking turns with the app on the same cores. Both servers set
TCP_NODELAY, as production HTTP servers do: http.server's default (Nagle on, headers and body sent apart) would
make each answer wait for the client's delayed ACK, 40 ms more than the latency asked for.

Interleaved rounds: every setting (no handler, and each worker at each sampling rate, all started beforehand)
serves one block of requests per round, in a shuffled order, so a change of the machine's load during the bench
reaches all settings alike. Before each block every evaluator finishes its backlog (the block without the handler
must not pay for the evaluation of requests of the block before it); each block starts with a warm-up request.
Printed per setting: median, 10%-trimmed mean and p90 of the latencies, the overhead of each against the setting
without the handler, the spread of the overhead over rounds (each round's block median against the same round's
block without the handler), a 95% bootstrap interval of the median overhead (the requests of both settings
resampled), and the CPU time of the app's process per request (all its threads). --busy-neighbour runs a process
spinning on one core for the whole measurement. The load average is printed at start and end.
Exit status 1 when the median overhead of the process worker at 100% sampling is 1% or more.

Why 1,200 requests a setting: a latency's spread here is a few ms, so the median of 240 requests moves by about
0.3 ms (0.5%) from one run to the next, as much as half the 1% to tell apart; the interval says how sure a figure
is. Five settings take about 7 minutes.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import random
import socketserver
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the fakes
sys.path.insert(0, str(ROOT / "tests" / "scenarios" / "live"))  # the example app and the agreeable judge
QUESTIONS = [json.loads(line)["question"]
             for line in (ROOT / "examples" / "langchain_app" / "questions.jsonl").read_text().splitlines() if line]
LIMIT = 0.01
TRIM = 0.1  # share of latencies cut from each end for the trimmed mean
RESAMPLES = 1000  # of the bootstrap interval
VERDICT_SETTING = "process, 100% sampled"


def spin() -> None:
    """The busy neighbour: a process that keeps one core busy until it is killed."""
    while True:
        pass


def serve(role: str, latency_s: float) -> None:
    """Child process: one FakeOpenAIServer; prints its base URL, serves until stdin closes."""
    from fakes.openai_server import FakeOpenAIServer
    from live_helpers import first_context_sentence, judge_builders

    # Every handler of this process answers in one segment's time, not after the client's delayed ACK.
    socketserver.StreamRequestHandler.disable_nagle_algorithm = True
    if role == "app":
        def answer(request):
            time.sleep(latency_s)
            return first_context_sentence(request)
        server = FakeOpenAIServer(responder=answer)
    else:
        from ragcourt.live.process import run_in_background

        run_in_background()  # a remote API in production: not a competitor of the app for this machine's cores
        server = FakeOpenAIServer(builders=judge_builders("yes"))
    with server:
        print(server.base_url, flush=True)
        sys.stdin.read()


def start_server(role: str, latency_s: float) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen([sys.executable, __file__, "--serve", role, "--latency-ms", str(latency_s * 1000)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


@dataclass
class Setting:
    name: str
    live: Any = None  # the LiveEvaluator, None for the app without the handler
    latencies: list[float] = field(default_factory=list)
    block_medians: list[float] = field(default_factory=list)
    cpu_s: float = 0.0  # CPU time of the app's process over this setting's measured requests

    @property
    def callbacks(self) -> list[Any]:
        return [] if self.live is None else [self.live.handler]


def serve_block(app: Any, setting: Setting, requests: int) -> None:
    """One block: a warm-up request, then `requests` timed ones, one after the other."""
    app.invoke(QUESTIONS[0], config={"callbacks": setting.callbacks})
    latencies = []
    cpu_started = time.process_time()
    for number in range(requests):
        started = time.perf_counter()
        app.invoke(QUESTIONS[number % len(QUESTIONS)], config={"callbacks": setting.callbacks})
        latencies.append(time.perf_counter() - started)
    setting.cpu_s += time.process_time() - cpu_started
    setting.latencies.extend(latencies)
    setting.block_medians.append(statistics.median(latencies))


def trimmed_mean(values: list[float]) -> float:
    cut = int(len(values) * TRIM)
    ordered = sorted(values)
    return statistics.fmean(ordered[cut:len(ordered) - cut])


def median_overhead_interval(latencies: list[float], base: list[float], seed: int = 0) -> tuple[float, float]:
    """95% bootstrap interval of median(latencies) / median(base) - 1."""
    draw = random.Random(seed)
    ratios = sorted(statistics.median(draw.choices(latencies, k=len(latencies)))
                    / statistics.median(draw.choices(base, k=len(base))) - 1 for _ in range(RESAMPLES))
    return ratios[int(0.025 * RESAMPLES)], ratios[int(0.975 * RESAMPLES) - 1]


def measure(app: Any, settings: list[Setting], rounds: int, block: int, seed: int) -> None:
    order = random.Random(seed)
    for _ in range(rounds):
        for setting in order.sample(settings, len(settings)):
            for other in settings:  # nothing of an earlier block is evaluated during this one
                if other.live is not None and not other.live.flush(timeout=300):
                    raise RuntimeError(f"{other.name}: the evaluator did not catch up within 300 s")
            serve_block(app, setting, block)


def report(settings: list[Setting], args: argparse.Namespace,
           loads: tuple[str, str]) -> tuple[float, tuple[float, float]]:
    """Prints the table; returns the median overhead of the verdict's setting and its 95% interval."""
    base = settings[0]
    base_median, base_trimmed = statistics.median(base.latencies), trimmed_mean(base.latencies)
    requests = len(base.latencies)
    print(f"app latency over {requests} sequential requests per setting ({args.rounds} interleaved rounds of "
          f"{requests // args.rounds}); model endpoint latency {args.latency_ms:.0f} ms; "
          f"busy neighbour {'on' if args.busy_neighbour else 'off'}; "
          f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} CPUs; "
          f"load average at start {loads[0]}, at end {loads[1]}")
    print(f"{'setting':<24}{'median':>8}{'trimmed':>9}{'p90':>7}{'overhead':>10}{'95% interval':>16}{'trimmed':>9}"
          f"{'rounds q1..q3':>17}{'cpu/req':>9}  live evaluator")
    print(f"{'':<24}{'ms':>8}{'mean ms':>9}{'ms':>7}{'(median)':>10}{'(median)':>16}{'(mean)':>9}{'(median)':>17}"
          f"{'ms':>9}")
    verdict = 0.0, (0.0, 0.0)
    for setting in settings:
        median, trimmed = statistics.median(setting.latencies), trimmed_mean(setting.latencies)
        p90 = statistics.quantiles(setting.latencies, n=10)[-1]
        by_round = [mine / theirs - 1 for mine, theirs in zip(setting.block_medians, base.block_medians, strict=True)]
        q1, _, q3 = statistics.quantiles(by_round, n=4) if len(by_round) > 1 else (by_round[0],) * 3
        overhead = median / base_median - 1
        low, high = median_overhead_interval(setting.latencies, base.latencies)
        if setting.name == VERDICT_SETTING:
            verdict = overhead, (low, high)
        counts = setting.live.counts() if setting.live is not None else None
        evaluated = "" if counts is None else (f"{counts.evaluated} evaluated, {counts.dropped} dropped, "
                                               f"{counts.not_sampled} not sampled")
        interval = "" if setting is base else f"{low:+.1%}..{high:+.1%}"
        print(f"{setting.name:<24}{median * 1000:>8.1f}{trimmed * 1000:>9.1f}{p90 * 1000:>7.1f}{overhead:>+10.1%}"
              f"{interval:>16}{trimmed / base_trimmed - 1:>+9.1%}{f'{q1:+.1%}..{q3:+.1%}':>17}"
              f"{setting.cpu_s / len(setting.latencies) * 1000:>9.2f}  {evaluated}")
    return verdict


def load_average() -> str:
    return " ".join(f"{load:.2f}" for load in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=1200, help="timed requests per setting, over all rounds")
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--busy-neighbour", action="store_true", help="a process spinning on one core meanwhile")
    parser.add_argument("--worker", nargs="+", choices=("process", "thread"), default=["process", "thread"])
    parser.add_argument("--rates", nargs="+", type=float, default=[0.1, 1.0], help="sampling rates measured")
    parser.add_argument("--seed", type=int, default=0, help="the order of the settings in each round")
    parser.add_argument("--serve", choices=("app", "judge", "spin"))
    args = parser.parse_args()
    if args.serve == "spin":
        spin()
    if args.serve:
        serve(args.serve, args.latency_ms / 1000)
        return 0
    if args.requests < args.rounds or args.rounds < 1:
        parser.error("--requests must be at least --rounds (at least 1): every round has a block of each setting")

    from live_helpers import example_app, example_store

    from ragcourt.live.evaluator import LiveEvaluator, live_config
    from ragcourt.schema.config import JudgeSpec

    loads = [load_average()]
    app_server, app_url = start_server("app", args.latency_ms / 1000)
    judge_server, judge_url = start_server("judge", 0.0)
    neighbour = subprocess.Popen([sys.executable, __file__, "--serve", "spin"]) if args.busy_neighbour else None
    try:
        with contextlib.ExitStack() as stack:
            app = example_app.build_app(example_app.build_retriever(example_store()),
                                        example_app.build_llm(app_url, "fake-model"))
            config = live_config(judges=(JudgeSpec(model=f"openai:fake-model@{judge_url}", id="judge"),))
            settings = [Setting("no handler")]
            for worker in args.worker:
                for rate in args.rates:
                    home = stack.enter_context(tempfile.TemporaryDirectory())
                    live = stack.enter_context(LiveEvaluator(home=home, run_id="bench", config=config,
                                                             sample_rate=rate, seed=0, worker=worker))
                    settings.append(Setting(f"{worker}, {rate:.0%} sampled", live))
            measure(app, settings, args.rounds, args.requests // args.rounds, args.seed)
            for setting in settings:
                if setting.live is not None:
                    setting.live.flush(timeout=300)
    finally:
        if neighbour is not None:
            neighbour.kill()
            neighbour.wait()
        for process in (app_server, judge_server):
            assert process.stdin is not None
            process.stdin.close()
            process.wait(timeout=10)
    loads.append(load_average())
    overhead, (low, high) = report(settings, args, (loads[0], loads[1]))
    if not any(setting.name == VERDICT_SETTING for setting in settings):
        return 0
    verdict = "under" if overhead < LIMIT else "NOT under"
    print(f"median overhead of the process worker at 100% sampling: {overhead:+.1%} ({verdict} {LIMIT:.0%}; "
          f"95% interval {low:+.1%}..{high:+.1%})")
    return 0 if overhead < LIMIT else 1


if __name__ == "__main__":
    sys.exit(main())
