"""A jury of scripted judges of known accuracies for run-level tests of the weighted reconciliation and the
review budget: a judge is right on a check unless a seeded hash of (check, judge) says otherwise, so the same
check always gets the same label and the truth of every check is known (`truth`)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ragcourt.runs.models import Models, eval_context
from ragcourt.runs.runner import Runner
from ragcourt.schema import Check, CheckKind, Chunk, Label, Sample, Verdict, VerdictStatus
from ragcourt.schema.config import EvalConfig, JudgeSpec, Method, Reconcile
from ragcourt.stores.records import RecordStore
from ragcourt.systems import Precomputed

ACCURACY = {"strong": 0.95, "middling": 0.7, "weak": 0.6}


def _unit(*parts: str) -> float:
    return int(hashlib.sha256("|".join(parts).encode()).hexdigest()[:8], 16) / 0xFFFFFFFF


def truth(check: Check) -> Label:
    return Label.YES if _unit(check.id, "truth") < 0.5 else Label.NO


@dataclass
class ScriptedJudge:
    """Right with its accuracy, on a seeded hash of (check, judge): the same check always gets the same label."""

    judge_id: str

    async def judge(self, kind: CheckKind, checks: Sequence[Check]) -> list[Verdict]:
        out = []
        for check in checks:
            right = truth(check)
            wrong = Label.NO if right is Label.YES else Label.YES
            label = right if _unit(check.id, self.judge_id) < ACCURACY[self.judge_id] else wrong
            out.append(Verdict(check_id=check.id, judge_id=self.judge_id, status=VerdictStatus.OK, label=label))
        return out


SAMPLES = [
    Sample(
        id=f"s{i}", question=f"What does part {i} of the manual say?",
        reference_answer=f"Part {i} covers valves. Part {i} covers pumps.",
        contexts=tuple(Chunk(id=f"c{i}-{j}", text=f"Chunk {j} of part {i} is about item {i * j}.") for j in range(4)),
        answer=f"Part {i} is about valves. It also covers pumps. Item {i} is shown.",
    )
    for i in range(12)
]


def config(reconcile: Reconcile) -> EvalConfig:
    return EvalConfig(judges=tuple(JudgeSpec(model="lexical", id=name) for name in ACCURACY),
                      methods=(Method.QCARE, Method.ELEMENTS), reconcile=reconcile)


def runner_for(store: RecordStore, tmp_path: Path, run_id: str, reconcile: Reconcile) -> Runner:
    cfg = config(reconcile)
    context = eval_context(cfg, Precomputed(), store, Models(cfg, store), None, None)
    context.judges = [ScriptedJudge(name) for name in ACCURACY]
    return Runner(context, run_id, tmp_path / "runs" / run_id)


def majority(store: RecordStore, check_id: str) -> Label | None:
    labels = [v.label for v in store.get_verdicts([check_id]) if v.judge_id in ACCURACY]
    yes, no = labels.count(Label.YES), labels.count(Label.NO)
    return Label.YES if yes > no else Label.NO if no > yes else None
