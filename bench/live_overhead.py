"""The app's latency with and without the live handler, at 10% and 100% sampling, per kind of worker.

Run: python bench/live_overhead.py [--requests 60] [--latency-ms 50] [--busy-neighbour] [--worker process thread]

The app is examples/langchain_app (Chroma retriever with feature-hashing embeddings, ChatOpenAI). Its
model is a FakeOpenAIServer (tests/fakes) that answers after a fixed latency; the judge of the live
evaluator is a second FakeOpenAIServer. Both run in their own processes, as real endpoints would, so
the figures measure what the handler costs the app's process: callbacks, the queue, and the evaluation
thread competing for the interpreter (worker "thread"), or the feeder and reader threads that talk to the
worker process (worker "process", the default). Requests are sent one after the other; each setting gets a
warm-up request first; the app without the handler is measured first and again last, and its median over both
is the base (the two are printed, so drift shows). --busy-neighbour runs a process spinning on one core for
the whole measurement. Exit status 1 when the median overhead of the process worker at 100% sampling is 1%
or more.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the fakes
sys.path.insert(0, str(ROOT / "tests" / "scenarios" / "live"))  # the example app and the agreeable judge
QUESTIONS = [json.loads(line)["question"]
             for line in (ROOT / "examples" / "langchain_app" / "questions.jsonl").read_text().splitlines() if line]
LIMIT = 0.01


def spin() -> None:
    """The busy neighbour: a process that keeps one core busy until it is killed."""
    while True:
        pass


def serve(role: str, latency_s: float) -> None:
    """Child process: one FakeOpenAIServer; prints its base URL, serves until stdin closes."""
    from fakes.openai_server import FakeOpenAIServer
    from live_helpers import first_context_sentence, judge_builders

    if role == "app":
        def answer(request):
            time.sleep(latency_s)
            return first_context_sentence(request)
        server = FakeOpenAIServer(responder=answer)
    else:
        server = FakeOpenAIServer(builders=judge_builders("yes"))
    with server:
        print(server.base_url, flush=True)
        sys.stdin.read()


def start_server(role: str, latency_s: float) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen([sys.executable, __file__, "--serve", role, "--latency-ms", str(latency_s * 1000)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


def measure(app, requests: int, callbacks: list) -> list[float]:
    app.invoke(QUESTIONS[0], config={"callbacks": callbacks})  # warm-up
    latencies = []
    for number in range(requests):
        started = time.perf_counter()
        app.invoke(QUESTIONS[number % len(QUESTIONS)], config={"callbacks": callbacks})
        latencies.append(time.perf_counter() - started)
    return latencies


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=60)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--busy-neighbour", action="store_true", help="a process spinning on one core meanwhile")
    parser.add_argument("--worker", nargs="+", choices=("process", "thread"), default=["process", "thread"])
    parser.add_argument("--serve", choices=("app", "judge", "spin"))
    args = parser.parse_args()
    if args.serve == "spin":
        spin()
    if args.serve:
        serve(args.serve, args.latency_ms / 1000)
        return 0

    from live_helpers import example_app, example_store

    from ragcourt.runs.live import LiveEvaluator, live_config
    from ragcourt.schema.config import JudgeSpec

    app_server, app_url = start_server("app", args.latency_ms / 1000)
    judge_server, judge_url = start_server("judge", 0.0)
    neighbour = subprocess.Popen([sys.executable, __file__, "--serve", "spin"]) if args.busy_neighbour else None
    rows = []
    try:
        app = example_app.build_app(example_app.build_retriever(example_store()),
                                    example_app.build_llm(app_url, "fake-model"))
        baseline = measure(app, args.requests, [])
        rows.append(("no handler (first)", baseline, None))
        for worker in args.worker:
            for rate in (0.1, 1.0):
                with tempfile.TemporaryDirectory() as home:
                    config = live_config(judges=(JudgeSpec(model=f"openai:fake-model@{judge_url}", id="judge"),))
                    live = LiveEvaluator(home=home, run_id="bench", config=config, sample_rate=rate, seed=0,
                                         worker=worker)
                    with live:
                        latencies = measure(app, args.requests, [live.handler])
                        live.flush(timeout=120)
                    rows.append((f"{worker}, {rate:.0%} sampled", latencies, live.counts()))
        last = measure(app, args.requests, [])
        rows.append(("no handler (last)", last, None))
    finally:
        if neighbour is not None:
            neighbour.kill()
            neighbour.wait()
        for process in (app_server, judge_server):
            assert process.stdin is not None
            process.stdin.close()
            process.wait(timeout=10)

    base = statistics.median(baseline + last)
    print(f"app latency over {args.requests} sequential requests; model endpoint latency {args.latency_ms:.0f} ms; "
          f"busy neighbour {'on' if args.busy_neighbour else 'off'}; "
          f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} CPUs")
    base_mean = statistics.fmean(baseline + last)
    print(f"base (both no-handler runs): median {base * 1000:.1f} ms, mean {base_mean * 1000:.1f} ms "
          "(latencies come in steps of about 4 ms on this machine: a median moves a whole step or not at all, "
          "so the mean is printed too)")
    print(f"{'setting':<24}{'median ms':>10}{'p90 ms':>9}{'overhead':>10}{'mean ms':>9}{'by mean':>9}  live evaluator")
    overhead_full = None
    for name, latencies, counts in rows:
        median = statistics.median(latencies)
        p90 = statistics.quantiles(latencies, n=10)[-1]
        overhead = median / base - 1
        if name == "process, 100% sampled":
            overhead_full = overhead
        evaluated = "" if counts is None else (f"{counts.evaluated} evaluated, {counts.dropped} dropped, "
                                               f"{counts.not_sampled} not sampled")
        mean = statistics.fmean(latencies)
        print(f"{name:<24}{median * 1000:>10.1f}{p90 * 1000:>9.1f}{overhead:>+10.1%}{mean * 1000:>9.1f}"
              f"{mean / base_mean - 1:>+9.1%}  {evaluated}")
    if overhead_full is None:
        return 0
    verdict = "under" if overhead_full < LIMIT else "NOT under"
    print(f"median overhead of the process worker at 100% sampling: {overhead_full:+.1%} ({verdict} {LIMIT:.0%})")
    return 0 if overhead_full < LIMIT else 1


if __name__ == "__main__":
    sys.exit(main())
