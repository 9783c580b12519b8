"""Scripted stand-ins for the per-sample graph and run-level tests, shared with the subprocess scripts here.

Everything is in process and deterministic:

- `ScriptedSystem`: a RAGSystem whose corpus is a fixed ranked list per sample (with scores), so
  `retrieve(k, threshold)` is "the first k, then the threshold", and whose answers are fixed texts. It
  records every call, and can be told to fail on chosen samples.
- `NeedleJudge`: a Judge that decides by check kind and subject text only: it looks up the needle
  scripted for (kind, subject text) and says yes iff the needle occurs in the check's target text
  (case-insensitive); no needle means no. It never looks at a prompt.
- `InstrumentedJudge`: wraps a judge to log each call (one JSON line: judge, kind, check ids) to a file,
  sleep, or fail every call.

The three-sample fixture (`SAMPLES`, `RANKED`, `ANSWERS`, `NEEDLES_A`, `NEEDLES_B`) is worked out by hand in
tests/graphs/test_sample_graph.py; the decomposer is the no-LLM `SentenceDecomposer`, so sub-queries,
elements and claims are the '?'-parts and sentences of the texts below.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragcourt.schema.config import EvalConfig, JudgeSpec, Method
from ragcourt.judging.decomposers import SentenceDecomposer
from ragcourt.judging.jury import Judge
from ragcourt.schema import Check, CheckKind, Chunk, Condition, Label, Sample, Verdict, VerdictStatus
from ragcourt.nodes.state import EvalContext
from ragcourt.stores.records import RecordStore
from ragcourt.systems import Generation

K = CheckKind
JUDGE_A, JUDGE_B = "judge-a", "judge-b"
TOP_K, SCORE_THRESHOLD = 3, 0.5


# --------------------------------------------------------------------------- the system under test


def ranked(sample_id: str, *texts_and_scores: tuple[str, float]) -> list[Chunk]:
    return [
        Chunk(id=f"{sample_id}c{i}", text=text, score=score, rank=i, title=None)
        for i, (text, score) in enumerate(texts_and_scores, start=1)
    ]


@dataclass
class ScriptedSystem:
    ranked: Mapping[str, Sequence[Chunk]]
    answers: Mapping[str, str]
    name: str = "scripted-rag"
    fail_retrieve: frozenset[str] = frozenset()
    fail_generate: frozenset[str] = frozenset()
    calls: list[tuple[Any, ...]] = field(default_factory=list)

    def retrieve_calls(self, sample_id: str) -> list[tuple[int, float | None]]:
        return [(c[2], c[3]) for c in self.calls if c[0] == "retrieve" and c[1] == sample_id]

    async def retrieve(self, sample: Sample, k: int, score_threshold: float | None) -> list[Chunk]:
        self.calls.append(("retrieve", sample.id, k, score_threshold))
        if sample.id in self.fail_retrieve:
            raise RuntimeError(f"index offline for {sample.id}")
        top = list(self.ranked[sample.id])[:k]
        return [c for c in top if score_threshold is None or (c.score or 0.0) >= score_threshold]

    async def generate(self, sample: Sample, chunks: Sequence[Chunk], condition: Condition) -> Generation:
        self.calls.append(("generate", sample.id, condition.key, tuple(c.id for c in chunks)))
        if sample.id in self.fail_generate:
            raise RuntimeError(f"generator crashed on {sample.id}")
        return Generation(text=self.answers[sample.id], used_chunk_ids=tuple(c.id for c in chunks[:1]))


# --------------------------------------------------------------------------- judges


@dataclass
class NeedleJudge:
    judge_id: str
    needles: Mapping[tuple[CheckKind, str], str]
    calls: list[tuple[CheckKind, tuple[str, ...]]] = field(default_factory=list)

    def label(self, kind: CheckKind, check: Check) -> Label:
        needle = self.needles.get((kind, check.subject_text))
        return Label.YES if needle and needle.lower() in check.target_text.lower() else Label.NO

    async def judge(self, kind: CheckKind, checks: Sequence[Check]) -> list[Verdict]:
        self.calls.append((kind, tuple(c.id for c in checks)))
        return [
            Verdict(check_id=c.id, judge_id=self.judge_id, status=VerdictStatus.OK, label=self.label(kind, c),
                    rationale=f"needle {self.needles.get((kind, c.subject_text))!r}")
            for c in checks
        ]


@dataclass
class InstrumentedJudge:
    """Logs every call to `log` (one JSON line, written before the work), sleeps `delay_s`, then either
    raises `error` or asks `inner` and relabels its verdicts with this judge's id."""

    judge_id: str
    inner: Judge | None = None
    delay_s: float = 0.0
    log: Path | None = None
    error: BaseException | None = None
    calls: int = 0

    async def judge(self, kind: CheckKind, checks: Sequence[Check]) -> list[Verdict]:
        self.calls += 1
        if self.log is not None:
            line = json.dumps({"judge": self.judge_id, "kind": str(kind), "checks": [c.id for c in checks]})
            with self.log.open("a", encoding="utf-8") as handle:
                handle.write(line + "\n")
                handle.flush()
                os.fsync(handle.fileno())
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.error is not None:
            raise self.error
        assert self.inner is not None
        verdicts = await self.inner.judge(kind, checks)
        return [v.model_copy(update={"judge_id": self.judge_id}) for v in verdicts]


