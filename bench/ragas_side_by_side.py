"""ragcourt and RAGAS side by side: the same samples, the same simulated server, the same LLM concurrency.

    python bench/ragas_side_by_side.py [--hotpot 100 --long-form 80 --latency-ms 200 --llm-concurrency 32]

RAGAS runs in its own virtual environment (default /tmp/ragas-venv, made on first use with the latest
ragas and langchain-openai from PyPI; langchain-community is held below 0.4.2, whose removal of
chat_models.vertexai breaks `import ragas.llms` in ragas 0.4.3), in a subprocess of this script, with
ChatOpenAI and OpenAIEmbeddings pointed at the simulated server (bench/sim_server.py) with a fake key.
Its metrics: Faithfulness, LLMContextRecall, LLMContextPrecisionWithReference and FactualCorrectness
(with --answer-correctness also AnswerCorrectness, which needs embeddings), evaluated with
RunConfig(max_workers = the LLM concurrency). ragcourt (bench/cost_speed.py) runs its Q-CARE and element
checks with one LLM judge and the LLM decomposer, in both batching modes.

One table: LLM calls, prompt and completion tokens per sample, wall time, the ideal time and the ratios
ragcourt / RAGAS. Calls and tokens are counted by the server, so both tools are counted the same way.
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


def ensure_ragas_venv(venv: Path) -> Path:
    python = venv / "bin" / "python"
    probe = [str(python), "-c", "import ragas.llms, langchain_openai"]
    if python.exists() and subprocess.run(probe, capture_output=True, check=False).returncode == 0:
        return python
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--upgrade", "pip"], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", *RAGAS_PACKAGES], check=True)
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


# --------------------------------------------------------------------------- the comparison (project venv)


def ragas_rows(samples: list[Any]) -> list[dict[str, Any]]:
    return [{"user_input": s.question, "retrieved_contexts": [c.text for c in s.contexts or ()],
             "response": s.answer or "", "reference": s.reference_answer or ""} for s in samples]


def main() -> None:
    parser = argparse.ArgumentParser(description="ragcourt vs RAGAS on a simulated LLM server")
    parser.add_argument("--hotpot", type=int, default=100)
    parser.add_argument("--long-form", type=int, default=80)
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--llm-concurrency", type=int, default=32)
    parser.add_argument("--sample-concurrency", type=int, default=64)
    parser.add_argument("--answer-correctness", action="store_true")
    parser.add_argument("--venv", type=Path, default=RAGAS_VENV)
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        data, url, concurrency, answer_correctness = args.worker
        ragas_worker(data, url, int(concurrency), answer_correctness == "1")
        return

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from cost_speed import Measured, bench_samples, machine, measure_ragcourt, sim_server

    from ragcourt.config import Batching

    python = ensure_ragas_venv(args.venv)
    samples = bench_samples(args.hotpot, args.long_form)
    with tempfile.TemporaryDirectory() as folder, sim_server(args.latency_ms) as sim:
        runs = [measure_ragcourt(sim, samples, batching, args.llm_concurrency, args.sample_concurrency,
                                 Path(folder) / str(batching))
                for batching in (Batching.PER_SAMPLE, Batching.PER_KIND)]
        data = Path(folder) / "ragas.json"
        data.write_text(json.dumps(ragas_rows(samples)))
        sim.reset()
        output = subprocess.run(
            [str(python), __file__, "--worker", str(data), sim.base_url, str(args.llm_concurrency),
             "1" if args.answer_correctness else "0"], check=True, capture_output=True, text=True,
            # RAGAS's usage analytics call out to the internet; offline each call blocks until it gives up.
            env={**os.environ, "RAGAS_DO_NOT_TRACK": "true"}).stdout
        worker = json.loads(output.strip().splitlines()[-1])
        ragas = Measured(name="RAGAS", samples=len(samples), wall_s=worker["wall_s"], stats=sim.stats(),
                         rounds=RAGAS_ROUNDS, llm_concurrency=args.llm_concurrency)

    print(f"machine: {machine()}")
    hotpot = sum(1 for s in samples if s.metadata.get("source") == "hotpotqa")
    print(f"{len(samples)} samples ({hotpot} HotpotQA, {len(samples) - hotpot} long-form); server latency "
          f"{args.latency_ms:.0f} ms; LLM concurrency {args.llm_concurrency} for both; one LLM judge")
    print(f"RAGAS metrics scored (of {worker['rows']} rows): {worker['scored']}; "
          f"embedding requests {ragas.stats['embedding_requests']}")
    header = (f"{'evaluator':<22}{'calls/s.':>9}{'prompt tok/s.':>14}{'compl. tok/s.':>14}{'wall s':>8}"
              f"{'ideal s':>8}{'wall/ideal':>11}{'calls vs RAGAS':>15}{'prompt tok vs RAGAS':>20}{'wall vs RAGAS':>14}")
    print(header)
    for run in (*runs, ragas):
        print(f"{run.name:<22}{run.calls / run.samples:>9.2f}{run.per_sample('prompt_tokens'):>14.0f}"
              f"{run.per_sample('completion_tokens'):>14.0f}{run.wall_s:>8.2f}{run.ideal_s:>8.2f}"
              f"{run.overhead:>11.2f}{run.calls / ragas.calls:>15.2f}"
              f"{run.stats['prompt_tokens'] / ragas.stats['prompt_tokens']:>20.2f}{run.wall_s / ragas.wall_s:>14.2f}")
    for run in (*runs, ragas):
        by_name = ", ".join(f"{name} {count / run.samples:.2f}" for name, count in sorted(run.stats["by_name"].items()))
        print(f"  {run.name}: calls per sample by output schema: {by_name}")


if __name__ == "__main__":
    main()
