"""Does any figure depend on the order the judges are listed in? (issue 19, item 2; seed 003 averages the two
judges' results, so it must not.)

Builds precomputed samples from the bundled HotpotQA sample (contexts: the question's ten paragraphs in file
order; answer: the one sentence of them that shares most words with the question, the extractive baseline;
reference: HotpotQA's answer span), runs them with `--judge lexical --judge semantic` and with the order
swapped, and prints per order: element coverage (mean over samples), element statuses, gap shares, how many
samples trigger the loose re-run (coverage < 0.6; a precomputed system cannot retrieve again, so the trigger is
counted, not run) and the Q-CARE means; then whether the two orders agree.

Run: python bench/judge_order.py [--questions 20]   (offline, about a minute on two cores)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragcourt.analysis.qcare_tables import gap_share_frame
from ragcourt.data.loaders import BundledDataset, bundled, load_hotpotqa, paragraph_id
from ragcourt.metrics.elements import needs_loose
from ragcourt.runs.api import aevaluate
from ragcourt.schema import Chunk, Sample, SampleDiagnostics
from ragcourt.schema.config import EvalConfig, JudgeSpec
from ragcourt.systems import ExtractiveGenerator, Precomputed

ORDERS = (("lexical", "semantic"), ("semantic", "lexical"))
QCARE = ("completeness", "conciseness", "verifiableness")


def precomputed_hotpot(n: int) -> list[Sample]:
    """The first n HotpotQA questions as precomputed samples (see the module docstring)."""
    path = bundled(BundledDataset.HOTPOTQA_DEV_100)
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[:n]]
    out = []
    for sample, row in zip(load_hotpotqa(path).samples[:n], rows, strict=True):
        contexts = tuple(
            Chunk(id=paragraph_id(p["title"], p["paragraph_text"]), text=p["paragraph_text"], title=p["title"], rank=rank)
            for rank, p in enumerate(row["contexts"], start=1)
        )
        answer = asyncio.run(ExtractiveGenerator().generate(sample.question, contexts)).text
        out.append(sample.model_copy(update={"contexts": contexts, "answer": answer}))
    return out


def figures(diagnostics: Sequence[SampleDiagnostics]) -> dict[str, Any]:
    coverage = [d.metric("element_coverage") for d in diagnostics]
    values = [m.value for m in coverage if m is not None and m.value is not None]
    gaps = gap_share_frame(diagnostics)
    qcare = {}
    for name in QCARE:
        found = [m.value for d in diagnostics if (m := d.metric(name)) is not None and m.value is not None]
        qcare[name] = (round(sum(found) / len(found), 4) if found else None, len(found))
    return {
        "element_coverage": round(sum(values) / len(values), 4) if values else None,
        "samples_with_coverage": len(values),
        "statuses": {row.status: row.count for row in gaps.itertuples() if row.count},
        "gap_shares": {row.status: round(row.gap_share, 4) for row in gaps.itertuples() if row.gap_share is not None},
        "loose_triggers": sum(needs_loose(m.value if m is not None else None) for m in coverage),
        "qcare": qcare,
    }


async def run(samples: Sequence[Sample], home: Path) -> dict[tuple[str, ...], dict[str, Any]]:
    out = {}
    for order in ORDERS:
        config = EvalConfig(judges=tuple(JudgeSpec(model=m) for m in order))
        result = await aevaluate(samples, Precomputed(), config=config, home=home, run_id="order-" + "-".join(order))
        out[order] = figures(result.diagnostics)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=20)
    args = parser.parse_args()
    samples = precomputed_hotpot(args.questions)
    with tempfile.TemporaryDirectory() as home:
        results = asyncio.run(run(samples, Path(home)))
    for order, found in results.items():
        print(f"--judge {' --judge '.join(order)}")
        print(f"  element coverage {found['element_coverage']} over {found['samples_with_coverage']} samples; "
              f"loose triggers {found['loose_triggers']}")
        print(f"  statuses {found['statuses']}")
        print(f"  gap shares {found['gap_shares']}")
        print(f"  Q-CARE (mean, samples with a value) {found['qcare']}")
    first, second = results.values()
    print("identical in both orders" if first == second else "THE ORDER OF THE JUDGES CHANGES THE FIGURES")


if __name__ == "__main__":
    main()