# --------------------------------------------------------------------------- the three-sample fixture

S1 = Sample(  # two sub-queries, full element coverage, one judge disagreement
    id="s1",
    question="Who founded Acme? When was Acme founded?",
    reference_answer="Acme was founded by Ada Lovelace. Acme was founded in 1990.",
)
S2 = Sample(  # coverage 1/3 < 0.6: the loose branch
    id="s2",
    question="Where is the Acme headquarters?",
    reference_answer="The headquarters is in Springfield. The building has ten floors. The roof is green.",
)
S3 = Sample(  # coverage exactly 3/5 = 0.6: no loose branch
    id="s3",
    question="What does the Acme anvil warranty cover?",
    reference_answer=(
        "The warranty lasts two years. It covers cracks. It covers rust. Returns need a receipt. "
        "Shipping is free."
    ),
)
SAMPLES = {s.id: s for s in (S1, S2, S3)}

RANKED = {
    "s1": ranked(
        "s1",
        ("Bananas are yellow.", 0.9),
        ("Ada Lovelace founded Acme.", 0.8),
        ("Acme opened its doors in 1990.", 0.7),
        ("Rockets are loud.", 0.3),
    ),
    "s2": ranked(
        "s2",
        ("Acme headquarters are in Springfield.", 0.9),
        ("Acme makes anvils.", 0.6),
        ("Anvils are heavy.", 0.4),
        ("The Acme building has ten floors.", 0.3),
        ("Springfield is a town.", 0.2),
        ("Towns have mayors.", 0.1),
        ("The Acme roof is green.", 0.05),
    ),
    "s3": ranked(
        "s3",
        ("The anvil warranty lasts two years and covers cracks.", 0.9),
        ("Rust is covered by the warranty.", 0.8),
        ("Anvils ship worldwide.", 0.2),
    ),
}

ANSWERS = {
    "s1": "Ada Lovelace founded Acme. It opened in the nineties. Acme sells rockets.",
    "s2": "The headquarters is in Springfield.",
    "s3": "The warranty lasts two years. Keep your receipt for returns.",
}

