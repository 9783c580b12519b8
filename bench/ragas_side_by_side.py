"""ragcourt, RAGAS and RAGChecker side by side: the same samples, the same simulated server, the same LLM
concurrency.

    python bench/ragas_side_by_side.py [--hotpot 100 --long-form 80 --latency-ms 200 --llm-concurrency 32]
                                       [--tokens-per-s 50] [--drop-items 0.1 --drop-items-over 4]
                                       [--batching joint per_sample] [--no-ragchecker] [--repeat 3]

Every tool runs --repeat times in interleaved order (ragcourt, RAGAS, RAGChecker, ragcourt, ...), so load drift
lands on all alike; the table shows medians and ranges. Decode time is on (completion tokens at --tokens-per-s
per request). A second interleaved pass against a zero-latency server measures each evaluator's CPU seconds per
sample (the process time of the evaluating process: ragcourt's own, RAGAS's and RAGChecker's worker's).

RAGAS runs in its own virtual environment (default /tmp/ragas-venv, made on first use with the latest
ragas and langchain-openai from PyPI; langchain-community is held below 0.4.2, whose removal of
chat_models.vertexai breaks `import ragas.llms` in ragas 0.4.3), in a subprocess of this script, with
ChatOpenAI and OpenAIEmbeddings pointed at the simulated server (bench/sim_server.py) with a fake key.
Its metrics: Faithfulness, LLMContextRecall, LLMContextPrecisionWithReference and FactualCorrectness
(with --answer-correctness also AnswerCorrectness, which needs embeddings), evaluated with
RunConfig(max_workers = the LLM concurrency). ragcourt (bench/cost_speed.py) runs its Q-CARE, element and
reference checks (every RAGAS metric's counterpart, docs/BENCHMARKS.md) with one LLM judge and the LLM
decomposer, in the batching modes asked (default: joint, two calls per sample). RAGAS is a benchmark
dependency only, never ragcourt's: it lives in its own venv.

RAGChecker (0.1.9, the latest on PyPI) runs in its own venv too (default /tmp/ragchecker-venv: torch 2.13.0,
the CPU build this machine keeps on disk, then ragchecker), all metrics, its LLM extractor and LLM checker
(joint checking of 5 claims, as it defaults) on the simulated server through litellm ("openai/sim" with the
server as api_base), batch sizes = the LLM concurrency. It needs no spaCy model in this mode.

One table: LLM calls, prompt and completion tokens per sample, wall time, wall / ideal, CPU per sample and the
ratios to RAGAS; for ragcourt also the items the server dropped, the follow-up calls and the verdicts left
unscored. Calls and tokens are counted by the server, so every tool is counted the same way.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # at run time imported in the functions that need it: the workers run in other venvs
    from cost_speed import Measured

RAGAS_VENV = Path("/tmp/ragas-venv")
RAGAS_PACKAGES = ("ragas", "langchain-openai", "langchain-community<0.4.2")
# Its longest chain per sample: context precision asks about the contexts one after the other (5 each here).
RAGAS_ROUNDS = 5
RAGCHECKER_VENV = Path("/tmp/ragchecker-venv")
RAGCHECKER_PACKAGES = ("torch==2.13.0", "ragchecker")
# Its phases run one after the other: claims of the responses, of the references, then the four checks.
RAGCHECKER_ROUNDS = 6


def ensure_venv(venv: Path, packages: tuple[str, ...], probe_import: str) -> Path:
    python = venv / "bin" / "python"
    probe = [str(python), "-c", f"import {probe_import}"]
    if python.exists() and subprocess.run(probe, capture_output=True, check=False).returncode == 0:
        return python
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--upgrade", "pip"], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", *packages], check=True)
    return python


# --------------------------------------------------------------------------- the RAGAS side (its own venv)


def ragas_worker(data_path: str, base_url: str, concurrency: int, answer_correctness: bool) -> None:
    """Runs inside the RAGAS venv: evaluates the samples and prints {"wall_s", "scored", "errors"}."""
    import warnings

    warnings.filterwarnings("ignore")
    from langchain_openai import ChatOpenAI, OpenAIEmbeddings
    from ragas import EvaluationDataset, RunConfig, evaluate
    from ragas.embeddings import LangchainEmbeddingsWrapper
    from ragas.llms import LangchainLLMWrapper
    from ragas.metrics import (
        AnswerCorrectness,
        FactualCorrectness,
        Faithfulness,
        LLMContextPrecisionWithReference,
        LLMContextRecall,
    )

    rows = json.loads(Path(data_path).read_text())
    llm = LangchainLLMWrapper(ChatOpenAI(model="sim", base_url=base_url, api_key="sim-key", temperature=0,
                                         max_retries=0))
    embeddings = LangchainEmbeddingsWrapper(OpenAIEmbeddings(model="sim-embed", base_url=base_url, api_key="sim-key",
                                                             check_embedding_ctx_length=False))
    metrics = [Faithfulness(), LLMContextRecall(), LLMContextPrecisionWithReference(), FactualCorrectness()]
    if answer_correctness:
        metrics.append(AnswerCorrectness())
    started, cpu_started = time.perf_counter(), time.process_time()
    result = evaluate(EvaluationDataset.from_list(rows), metrics=metrics, llm=llm, embeddings=embeddings,
                      run_config=RunConfig(max_workers=concurrency, timeout=600, max_retries=0),
                      show_progress=False)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    frame = result.to_pandas()
    scored = {name: int(frame[name].notna().sum()) for name in frame.columns if name not in rows[0]}
    print(json.dumps({"wall_s": wall, "cpu_s": cpu, "scored": scored, "rows": len(frame)}))


def ragchecker_worker(data_path: str, base_url: str, concurrency: int) -> None:
    """Runs inside the RAGChecker venv: all its metrics; prints {"wall_s", "scored", "rows"}."""
    import logging
    import warnings

    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    from loguru import logger
    from ragchecker import RAGChecker, RAGResults
    from ragchecker.metrics import all_metrics

    logger.remove()
    # refchecker calls litellm's batch_completion with max_workers=None: a thread pool of min(32, CPUs + 4),
    # 6 threads on this machine. Equal concurrency means the LLM concurrency, as for the other tools.
    import refchecker.utils
    from litellm import batch_completion

    def batch_completion_at(*call_args: Any, max_workers: int | None = None, **kwargs: Any) -> Any:
        return batch_completion(*call_args, max_workers=concurrency, **kwargs)

    refchecker.utils.batch_completion = batch_completion_at
    results = RAGResults.from_json(Path(data_path).read_text())
    checker = RAGChecker(extractor_name="openai/sim", checker_name="openai/sim", extractor_api_base=base_url,
                         checker_api_base=base_url, openai_api_key="sim-key", batch_size_extractor=concurrency,
                         batch_size_checker=concurrency)
    started, cpu_started = time.perf_counter(), time.process_time()
    checker.evaluate(results, all_metrics)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    scored = {name: sum(1 for r in results.results if r.metrics.get(name) is not None)
              for name in sorted({name for r in results.results for name in r.metrics})}
    print(json.dumps({"wall_s": wall, "cpu_s": cpu, "scored": scored, "rows": len(results.results)}))


# --------------------------------------------------------------------------- the comparison (project venv)


def ragas_rows(samples: list[Any]) -> list[dict[str, Any]]:
    return [{"user_input": s.question, "retrieved_contexts": [c.text for c in s.contexts or ()],
             "response": s.answer or "", "reference": s.reference_answer or ""} for s in samples]


def ragchecker_rows(samples: list[Any]) -> dict[str, Any]:
    return {"results": [{"query_id": s.id, "query": s.question, "gt_answer": s.reference_answer or "",
                         "response": s.answer or "",
                         "retrieved_context": [{"doc_id": c.id, "text": c.text} for c in s.contexts or ()]}
                        for s in samples]}


def run_worker(python: Path, flag: str, args: list[str], env: dict[str, str]) -> dict[str, Any]:
    output = subprocess.run([str(python), __file__, flag, *args], check=True, capture_output=True, text=True,
                            env={**os.environ, **env}).stdout
    return json.loads(output.strip().splitlines()[-1])


@dataclass
class Tool:
    """One evaluator of the comparison: how to run it once against a server, and its name in the table."""

    name: str
    run: Callable[[Any, Path], Measured]


def ragcourt_tool(batching: Any, methods: tuple[Any, ...], args: argparse.Namespace, samples: list[Any]) -> Tool:
    from cost_speed import measure_ragcourt

    from ragcourt.stores.records import RecordStore

    name = f"ragcourt {batching}" + (" +reference" if "reference" in methods else "")

    def run(sim: Any, folder: Path) -> Measured:
        measured = measure_ragcourt(sim, samples, batching, args.llm_concurrency,
                                    args.sample_concurrency or len(samples), folder,
                                    methods, reruns=False, name=name)
        store = RecordStore(folder / "store.sqlite")
        try:
            diagnostics = store.get_diagnostics_without_graphs(f"bench-{batching}")
        finally:
            store.close()
        measured.extra = {"follow_up_calls": sum(d.usage.follow_up_calls for d in diagnostics),
                          "follow_up_checks": sum(d.usage.follow_up_checks for d in diagnostics),
                          "unscored": sum(d.n_unscored for d in diagnostics), "samples_scored": len(diagnostics)}
        return measured

    return Tool(name, run)


def worker_tool(name: str, python: Path, flag: str, data: Path, extra_args: list[str], env: dict[str, str],
                rounds: int, concurrency: int, samples: int) -> Tool:
    from cost_speed import Measured

    def run(sim: Any, folder: Path) -> Measured:
        sim.reset()
        out = run_worker(python, flag, [str(data), sim.base_url, str(concurrency), *extra_args], env)
        measured = Measured(name=name, samples=samples, wall_s=out["wall_s"], stats=sim.stats(), rounds=rounds,
                            llm_concurrency=concurrency, cpu_s=out["cpu_s"])
        measured.extra = {"scored": out["scored"], "rows": out["rows"]}
        return measured

    return Tool(name, run)


def interleaved(tools: list[Tool], sim: Any, repeat: int, folder: Path, tag: str) -> dict[str, list[Measured]]:
    """Every tool `repeat` times, in turn (a, b, c, a, b, c, ...): load drift lands on all of them alike."""
    runs: dict[str, list[Measured]] = {tool.name: [] for tool in tools}
    for index in range(repeat):
        for tool in tools:
            runs[tool.name].append(tool.run(sim, folder / f"{tag}-{len(runs[tool.name])}-{tool.name.replace(' ', '_')}"))
            print(f"  [{tag} {index + 1}/{repeat}] {tool.name}: wall {runs[tool.name][-1].wall_s:.2f} s", flush=True)
    return runs


def median_spread(values: list[float]) -> str:
    """The median, and the range when there are several values."""
    if len(values) == 1:
        return f"{values[0]:.2f}"
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description="ragcourt vs RAGAS on a simulated LLM server")
    parser.add_argument("--hotpot", type=int, default=100)
    parser.add_argument("--long-form", type=int, default=80)
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--tokens-per-s", type=float, default=50.0,
                        help="decode speed per request: completion tokens add their time (0: none)")
    parser.add_argument("--drop-items", type=float, default=0.0,
                        help="share of item entries the server drops from long replies (bench/sim_server.py)")
    parser.add_argument("--drop-items-over", type=int, default=4,
                        help="a reply is long with more item entries than this (the server's minimal splits make "
                        "2 elements and 2 claims, so a combined reply holds 5-6)")
    parser.add_argument("--llm-concurrency", type=int, default=32)
    parser.add_argument("--sample-concurrency", type=int, default=None,
                        help="ragcourt's samples in flight (default: all of them, as RAGAS submits every row's jobs "
                        "at once; LLM concurrency bounds both)")
    parser.add_argument("--answer-correctness", action="store_true")
    parser.add_argument("--batching", nargs="+", default=["joint"],
                        help="ragcourt batching modes to run (joint, per_sample, per_kind)")
    parser.add_argument("--methods", nargs="+", default=["qcare", "elements", "reference"],
                        help="ragcourt methods (default: every RAGAS metric's counterpart)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per tool, interleaved; medians and ranges shown")
    parser.add_argument("--no-cpu-pass", action="store_true",
                        help="skip the zero-latency pass that measures each evaluator's CPU seconds per sample")
    parser.add_argument("--venv", type=Path, default=RAGAS_VENV)
    parser.add_argument("--ragchecker-venv", type=Path, default=RAGCHECKER_VENV)
    parser.add_argument("--no-ragchecker", action="store_true", help="leave RAGChecker out")
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    parser.add_argument("--ragchecker-worker", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        data, url, concurrency, answer_correctness = args.worker
        ragas_worker(data, url, int(concurrency), answer_correctness == "1")
        return
    if args.ragchecker_worker:
        data, url, concurrency = args.ragchecker_worker
        ragchecker_worker(data, url, int(concurrency))
        return

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from cost_speed import bench_samples, machine, sim_server

    from ragcourt.schema.config import Batching, Method

    python = ensure_venv(args.venv, RAGAS_PACKAGES, "ragas.llms, langchain_openai")
    checker_python = None if args.no_ragchecker else ensure_venv(args.ragchecker_venv, RAGCHECKER_PACKAGES,
                                                                 "ragchecker")
    samples = bench_samples(args.hotpot, args.long_form)
    methods = tuple(Method(m) for m in args.methods)
    drops = ["--drop-items", str(args.drop_items), "--drop-items-over", str(args.drop_items_over)]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data = folder / "ragas.json"
        data.write_text(json.dumps(ragas_rows(samples)))
        # RAGAS's usage analytics call out to the internet; offline each call blocks until it gives up.
        tools = [ragcourt_tool(Batching(b), methods, args, samples) for b in args.batching]
        tools.append(worker_tool("RAGAS", python, "--worker", data, ["1" if args.answer_correctness else "0"],
                                 {"RAGAS_DO_NOT_TRACK": "true"}, RAGAS_ROUNDS, args.llm_concurrency, len(samples)))
        if checker_python is not None:
            checker_data = folder / "ragchecker.json"
            checker_data.write_text(json.dumps(ragchecker_rows(samples)))
            # litellm reads its model price list from the internet unless told to use the bundled copy.
            tools.append(worker_tool("RAGChecker", checker_python, "--ragchecker-worker", checker_data, [],
                                     {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}, RAGCHECKER_ROUNDS,
                                     args.llm_concurrency, len(samples)))
        with sim_server(args.latency_ms, "--tokens-per-s", str(args.tokens_per_s), *drops) as sim:
            timed = interleaved(tools, sim, args.repeat, folder, "timed")
        cpu: dict[str, list[Measured]] = {}
        if not args.no_cpu_pass:  # the evaluator's own CPU, with no wait to hide it: process time per sample
            with sim_server(0.0, *drops) as sim:
                cpu = interleaved(tools, sim, args.repeat, folder, "zero-latency")

    print(f"machine: {machine()}")
    hotpot = sum(1 for s in samples if s.metadata.get("source") == "hotpotqa")
    print(f"{len(samples)} samples ({hotpot} HotpotQA, {len(samples) - hotpot} long-form); server latency "
          f"{args.latency_ms:.0f} ms + completion tokens at {args.tokens_per_s:g} tokens/s; dropped items "
          f"{args.drop_items:g} of replies over {args.drop_items_over} items; LLM concurrency {args.llm_concurrency} "
          f"for all; ragcourt's samples in flight {args.sample_concurrency or len(samples)}; one LLM judge; "
          f"{args.repeat} interleaved runs per tool (medians, ranges in brackets)")
    ragas_runs = timed["RAGAS"]
    ragas = {"calls": statistics.median(r.calls for r in ragas_runs) / len(samples),
             "prompt": statistics.median(r.per_sample("prompt_tokens") for r in ragas_runs),
             "wall": statistics.median(r.wall_s for r in ragas_runs),
             "cpu": statistics.median((r.cpu_s or 0.0) / r.samples for r in cpu["RAGAS"]) if cpu else None}
    print(f"{'evaluator':<30}{'calls/s.':>9}{'prompt tok/s.':>14}{'compl. tok/s.':>14}{'wall s':>20}"
          f"{'wall/ideal':>20}{'CPU ms/s.':>22}{'calls/RAGAS':>12}{'prompt/RAGAS':>13}{'CPU/RAGAS':>10}{'wall/RAGAS':>11}")
    for name, runs in timed.items():
        calls = statistics.median(r.calls for r in runs) / len(samples)
        prompt = statistics.median(r.per_sample("prompt_tokens") for r in runs)
        completion = statistics.median(r.per_sample("completion_tokens") for r in runs)
        walls = [r.wall_s for r in runs]
        cpu_ms = [1000 * (r.cpu_s or 0.0) / r.samples for r in cpu.get(name, [])]
        cpu_text = median_spread(cpu_ms) if cpu_ms else "-"
        cpu_ratio = (f"{statistics.median(cpu_ms) / (1000 * ragas['cpu']):.2f}"
                     if cpu_ms and ragas["cpu"] else "-")
        print(f"{name:<30}{calls:>9.2f}{prompt:>14.0f}{completion:>14.0f}{median_spread(walls):>20}"
              f"{median_spread([r.overhead for r in runs]):>20}{cpu_text:>22}{calls / ragas['calls']:>12.2f}"
              f"{prompt / ragas['prompt']:>13.2f}{cpu_ratio:>10}{statistics.median(walls) / ragas['wall']:>11.2f}")
    for name, runs in timed.items():
        last = runs[-1]
        by_name = ", ".join(f"{n} {c / last.samples:.2f}" for n, c in sorted(last.stats["by_name"].items()))
        print(f"  {name}: calls per sample by output schema: {by_name}")
        print(f"  {name}: achieved concurrency {median_spread([r.achieved_concurrency for r in runs])}, at most "
              f"{max(r.stats['max_in_flight'] for r in runs)} requests in flight; ideal s "
              f"{median_spread([r.ideal_s for r in runs])}")
        if "follow_up_calls" in last.extra:
            for label, group in (("timed", runs), ("zero-latency", cpu.get(name, []))):
                for r in group:
                    print(f"  {name} ({label}): {r.stats.get('dropped_items', 0)} items dropped by the server, "
                          f"{r.extra['follow_up_calls']} follow-up calls asking {r.extra['follow_up_checks']} checks "
                          f"again, {r.extra['unscored']} verdicts unscored, {r.extra['samples_scored']} of "
                          f"{r.samples} samples scored")
        elif "scored" in last.extra:
            print(f"  {name}: metrics scored (of {last.extra['rows']} rows): {last.extra['scored']}")


if __name__ == "__main__":
    main()
