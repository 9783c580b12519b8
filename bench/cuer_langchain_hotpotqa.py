"""CUE-R on the bundled HotpotQA sample through the LangChain example app, offline: the judged trace.

Run: python bench/cuer_langchain_hotpotqa.py [--limit 100] [--kinds remove duplicate] [--k 5]

The app is examples/langchain_app's answer chain (its prompt, ChatOpenAI, StrOutputParser) with a retriever of
its shape (a VectorStoreRetriever, k=5, feature-hashing embeddings, LangChain's exact in-memory store) over the
sample's 995 paragraphs. Its model is a FakeOpenAIServer
(tests/fakes) answering with the context sentence that shares most content words with the question. A chain
names no chunk it used, so CUE-R's used set U is judged: the chunks the lexical judge finds to support the
answer's claims (sentences). Prints, per question, the mean trace divergence under "remove one chunk" (with
every shown chunk counted as used, as before, it was 1 - (k-1)/k = 0.2 for every question), the grounding per
condition, the two CUE-R tables, and the claim-chunk checks the judged traces cost beyond the normal ones.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
from collections import Counter
from pathlib import Path

# Concurrent samples query the retriever from several threads; a multi-threaded OpenBLAS then gave other
# neighbours from run to run (measured: 14 of 100 normal retrievals differed). One BLAS thread: figures repeat.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the fakes
sys.path.insert(0, str(ROOT / "tests" / "scenarios" / "live"))  # the example app, its model and retriever

import pandas as pd  # noqa: E402
from fakes.openai_server import FakeOpenAIServer  # noqa: E402
from live_helpers import best_sentence, example_app, paragraph_retriever  # noqa: E402

import ragcourt  # noqa: E402
from ragcourt.analysis.cuer_tables import cuer_condition_frame, cuer_frame  # noqa: E402
from ragcourt.data.loaders import BundledDataset, bundled, load_hotpotqa  # noqa: E402
from ragcourt.runs.workspace import Workspace  # noqa: E402
from ragcourt.schema import CheckKind, ConditionKind  # noqa: E402
from ragcourt.schema.config import EvalConfig, JudgeSpec, Method, PerturbationSpec  # noqa: E402


async def main(limit: int, kinds: list[str], k: int) -> None:
    hotpot = load_hotpotqa(bundled(BundledDataset.HOTPOTQA_DEV_100))
    samples = list(hotpot.samples)[:limit]
    config = EvalConfig(judges=(JudgeSpec(model="lexical"),), methods=(Method.CUER,), top_k=k,
                        perturbations=PerturbationSpec(kinds=tuple(ConditionKind(x) for x in kinds)))
    with FakeOpenAIServer(responder=best_sentence) as app_model, tempfile.TemporaryDirectory() as home:
        chain = example_app.build_answer_chain(example_app.build_llm(app_model.base_url, "fake-model"))
        result = await ragcourt.aevaluate(samples, retriever=paragraph_retriever(hotpot.corpus, k=k), chain=chain,
                                          config=config, home=home, run_id="cuer-langchain")
        with Workspace(Path(home)).open_store() as store:
            checks = [c for c in store.checks_for("cuer-langchain") if c.kind is CheckKind.CLAIM_SUPPORTED]
            normal = [r for r in store.get_retrievals("cuer-langchain") if r.condition.kind is ConditionKind.NORMAL]
        app_calls = app_model.count("/v1/chat/completions")
    diagnostics = result.diagnostics
    removes = {d.sample_id: [p.trace_divergence for p in d.perturbations if p.condition.kind is ConditionKind.REMOVE]
               for d in diagnostics}
    means = {sid: sum(v) / len(v) for sid, v in removes.items() if v and None not in v}
    print(f"{len(diagnostics)} HotpotQA questions through the LangChain example app (k={k}); traces: "
          f"{dict(Counter(str(d.trace_source) for d in diagnostics))}; app calls {app_calls}")
    values = sorted(means.values())
    print(f"trace divergence under remove, mean per question: n={len(values)}, distinct values "
          f"{len(set(round(v, 9) for v in values))}, min {values[0]:.3f}, median {statistics.median(values):.3f}, "
          f"max {values[-1]:.3f}, sd {statistics.pstdev(values):.3f} (every-shown-chunk trace: {1 - (k - 1) / k:.3f} "
          "for every question)")
    print("questions per mean:", dict(sorted(Counter(round(v, 3) for v in values).items())))
    print("the first questions:", ", ".join(f"{sid[:8]} {v:.3f}" for sid, v in list(means.items())[:8]))
    rows = Counter(round(v, 3) for v in (x for row in removes.values() for x in row) if v is not None)
    print(f"per removed chunk (rows): {dict(sorted(rows.items()))} (every-shown-chunk trace: all "
          f"{sum(rows.values())} rows {1 - (k - 1) / k:.3f})")
    undecided = sum(1 for v in removes.values() if None in v)
    print(f"questions with an unknown trace under some removal (unscored claim-chunk checks): {undecided}")
    gold = {sample.id: set(sample.gold_titles) for sample in samples}
    shown_share = statistics.mean(sum(c.title in gold[r.sample_id] for c in r.chunks) / len(r.chunks)
                                  for r in normal if r.chunks)
    judged = statistics.mean(m.value for d in diagnostics if (m := d.metric("grounding_score")) and m.value is not None)
    print(f"normal grounding: judged trace {judged:.3f}; every-shown-chunk trace (before) {shown_share:.3f}")
    with pd.option_context("display.width", 250, "display.max_columns", 30, "display.precision", 3):
        print("\nCUE-R per condition (grounding, confidence error, trace divergence):")
        print(cuer_condition_frame(diagnostics).to_string(index=False))
        print("\nCUE-R perturbation effects (perturbed - normal):")
        print(cuer_frame(diagnostics).to_string(index=False))
    by_condition = Counter("normal" if c.condition.kind is ConditionKind.NORMAL else str(c.condition.kind)
                           for c in checks)
    perturbed = sum(n for key, n in by_condition.items() if key != "normal")
    batches = len({(c.sample_id, c.condition.key) for c in checks if c.condition.kind is not ConditionKind.NORMAL})
    n_conditions = sum(len(d.perturbations) for d in diagnostics)
    print(f"\nclaim_supported checks: {dict(by_condition)}; the perturbed answers' judged traces needed {perturbed} "
          f"checks beyond the normal {by_condition['normal']}, in {batches} of {n_conditions} perturbed conditions "
          "(an LLM judge: one call per judge for each of those, none for the others)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=100, help="how many of the 100 questions")
    parser.add_argument("--kinds", nargs="+", default=["remove", "duplicate"], help="perturbations to run")
    parser.add_argument("--k", type=int, default=5, help="the retriever's k")
    arguments = parser.parse_args()
    asyncio.run(main(arguments.limit, arguments.kinds, arguments.k))