NEEDLES_A: dict[tuple[CheckKind, str], str] = {
    # s1 sub-queries "Who founded Acme?" and "When was Acme founded?"
    (K.SUBQUERY_IN_CHUNK, "Who founded Acme?"): "Lovelace",
    (K.SUBQUERY_IN_CHUNK, "When was Acme founded?"): "1990",
    (K.SUBQUERY_ANSWERED, "Who founded Acme?"): "Lovelace",
    (K.SUBQUERY_ANSWERED, "When was Acme founded?"): "nineties",
    (K.CLAIM_SERVES_SUBQUERY, "Ada Lovelace founded Acme."): "who",
    (K.CLAIM_SERVES_SUBQUERY, "It opened in the nineties."): "when",
    (K.CLAIM_SUPPORTED, "Ada Lovelace founded Acme."): "Lovelace",
    (K.CLAIM_SUPPORTED, "It opened in the nineties."): "opened",
    (K.CLAIM_SUPPORTED, "Acme sells rockets."): "rockets",
    (K.ELEMENT_IN_CONTEXT, "Acme was founded by Ada Lovelace."): "Lovelace",
    (K.ELEMENT_IN_CONTEXT, "Acme was founded in 1990."): "1990",
    (K.ELEMENT_IN_ANSWER, "Acme was founded by Ada Lovelace."): "Lovelace",
    (K.ELEMENT_IN_ANSWER, "Acme was founded in 1990."): "1990",
    # s2
    (K.SUBQUERY_IN_CHUNK, "Where is the Acme headquarters?"): "Springfield",
    (K.SUBQUERY_ANSWERED, "Where is the Acme headquarters?"): "Springfield",
    (K.CLAIM_SERVES_SUBQUERY, "The headquarters is in Springfield."): "where",
    (K.CLAIM_SUPPORTED, "The headquarters is in Springfield."): "Springfield",
    (K.ELEMENT_IN_CONTEXT, "The headquarters is in Springfield."): "Springfield",
    (K.ELEMENT_IN_CONTEXT, "The building has ten floors."): "ten floors",
    (K.ELEMENT_IN_CONTEXT, "The roof is green."): "green",
    (K.ELEMENT_IN_ANSWER, "The headquarters is in Springfield."): "Springfield",
    (K.ELEMENT_IN_ANSWER, "The building has ten floors."): "ten floors",
    (K.ELEMENT_IN_ANSWER, "The roof is green."): "green",
    # s3
    (K.SUBQUERY_IN_CHUNK, "What does the Acme anvil warranty cover?"): "warranty",
    (K.SUBQUERY_ANSWERED, "What does the Acme anvil warranty cover?"): "two years",
    (K.CLAIM_SERVES_SUBQUERY, "The warranty lasts two years."): "warranty",
    (K.CLAIM_SUPPORTED, "The warranty lasts two years."): "two years",
    (K.CLAIM_SUPPORTED, "Keep your receipt for returns."): "receipt",
    (K.ELEMENT_IN_CONTEXT, "The warranty lasts two years."): "two years",
    (K.ELEMENT_IN_CONTEXT, "It covers cracks."): "cracks",
    (K.ELEMENT_IN_CONTEXT, "It covers rust."): "rust",
    (K.ELEMENT_IN_CONTEXT, "Returns need a receipt."): "receipt",
    (K.ELEMENT_IN_CONTEXT, "Shipping is free."): "free",
    (K.ELEMENT_IN_ANSWER, "The warranty lasts two years."): "two years",
    (K.ELEMENT_IN_ANSWER, "It covers cracks."): "cracks",
    (K.ELEMENT_IN_ANSWER, "It covers rust."): "rust",
    (K.ELEMENT_IN_ANSWER, "Returns need a receipt."): "receipt",
    (K.ELEMENT_IN_ANSWER, "Shipping is free."): "free",
}
# Judge B agrees everywhere except one check: it finds "Acme sells rockets." supported by "Bananas are yellow."
NEEDLES_B = {**NEEDLES_A, (K.CLAIM_SUPPORTED, "Acme sells rockets."): "bananas"}


def fixture_config(judge_ids: Sequence[str] = (JUDGE_A, JUDGE_B), **overrides: Any) -> EvalConfig:
    return EvalConfig(
        judges=tuple(JudgeSpec(model=j) for j in judge_ids), top_k=TOP_K, score_threshold=SCORE_THRESHOLD,
        methods=(Method.QCARE, Method.ELEMENTS), concurrency=overrides.pop("concurrency", 3), **overrides,
    )


def fixture_system(**options: Any) -> ScriptedSystem:
    return ScriptedSystem(ranked=RANKED, answers=ANSWERS, **options)


def fixture_judges(judge_ids: Sequence[str] = (JUDGE_A, JUDGE_B)) -> list[NeedleJudge]:
    first, second = judge_ids
    return [NeedleJudge(first, NEEDLES_A), NeedleJudge(second, NEEDLES_B)]


def make_context(store: RecordStore, config: EvalConfig, judges: Sequence[Judge], system: Any) -> EvalContext:
    return EvalContext(config=config, system=system, judges=list(judges), decomposer=SentenceDecomposer(),
                       store=store)


# --------------------------------------------------------------------------- many samples (run level)


def many_samples(n: int) -> tuple[list[Sample], ScriptedSystem]:
    """n samples in the shape of s1, each with its own words; for the kill / resume tests."""
    samples, corpus, answers = [], {}, {}
    for i in range(n):
        sample_id = f"k{i}"
        samples.append(Sample(
            id=sample_id, question=f"Who built tower {i}? When was tower {i} built?",
            reference_answer=f"Tower {i} was built by Mason{i}. Tower {i} was built in {1900 + i}.",
        ))
        corpus[sample_id] = ranked(
            sample_id, (f"Mason{i} built tower {i}.", 0.9), (f"Bananas number {i}.", 0.8),
            (f"Tower {i} opened in {1900 + i}.", 0.7), (f"Tower {i} was built in {1900 + i} by Mason{i}.", 0.2),
        )
        answers[sample_id] = f"Mason{i} built tower {i}. It is tall."
    return samples, ScriptedSystem(ranked=corpus, answers=answers)
