"""A judge that gives CuBE dimension scores from a script: (condition kind, dimension) -> one score per sample, in
the order of the sample ids given (the hand-computed CuBE scenarios)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ragcourt.schema import Check, CheckKind, ConditionKind, Verdict, VerdictStatus


@dataclass
class ScriptedScores:
    script: Mapping[tuple[ConditionKind, str], Sequence[float]]
    sample_ids: Sequence[str]
    judge_id: str = "j"

    async def judge(self, kind: CheckKind, checks: Sequence[Check]) -> list[Verdict]:
        assert kind is CheckKind.DIMENSION_SCORE
        return [Verdict(check_id=c.id, judge_id=self.judge_id, status=VerdictStatus.OK,
                        score=float(self.script[(c.condition.kind, c.dimension)][self.sample_ids.index(c.sample_id)]))
                for c in checks]
