"""ragcourt, RAGAS and RAGChecker side by side: the same samples, the same simulated server, the same LLM
concurrency.

    python bench/ragas_side_by_side.py [--hotpot 100 --long-form 80 --latency-ms 200 --llm-concurrency 32]
                                       [--no-ragchecker] [--repeat 3]

RAGAS runs in its own virtual environment (default /tmp/ragas-venv, made on first use with the latest
ragas and langchain-openai from PyPI; langchain-community is held below 0.4.2, whose removal of
chat_models.vertexai breaks `import ragas.llms` in ragas 0.4.3), in a subprocess of this script, with
ChatOpenAI and OpenAIEmbeddings pointed at the simulated server (bench/sim_server.py) with a fake key.
Its metrics: Faithfulness, LLMContextRecall, LLMContextPrecisionWithReference and FactualCorrectness
(with --answer-correctness also AnswerCorrectness, which needs embeddings), evaluated with
RunConfig(max_workers = the LLM concurrency). ragcourt (bench/cost_speed.py) runs its Q-CARE and element
checks with one LLM judge and the LLM decomposer, in both batching modes.

RAGChecker (0.1.9, the latest on PyPI) runs in its own venv too (default /tmp/ragchecker-venv: torch 2.13.0,
the CPU build this machine keeps on disk, then ragchecker), all metrics, its LLM extractor and LLM checker
(joint checking of 5 claims, as it defaults) on the simulated server through litellm ("openai/sim" with the
server as api_base), batch sizes = the LLM concurrency. It needs no spaCy model in this mode.

One table: LLM calls, prompt and completion tokens per sample, wall time, the ideal time and the ratios
to RAGAS. Calls and tokens are counted by the server, so every tool is counted the same way.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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
    started = time.perf_counter()
    result = evaluate(EvaluationDataset.from_list(rows), metrics=metrics, llm=llm, embeddings=embeddings,
                      run_config=RunConfig(max_workers=concurrency, timeout=600, max_retries=0),
                      show_progress=False)
    wall = time.perf_counter() - started
    frame = result.to_pandas()
    scored = {name: int(frame[name].notna().sum()) for name in frame.columns if name not in rows[0]}
    print(json.dumps({"wall_s": wall, "scored": scored, "rows": len(frame)}))


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
    started = time.perf_counter()
    checker.evaluate(results, all_metrics)
    wall = time.perf_counter() - started
    scored = {name: sum(1 for r in results.results if r.metrics.get(name) is not None)
              for name in sorted({name for r in results.results for name in r.metrics})}
    print(json.dumps({"wall_s": wall, "scored": scored, "rows": len(results.results)}))


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


def main() -> None:
    parser = argparse.ArgumentParser(description="ragcourt vs RAGAS on a simulated LLM server")
    parser.add_argument("--hotpot", type=int, default=100)
    parser.add_argument("--long-form", type=int, default=80)
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--llm-concurrency", type=int, default=32)
    parser.add_argument("--sample-concurrency", type=int, default=64)
    parser.add_argument("--answer-correctness", action="store_true")
    parser.add_argument("--repeat", type=int, default=3, help="ragcourt runs per mode (wall time varies with what "
                        "else the machine does; the median run is shown)")
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
    from cost_speed import Measured, bench_samples, machine, measure_ragcourt, sim_server

    from ragcourt.schema.config import Batching

    python = ensure_venv(args.venv, RAGAS_PACKAGES, "ragas.llms, langchain_openai")
    checker_python = None if args.no_ragchecker else ensure_venv(args.ragchecker_venv, RAGCHECKER_PACKAGES,
                                                                 "ragchecker")
    samples = bench_samples(args.hotpot, args.long_form)
    with tempfile.TemporaryDirectory() as folder, sim_server(args.latency_ms) as sim:
        runs, spreads = [], {}
        for batching in (Batching.PER_SAMPLE, Batching.PER_KIND):
            repeats = sorted((measure_ragcourt(sim, samples, batching, args.llm_concurrency, args.sample_concurrency,
                                               Path(folder) / f"{batching}-{n}") for n in range(args.repeat)),
                             key=lambda run: run.overhead)
            runs.append(repeats[len(repeats) // 2])  # the median run stands for the mode in the table
            spreads[batching] = [run.overhead for run in repeats]
        data = Path(folder) / "ragas.json"
        data.write_text(json.dumps(ragas_rows(samples)))
        sim.reset()
        # RAGAS's usage analytics call out to the internet; offline each call blocks until it gives up.
        worker = run_worker(python, "--worker", [str(data), sim.base_url, str(args.llm_concurrency),
                                                 "1" if args.answer_correctness else "0"],
                            {"RAGAS_DO_NOT_TRACK": "true"})
        ragas = Measured(name="RAGAS", samples=len(samples), wall_s=worker["wall_s"], stats=sim.stats(),
                         rounds=RAGAS_ROUNDS, llm_concurrency=args.llm_concurrency)
        others = []
        if checker_python is not None:
            checker_data = Path(folder) / "ragchecker.json"
            checker_data.write_text(json.dumps(ragchecker_rows(samples)))
            sim.reset()
            # litellm reads its model price list from the internet unless told to use the bundled copy.
            checked = run_worker(checker_python, "--ragchecker-worker",
                                 [str(checker_data), sim.base_url, str(args.llm_concurrency)],
                                 {"LITELLM_LOCAL_MODEL_COST_MAP": "True"})
            others.append(Measured(name="RAGChecker", samples=len(samples), wall_s=checked["wall_s"],
                                   stats=sim.stats(), rounds=RAGCHECKER_ROUNDS, llm_concurrency=args.llm_concurrency))
            print(f"RAGChecker metrics scored (of {checked['rows']} rows): {checked['scored']}")

    print(f"machine: {machine()}")
    hotpot = sum(1 for s in samples if s.metadata.get("source") == "hotpotqa")
    print(f"{len(samples)} samples ({hotpot} HotpotQA, {len(samples) - hotpot} long-form); server latency "
          f"{args.latency_ms:.0f} ms; LLM concurrency {args.llm_concurrency} for both; one LLM judge")
    print(f"RAGAS metrics scored (of {worker['rows']} rows): {worker['scored']}; "
          f"embedding requests {ragas.stats['embedding_requests']}")
    header = (f"{'evaluator':<22}{'calls/s.':>9}{'prompt tok/s.':>14}{'compl. tok/s.':>14}{'wall s':>8}"
              f"{'concurr.':>9}{'ideal s':>8}{'wall/ideal':>11}{'calls vs RAGAS':>15}{'prompt tok vs RAGAS':>20}{'wall vs RAGAS':>14}")
    print(header)
    for run in (*runs, ragas, *others):
        print(f"{run.name:<22}{run.calls / run.samples:>9.2f}{run.per_sample('prompt_tokens'):>14.0f}"
              f"{run.per_sample('completion_tokens'):>14.0f}{run.wall_s:>8.2f}{run.achieved_concurrency:>9.1f}"
              f"{run.ideal_s:>8.2f}"
              f"{run.overhead:>11.2f}{run.calls / ragas.calls:>15.2f}"
              f"{run.stats['prompt_tokens'] / ragas.stats['prompt_tokens']:>20.2f}{run.wall_s / ragas.wall_s:>14.2f}")
    if args.repeat > 1:
        for batching, ratios in spreads.items():
            print(f"  ragcourt {batching}: wall / ideal over {len(ratios)} runs {', '.join(f'{r:.2f}' for r in ratios)}; "
                  "the table shows the median run")
    for run in (*runs, ragas, *others):
        by_name = ", ".join(f"{name} {count / run.samples:.2f}" for name, count in sorted(run.stats["by_name"].items()))
        print(f"  {run.name}: calls per sample by output schema: {by_name}")


if __name__ == "__main__":
    main()
