"""The per-sample graph state and the runtime context handed to every node.

State values are our immutable records; the dict-valued channels merge, so parallel branches (the
judges' Send fan-out) each add their part. The runtime context carries what the composition root built:
the system under test, the jury, the decomposer, the store. Nodes never build those themselves.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict

from ragcourt.judging import Judge
from ragcourt.judging.decomposers import Decomposer, SplitsInFlight
from ragcourt.schema import (
    Answer,
    Check,
    CheckKind,
    Claim,
    Decomposition,
    Element,
    Label,
    Reconciled,
    Retrieval,
    Review,
    Sample,
    SampleDiagnostics,
    SubQuery,
    Verdict,
)
from ragcourt.schema.config import EvalConfig
from ragcourt.stores.records import RecordStore
from ragcourt.stores.vectors import VectorStore
from ragcourt.systems import ConfidenceProbe, RAGSystem


def merge(left: dict[str, Any] | None, right: dict[str, Any] | None) -> dict[str, Any]:
    return {**(left or {}), **(right or {})}


def verdict_key(check_id: str, judge_id: str) -> str:
    return f"{check_id}|{judge_id}"


class SampleState(TypedDict, total=False):
    run_id: str
    sample: Sample
    pinned_splits: tuple[Decomposition, ...]  # the splits this sample already used in this run (runner)
    subqueries: tuple[SubQuery, ...]
    elements: tuple[Element, ...]
    dropped_elements: tuple[Element, ...]  # pointer elements left out by the configured rule
    retrievals: Annotated[dict[str, Retrieval], merge]  # condition key -> retrieval
    answers: Annotated[dict[str, Answer], merge]  # condition key -> answer
    unavailable: Annotated[dict[str, str], merge]  # condition key -> why it could not be produced
    # Why the system shows no normal retrieval (precomputed answers without contexts). Unlike a failed
    # retrieval, the answer is still judged; whatever needs the chunks is n/a. Unknown is not empty.
    retrieval_hidden: str
    claims: Annotated[dict[str, tuple[Claim, ...]], merge]  # condition key -> claims of its answer
    checks: Annotated[dict[str, Check], merge]  # check id -> check
    verdicts: Annotated[dict[str, Verdict], merge]  # verdict_key -> verdict
    reconciled: Annotated[dict[str, Reconciled], merge]  # check id -> reconciled
    reviews: Annotated[dict[str, Review], merge]  # check id -> the deciding review
    loose_requested: bool
    diagnostics: SampleDiagnostics


class JudgeTask(TypedDict):
    """One judge's batch, sent with `Send`: all checks of one kind, sample and condition."""

    judge_index: int
    kind: CheckKind
    checks: list[Check]
    # Ask the whole batch again, stored verdicts of its checks included: they were judged in a batch that
    # lacked the checks of a split that has failed since (splits_mended), so they are not what this batch decides.
    whole_batch: bool


@dataclass
class EvalContext:
    """Built by the composition root (CLI or Python API) and passed as the LangGraph runtime context."""

    config: EvalConfig
    system: RAGSystem
    judges: list[Judge]
    decomposer: Decomposer
    store: RecordStore
    vectors: VectorStore | None = None
    collection: str | None = None
    splits_in_flight: SplitsInFlight = field(default_factory=dict)  # see decomposers.frozen_split
    confidence_probe: ConfidenceProbe | None = None  # CUE-R: asked when the system reports no confidence
    # reconcile: weighted: check id -> the jury's Dawid-Skene posterior (validity.jury_weights), set for the run's
    # final step and for re-scores; empty on the first pass, which the majority rule decides
    posteriors: Mapping[str, Mapping[Label, float]] = field(default_factory=dict)
