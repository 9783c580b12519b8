"""What a judge is to the pipeline: the protocols the judge node and the run-level code call.

`llm_judge.LLMJudge` and `baseline.BaselineJudge` implement them; tests and benchmarks pass fakes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ragcourt.schema import Check, CheckKind, Verdict


class Judge(Protocol):
    @property
    def judge_id(self) -> str: ...

    async def judge(self, kind: CheckKind, checks: Sequence[Check]) -> list[Verdict]: ...


@runtime_checkable
class SampleJudge(Protocol):
    """A judge that can also decide all alignment checks of one sample and condition in one call
    (config batching=per_sample); the judge node sends it such batches, other judges get per-kind ones."""

    @property
    def judge_id(self) -> str: ...

    async def judge_sample(self, checks: Sequence[Check]) -> list[Verdict]: ...
