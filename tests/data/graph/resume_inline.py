"""Resume one sample stopped at an inline-review interrupt, in a process of its own.

    python resume_inline.py STORE RUN_DIR RUN_ID SAMPLE_ID CHECK_ID LABEL

Builds the same scripted judges and system as the process that started the run (same ids), resumes the
sample with one person's decision on CHECK_ID and prints one JSON object: the diagnostics and how many
calls the judges and the system got in this process.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from graph_fixtures import SAMPLES, fixture_config, fixture_judges, fixture_system, make_context
from ragcourt.schema.config import ReviewMode
from ragcourt.nodes.human_review import ReviewDecision
from ragcourt.runs.runner import Runner
from ragcourt.schema import Label, ReviewAction
from ragcourt.stores.records import RecordStore


async def main(store_path: str, run_dir: str, run_id: str, sample_id: str, check_id: str, label: str) -> None:
    system, judges = fixture_system(), fixture_judges()
    with RecordStore(store_path) as store:
        context = make_context(store, fixture_config(review_mode=ReviewMode.INLINE), judges, system)
        runner = Runner(context, run_id, Path(run_dir))
        decision = ReviewDecision(check_id=check_id, reviewer="ann", action=ReviewAction.OVERRIDE, label=Label(label),
                                  comment="the bananas chunk does not mention rockets")
        diagnostics = await runner.resume(SAMPLES[sample_id], [decision])
    print(json.dumps({
        "diagnostics": diagnostics.model_dump(mode="json") if diagnostics else None,
        "judge_calls": sum(len(j.calls) for j in judges),
        "system_calls": len(system.calls),
    }))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:7]))
