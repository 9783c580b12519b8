"""Review budget vs arrival order, with human labels: how many reviewer decisions bring each headline figure
within 0.02 of its all-reviewed value (and keep it there).

The run is `ragcourt demo`'s: the bundled HotpotQA sample (distractor setting), the reference RAG (chromadb,
offline MiniLM, extractive answerer), the offline jury `lexical` + `semantic`, sentence decomposer. The human
labels are HotpotQA's supporting paragraphs: a sub-query-in-chunk check is "yes" when its chunk is one of the
question's two gold supporting paragraphs (the sentence decomposer keeps a one-sentence question as its one
sub-query). A simulated reviewer decides the escalated sub-query-in-chunk checks by those labels, one at a
time, in two orders: validity.review_budget's (expected change of the headline figures), and arrival order (every
disagreement as the store lists it). After each decision its sample is re-scored from the store (no model
call) and the figures read again; the all-reviewed value is the figure once every such escalation is decided.

    python bench/review_budget.py [--home DIR] [--questions 10]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
from pathlib import Path

from ragcourt.analysis.summary import summarize
from ragcourt.data.loaders import BundledDataset, bundled, load_hotpotqa
from ragcourt.graphs.sample import build_sample_graph
from ragcourt.runs.api import evaluate, reference_system
from ragcourt.runs.rescore import replay_context
from ragcourt.runs.runner import Runner
from ragcourt.runs.workspace import HOTPOTQA_COLLECTION, Workspace
from ragcourt.schema import NORMAL, CheckKind, Label, Reconciled, Review, ReviewAction
from ragcourt.schema.config import EvalConfig, JudgeSpec, Method
from ragcourt.stores.records import RecordStore
from ragcourt.stores.vectors import VectorStore
from ragcourt.validity.review_budget import budget_order

FIGURES = ("c_prec@5", "c_ndcg@5")
WITHIN = 0.02


def figures(store: RecordStore, run_id: str) -> dict[str, float]:
    return {r.name: r.mean for r in summarize(store, run_id).metrics if r.name in FIGURES and r.mean is not None}


async def review_in_order(home: Path, run_id: str, order: list[Reconciled], truth: dict[str, Label]) -> list[dict]:
    """The figures after 0, 1, ... len(order) decisions, each sample re-scored as its check is decided."""
    with RecordStore(Workspace(home).store_path) as store:
        context = replay_context(store, run_id)
        runner = Runner(context, run_id, Workspace(home).run_dir(run_id))
        graph = build_sample_graph(None)
        samples = {s.id: s for s in store.get_samples(run_id)}
        trace = [figures(store, run_id)]
        for rec in order:
            store.add_review(Review(run_id=run_id, check_id=rec.check_id, reviewer="simulated",
                                    action=ReviewAction.OVERRIDE, label=truth[rec.check_id]))
            await runner.evaluate_one(graph, samples[rec.sample_id])
            trace.append(figures(store, run_id))
        return trace


def needed(trace: list[dict], name: str) -> int:
    """Decisions after which the figure stays within WITHIN of its all-reviewed value."""
    final = trace[-1][name]
    count = len(trace) - 1
    while count > 0 and abs(trace[count - 1][name] - final) <= WITHIN:
        count -= 1
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, help="a workspace with the demo's collection (indexed if missing)")
    parser.add_argument("--questions", type=int, default=10)
    args = parser.parse_args()
    home = args.home or Path(tempfile.mkdtemp(prefix="ragcourt-budget-"))
    hotpot = load_hotpotqa(bundled(BundledDataset.HOTPOTQA_DEV_100))
    workspace = Workspace(home)
    vectors: VectorStore = workspace.open_vectors()
    if not vectors.has_collection(HOTPOTQA_COLLECTION):
        for start in range(0, len(hotpot.corpus), 128):
            vectors.index(HOTPOTQA_COLLECTION, hotpot.corpus[start:start + 128])
    config = EvalConfig(judges=(JudgeSpec(model="lexical"), JudgeSpec(model="semantic")), top_k=5,
                        methods=(Method.QCARE, Method.ELEMENTS))
    samples = hotpot.samples[:args.questions]
    result = evaluate(samples, reference_system(home=home), config=config, home=home)
    gold = {s.id: {c.id for c in s.gold_documents} for s in samples}
    with RecordStore(workspace.store_path) as store:
        checks = {c.id: c for c in store.checks_for(result.run_id)}
        truth = {cid: Label.YES if c.target_id in gold[c.sample_id] else Label.NO for cid, c in checks.items()
                 if c.kind is CheckKind.SUBQUERY_IN_CHUNK}
        pending = [r for r in store.pending_escalations(result.run_id) if r.check_id in truth
                   and checks[r.check_id].condition == NORMAL]
        orders = {"budget": budget_order(store, result.run_id, pending), "arrival": pending}
        n_checks = len(truth)
    print(f"run {result.run_id}: {len(samples)} HotpotQA questions, {n_checks} sub-query-in-chunk checks, "
          f"{len(pending)} escalated (the judges disagree), labels: supporting paragraphs")
    traces = {}
    for name, order in orders.items():
        copy = Path(tempfile.mkdtemp(prefix=f"ragcourt-budget-{name}-"))
        shutil.copy(workspace.store_path, copy / "store.sqlite")
        shutil.copytree(workspace.run_dir(result.run_id), Workspace(copy).run_dir(result.run_id))
        traces[name] = asyncio.run(review_in_order(copy, result.run_id, order, truth))
    start, final = traces["arrival"][0], traces["arrival"][-1]
    print(f"{'figure':<10} {'unreviewed':>10} {'all reviewed':>12} {'budget order':>13} {'arrival order':>14}")
    for figure in FIGURES:
        if figure not in final:
            continue
        print(f"{figure:<10} {start[figure]:>10.3f} {final[figure]:>12.3f} {needed(traces['budget'], figure):>13d} "
              f"{needed(traces['arrival'], figure):>14d}")
    print(f"(decisions needed to bring the figure within {WITHIN} of its all-reviewed value and keep it there, "
          f"of {len(pending)})")


if __name__ == "__main__":
    main()
