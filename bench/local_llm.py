"""Measure the bundled local model (SmolLM2-135M-Instruct, llama.cpp in this process): seconds per LLM
call and seconds per sample of the `ragcourt demo --local` pipeline.

Run: python bench/local_llm.py [--questions 3] [--home /tmp/bench-local]

1. Per call: for each question, one answerer call (CUE-R answer over the question's gold paragraphs)
   and one judge batch (claim_supported: the answer's sentences against the same paragraphs), uncached,
   timed one by one, with prompt and completion tokens. The model is loaded before timing starts.
2. Per sample: the demo's whole run (reference RAG over chromadb, jury [local, lexical], local answerer,
   sentence decomposer, Q-CARE + elements) on fresh workspace, uncached; indexing is timed apart.

Figures go to the README section "Local-only evaluation". A 135M model is for trying the pipeline,
not for trusting its verdicts.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

from ragcourt.data.loaders import BundledDataset, bundled, load_hotpotqa
from ragcourt.judging import LLMJudge
from ragcourt.llm.factory import build_client
from ragcourt.llm.local import bundled_model_path
from ragcourt.llm.spec import ModelSpec
from ragcourt.llm.usage import UsageMeter
from ragcourt.metrics.text import sentences
from ragcourt.runs.models import Models, eval_context
from ragcourt.runs.runner import Runner
from ragcourt.runs.workspace import Workspace
from ragcourt.schema import Check, CheckKind, Condition, ConditionKind
from ragcourt.schema.config import Batching, EvalConfig, JudgeSpec, Method
from ragcourt.systems import LLMGenerator, ReferenceRAG

COLLECTION = "hotpotqa"
NORMAL = Condition(kind=ConditionKind.NORMAL)


def _describe(values: list[float]) -> str:
    if not values:
        return "n/a (no calls)"
    spread = f" sd {statistics.stdev(values):.2f}" if len(values) > 1 else ""
    return f"mean {statistics.mean(values):.2f} s{spread}, min {min(values):.2f}, max {max(values):.2f} (n={len(values)})"


async def per_call(questions: int) -> None:
    hotpot = load_hotpotqa(bundled(BundledDataset.HOTPOTQA_DEV_100))
    meter = UsageMeter()
    client = build_client(ModelSpec.parse("local"), role="bench", usage=meter)
    generator, judge = LLMGenerator(client, name="local"), LLMJudge(client, "local")
    # Load the model before timing: the first call would otherwise include it.
    started = time.perf_counter()
    await judge.judge(CheckKind.CLAIM_SUPPORTED, [Check(
        kind=CheckKind.CLAIM_SUPPORTED, sample_id="warm-up", condition=NORMAL, subject_id="c", subject_text="x",
        target_id="t", target_text="y", question="warm-up")])
    print(f"model load + first call: {time.perf_counter() - started:.2f} s")
    answer_s, judge_s, unscored = [], [], 0
    for sample in hotpot.samples[:questions]:
        chunks = list(sample.gold_documents[:5]) or list(hotpot.corpus[:5])
        started = time.perf_counter()
        generation = await generator.generate(sample.question, chunks)
        answer_s.append(time.perf_counter() - started)
        claims = sentences(generation.text) or [generation.text or "(empty answer)"]
        checks = [
            Check(kind=CheckKind.CLAIM_SUPPORTED, sample_id=sample.id, condition=NORMAL, subject_id=f"c{i}",
                  subject_text=claim, target_id=chunk.id, target_text=chunk.text, question=sample.question)
            for i, claim in enumerate(claims) for chunk in chunks
        ]
        started = time.perf_counter()
        verdicts = await judge.judge(CheckKind.CLAIM_SUPPORTED, checks)
        judge_s.append(time.perf_counter() - started)
        unscored += sum(v.status != "ok" for v in verdicts) + (generation.status != "ok")
    total = meter.total()
    print(f"answerer call (CUE-R answer, gold paragraphs):    {_describe(answer_s)}")
    print(f"judge call (claim_supported batch):               {_describe(judge_s)}")
    print(f"all LLM calls: {_describe(answer_s + judge_s)}; model calls incl. repairs: {total.calls - 1}; "
          f"tokens in/out per call: {total.prompt_tokens / total.calls:.0f}/{total.completion_tokens / total.calls:.0f}; "
          f"unscored outputs: {unscored}")


def per_sample(questions: int, home: Path) -> None:
    hotpot = load_hotpotqa(bundled(BundledDataset.HOTPOTQA_DEV_100))
    workspace = Workspace(home)
    vectors = workspace.open_vectors()
    started = time.perf_counter()
    if not vectors.has_collection(COLLECTION):
        for start in range(0, len(hotpot.corpus), 128):
            vectors.index(COLLECTION, hotpot.corpus[start:start + 128])
    print(f"indexing (MiniLM, not the LLM): {time.perf_counter() - started:.1f} s")
    # the configuration of `ragcourt demo --local` (per_kind: the local grammar pins each reply to the ids shown)
    config = EvalConfig(judges=(JudgeSpec(model="local"), JudgeSpec(model="lexical")), answerer="local", top_k=5,
                        methods=(Method.QCARE, Method.ELEMENTS), batching=Batching.PER_KIND)
    store = workspace.open_store()
    try:
        models = Models(config, store)
        system = ReferenceRAG(vectors, COLLECTION, models.generator())
        runner = Runner(eval_context(config, system, store, models, vectors, COLLECTION), f"bench-{time.time_ns()}",
                        workspace.run_dir("bench"))

        async def run() -> list[float]:
            finished, last = [], time.perf_counter()
            async for _ in runner.astream(hotpot.samples[:questions], dataset="bundled:hotpotqa"):
                now = time.perf_counter()
                finished.append(now - last)
                last = now
            return finished

        started = time.perf_counter()
        gaps = asyncio.run(run())
        elapsed = time.perf_counter() - started
        calls = models.usage.total().calls
        print(f"demo --local pipeline: {elapsed:.1f} s for {questions} questions = {elapsed / questions:.1f} s per "
              f"sample; {calls} LLM calls ({calls / questions:.1f} per sample, {elapsed / max(calls, 1):.2f} s "
              f"per call incl. everything else); gaps between finished samples: {_describe(gaps)}")
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=3)
    parser.add_argument("--home", type=Path, default=None, help="workspace (default: a fresh temporary folder)")
    args = parser.parse_args()
    model = bundled_model_path()
    print(f"model: {model.name} ({model.stat().st_size / 1e6:.0f} MB); {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f}")
    asyncio.run(per_call(args.questions))
    with tempfile.TemporaryDirectory() as scratch:
        per_sample(args.questions, args.home or Path(scratch))


if __name__ == "__main__":
    main()
