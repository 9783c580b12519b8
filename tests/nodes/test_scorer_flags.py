"""Figures of a sample whose split failed are flagged, per figure, with the split and how it touched them.

One sample: question "Who built the tower? When was it built?" split in two sub-queries, two chunks, the
answer's two claims, every check decided yes. Its reference answer's element split failed (no "elements" in
the state, as decompose_inputs leaves it). The element coverages are n/a (SPLIT_FAILED); the Q-CARE figures
have values, and with an LLM judge asked once per sample (batching per_sample) they were judged in a call that
listed no element: JUDGED_WITHOUT_SPLIT. With per-kind calls, or a judge that is not asked per sample, the
Q-CARE calls are those of a run without the fault: not flagged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest
from langgraph.runtime import Runtime

from ragcourt.nodes.check_planner import build_checks
from ragcourt.nodes.scorer import score
from ragcourt.nodes.state import EvalContext
from ragcourt.schema import (
    NORMAL,
    Answer,
    Check,
    CheckKind,
    Chunk,
    Claim,
    DecompositionKind,
    Element,
    FigureFlag,
    InputFlag,
    Label,
    Reconciled,
    ReconcileMethod,
    Retrieval,
    Sample,
    SampleDiagnostics,
    SubQuery,
    Verdict,
)
from ragcourt.schema.config import Batching, EvalConfig, Method

SAMPLE = Sample(id="s", question="Who built the tower? When was it built?",
                reference_answer="Mason built the tower. It was built in 1900.")
CHUNKS = (Chunk(id="c0", text="Mason built the tower in 1900."), Chunk(id="c1", text="Bananas are yellow."))
SUBQUERIES = (SubQuery(id="q0", text="Who built the tower?", index=0),
              SubQuery(id="q1", text="When was the tower built?", index=1))
CLAIMS = (Claim(id="a0", text="Mason built the tower.", index=0), Claim(id="a1", text="It was built in 1900.", index=1))
QCARE = ("c_prec", "c_ndcg", "completeness", "conciseness", "verifiableness")


@dataclass
class Store:
    """What score() writes to: the diagnostics."""

    written: list[SampleDiagnostics] = field(default_factory=list)

    async def aput(self, *records: SampleDiagnostics) -> None:
        self.written.extend(records)


@dataclass
class PerSampleJudge:
    """A judge the judge node asks once per sample (it has judge_sample); never called here."""

    judge_id: str = "llm"

    async def judge(self, kind: CheckKind, checks: Sequence[Check]) -> list[Verdict]:
        raise AssertionError("not called by score")

    async def judge_sample(self, checks: Sequence[Check], *, follow_up: bool = False, reply_limit: int | None = None,
                           sufficiency_from_links: bool = False) -> list[Verdict]:
        raise AssertionError("not called by score")


@dataclass
class PerKindJudge:
    judge_id: str = "lexical"

    async def judge(self, kind: CheckKind, checks: Sequence[Check]) -> list[Verdict]:
        raise AssertionError("not called by score")


def yes(check: Check) -> Reconciled:
    return Reconciled(run_id="r", check_id=check.id, kind=check.kind, sample_id="s", label=Label.YES,
                      method=ReconcileMethod.MAJORITY, n_scored=1, n_unscored=0)


def judged_state(config: EvalConfig, **splits: object) -> dict:
    """The sample's state after judging: every check decided yes (the sufficiency checks in a second round,
    planned on the serve decisions of the first, as the graph does)."""
    state: dict = {
        "run_id": "r", "sample": SAMPLE, **splits,
        "retrievals": {NORMAL.key: Retrieval(run_id="r", sample_id="s", condition=NORMAL, chunks=CHUNKS, made_by="t")},
        "answers": {NORMAL.key: Answer(run_id="r", sample_id="s", condition=NORMAL,
                                       text="Mason built the tower. It was built in 1900.")},
    }
    for _ in range(2):
        checks = build_checks(state, config)
        state["checks"] = {c.id: c for c in checks}
        state["reconciled"] = {c.id: yes(c) for c in checks}
    return state


async def scored(config: EvalConfig, judges: list, **splits: object) -> SampleDiagnostics:
    store = Store()
    context = EvalContext(config=config, system=None, judges=judges, decomposer=None, store=store)  # type: ignore[arg-type]
    update = await score(judged_state(config, **splits), Runtime(context=context))
    assert store.written == [update["diagnostics"]]
    return update["diagnostics"]


def flags(diagnostics: SampleDiagnostics) -> dict[str, tuple[float | None, InputFlag | None]]:
    return {m.name: (m.value, m.flag) for m in diagnostics.metrics}


CONFIG = EvalConfig(methods=(Method.QCARE, Method.ELEMENTS))
SPLITS = {"subqueries": SUBQUERIES, "claims": {NORMAL.key: CLAIMS}}
WITHOUT_ELEMENTS = InputFlag(cause=FigureFlag.JUDGED_WITHOUT_SPLIT, splits=(DecompositionKind.ELEMENTS,))
NO_ELEMENTS = InputFlag(cause=FigureFlag.SPLIT_FAILED, splits=(DecompositionKind.ELEMENTS,))


async def test_a_failed_element_split_flags_the_figures_judged_in_the_same_call() -> None:
    diagnostics = await scored(CONFIG, [PerSampleJudge()], **SPLITS)
    assert diagnostics.failed_splits == (DecompositionKind.ELEMENTS,)
    assert flags(diagnostics) == {
        "c_prec": (1.0, WITHOUT_ELEMENTS), "c_ndcg": (1.0, WITHOUT_ELEMENTS),  # given contexts: no @k
        "completeness": (1.0, WITHOUT_ELEMENTS), "conciseness": (1.0, WITHOUT_ELEMENTS),
        "verifiableness": (1.0, WITHOUT_ELEMENTS),
        "element_answer_coverage": (None, NO_ELEMENTS), "element_coverage": (None, NO_ELEMENTS),
    }


@pytest.mark.parametrize("batching", [Batching.PER_SAMPLE, Batching.PER_KIND])
async def test_per_kind_calls_leave_the_other_kinds_figures_unflagged(batching: Batching) -> None:
    # per_sample with a judge that is only asked per kind (a baseline), or per_kind for every judge
    judges = [PerKindJudge()] if batching is Batching.PER_SAMPLE else [PerSampleJudge()]
    diagnostics = await scored(CONFIG.with_overrides(batching=batching), judges, **SPLITS)
    assert diagnostics.failed_splits == (DecompositionKind.ELEMENTS,)
    assert {name: flag for name, (_, flag) in flags(diagnostics).items() if flag is not None} == {
        "element_answer_coverage": NO_ELEMENTS, "element_coverage": NO_ELEMENTS}


async def test_failed_question_and_claim_splits_are_named_on_every_figure_they_touch() -> None:
    elements = {"elements": (), "dropped_elements": ()}  # an element list split to nothing is no failure
    diagnostics = await scored(CONFIG, [PerSampleJudge()], **elements)
    both = (DecompositionKind.SUBQUERIES, DecompositionKind.CLAIMS)
    assert diagnostics.failed_splits == both
    assert {name: flag for name, (_, flag) in flags(diagnostics).items()} == {
        "c_prec": InputFlag(cause=FigureFlag.SPLIT_FAILED, splits=(DecompositionKind.SUBQUERIES,)),
        "c_ndcg": InputFlag(cause=FigureFlag.SPLIT_FAILED, splits=(DecompositionKind.SUBQUERIES,)),
        **dict.fromkeys(("completeness", "conciseness", "verifiableness"),
                        InputFlag(cause=FigureFlag.SPLIT_FAILED, splits=both)),
    }  # no element: no element figure


async def test_a_sample_whose_splits_all_came_has_no_flag_and_stores_as_before_flags_existed() -> None:
    element = Element(id="e0", text="Mason built the tower.", index=0)
    diagnostics = await scored(CONFIG, [PerSampleJudge()], **SPLITS, elements=(element,), dropped_elements=())
    assert diagnostics.failed_splits == ()
    assert all(m.flag is None for m in diagnostics.metrics) and len(diagnostics.metrics) == len(QCARE) + 2
    dumped = diagnostics.model_dump(mode="json")
    assert "failed_splits" not in dumped and all("flag" not in m for m in dumped["metrics"])
    # as a run stored before flags existed reads back: no flag, no failed split
    assert SampleDiagnostics.model_validate(dumped) == diagnostics
