"""A run over `many_samples(N)` with two logging, slow judges; the kill -9 / resume tests start it.

    python run_many.py STORE RUN_DIR RUN_ID N DELAY_S LOG

Each judge call appends one JSON line (judge, kind, check ids) to LOG before it works, then sleeps
DELAY_S. Prints each finished sample id as it arrives.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from graph_fixtures import InstrumentedJudge, make_context, many_samples
from ragcourt.schema.config import EvalConfig, JudgeSpec, Method
from ragcourt.judging.jury import BaselineJudge, BaselineRule
from ragcourt.runs.runner import Runner
from ragcourt.stores.records import RecordStore

JUDGE_IDS = ("lex-a", "lex-b")


def config() -> EvalConfig:
    return EvalConfig(judges=tuple(JudgeSpec(model=j) for j in JUDGE_IDS), top_k=3, score_threshold=0.5,
                      methods=(Method.QCARE, Method.ELEMENTS), concurrency=1)


async def main(store_path: str, run_dir: str, run_id: str, n: int, delay_s: float, log: Path) -> list[str]:
    samples, system = many_samples(n)
    judges = [InstrumentedJudge(j, BaselineJudge(BaselineRule.LEXICAL), delay_s, log) for j in JUDGE_IDS]
    finished = []
    with RecordStore(store_path) as store:
        runner = Runner(make_context(store, config(), judges, system), run_id, Path(run_dir))
        async for diagnostics in runner.astream(samples):
            finished.append(diagnostics.sample_id)
            print(diagnostics.sample_id, flush=True)
    return finished


if __name__ == "__main__":
    store_path, run_dir, run_id, n, delay_s, log = sys.argv[1:7]
    asyncio.run(main(store_path, run_dir, run_id, int(n), float(delay_s), Path(log)))
