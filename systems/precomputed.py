"""A system given as data: the contexts and answers a dataset carries."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ragcourt.schema import Chunk, Condition, ConditionKind, Sample
from ragcourt.systems.protocol import ConditionUnavailable, Generation, Generator


@dataclass
class Precomputed:
    """Contexts and answers given in the dataset. Only the normal condition exists, unless `bounds` names a
    generator for the closed-book and oracle answers (CuBE's bounds, which the system itself never produced).
    A dataset's answer names no chunk it used: no trace (CUE-R judges one from the answer's claims)."""

    name: str = "precomputed"
    bounds: Generator | None = None
    # Its contexts are fixed: it cannot retrieve again loosely, so a loose re-run is unavailable
    # (and elements missing from the contexts stay undecided instead of becoming document gaps).
    fixed_retrieval: bool = True

    async def retrieve(self, sample: Sample, k: int, score_threshold: float | None) -> list[Chunk]:
        if sample.contexts is None:
            raise ConditionUnavailable(f"sample {sample.id} has no precomputed contexts")
        return list(sample.contexts)

    async def generate(self, sample: Sample, chunks: Sequence[Chunk], condition: Condition) -> Generation:
        is_bound = condition.kind in (ConditionKind.CLOSED_BOOK, ConditionKind.ORACLE)
        if is_bound and self.bounds is not None:
            return await self.bounds.generate(sample.question, chunks)
        if condition.kind is not ConditionKind.NORMAL:
            hint = " (set bounds_generator in the config to generate the CuBE bounds)" if is_bound else ""
            raise ConditionUnavailable(
                f"precomputed answers exist only for the normal condition, not {condition.key}{hint}"
            )
        if sample.answer is None:
            raise ConditionUnavailable(f"sample {sample.id} has no precomputed answer")
        return Generation(text=sample.answer)  # a dataset's answer names no chunk it used: no trace
