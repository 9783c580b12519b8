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

    async def judge_sample(self, checks: Sequence[Check], *, follow_up: bool = False,
                           reply_limit: int | None = None, sufficiency_from_links: bool = False) -> list[Verdict]:
        """`reply_limit`: most items per reply (a longer batch takes several calls); `follow_up`: ask once
        more for the checks a reply left undecided; `sufficiency_from_links`: also verdicts on the sufficiency
        checks the reply's serve links make (after the batch's own; batching joint)."""
        ...
