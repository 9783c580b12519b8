"""The per-sample graph end to end, with scripted judges and a scripted system (tests/fixtures/graph).

The fixture, worked out by hand (decomposer: sentences; judges: a needle in the target text, see
graph_fixtures.py; top_k 3, score threshold 0.5, loose threshold 0.6):

s1 "Who founded Acme? When was Acme founded?" -> sub-queries Qa "Who founded Acme?", Qb "When was Acme founded?"
   normal chunks (rank order): c1 "Bananas are yellow.", c2 "Ada Lovelace founded Acme.", c3 "Acme opened ... 1990."
   covers: c1 [n, n], c2 [Qa], c3 [Qb]  -> r = [0, 1/2, 1/2]
     C-Prec@3 = (0 + 1/2 + 1/2) / 3 = 1/3
     C-nDCG@3 = (1/2/log2 3 + 1/2/log2 4) / (1/2/log2 2 + 1/2/log2 3)
   claims A1 "Ada Lovelace founded Acme." (serves Qa, supported by c2), A2 "It opened in the nineties." (serves Qb,
   supported by c3), A3 "Acme sells rockets." (serves nothing; judge A: no chunk, judge B: c1 -> split)
     both sub-queries answered -> Completeness 2/2 = 1; Conciseness 2/3; Verifiableness 2/2 = 1 (A3's
     split check leaves A3 undecided until a person decides: n_unscored 1; it used to be 2/3 on judge A's
     "no", the first judge breaking the tie), 1 escalation: claim_supported(A3, c1)
   elements: "...Ada Lovelace." in context + answer -> answered; "...in 1990." in context, not in the answer
     (it says "nineties") -> generation_gap; coverage 2/2 = 1 -> no loose run
   checks: 2 + 2 element, 2x3 sub-query/chunk, 2 answered, 3x3 supported, 3x2 serves = 27
s2 one sub-query; normal = top 3 with score >= 0.5 = [c1 "...Springfield.", c2 "Acme makes anvils."]
   elements: Springfield (normal yes), ten floors (normal no), green (normal no) -> coverage 1/3 < 0.6 -> loose
   retrieval k = 6, no threshold = c1..c6 (c4 "...ten floors." ranks 4 with score 0.3; c7 "...green." ranks 7)
   -> Springfield answered, ten floors retrieval_gap, green document_gap
   Q-CARE: r = [1, 0] -> C-Prec@2 1/2, C-nDCG@2 1; the one claim serves, is supported: 1, 1, 1
   checks: 3 normal + 3 loose element_in_context, 3 in answer, 2 sub-query/chunk, 1 answered, 2 supported, 1 serves = 15
s3 five elements, three in the normal context -> coverage 3/5 = 0.6, not under the threshold: no loose run
   two years (context, answer) answered; cracks, rust (context only) generation_gap; receipt (answer only)
   answered; free (nowhere, no loose verdict) undecided
   Q-CARE: r = [1, 1] -> 1, 1; claims "The warranty lasts two years." (serves, supported by c1), "Keep your receipt
   for returns." (serves nothing, supported by nothing) -> Completeness 1, Conciseness 1/2, Verifiableness 1/2
   checks: 5 + 5 element, 2 sub-query/chunk, 1 answered, 2x2 supported, 2 serves = 19
"""

from __future__ import annotations

import asyncio
import math
import sys
from pathlib import Path

import pytest
from fixtures import FIXTURES

sys.path.insert(0, str(FIXTURES / "graph"))

from graph_fixtures import (
    JUDGE_A,
    JUDGE_B,
    NEEDLES_A,
    NEEDLES_B,
    SAMPLES,
    NeedleJudge,
    fixture_config,
    fixture_judges,
    fixture_system,
    make_context,
)

from ragcourt.analysis.qcare_tables import gap_share_frame
from ragcourt.graphs.sample import build_sample_graph
from ragcourt.judging.decomposers import SentenceDecomposer
from ragcourt.metrics.values import NaCause
from ragcourt.nodes.scorer import NO_REFERENCE
from ragcourt.schema import (
    LOOSE,
    NORMAL,
    CheckKind,
    DecompositionKind,
    ElementStatus,
    ElementVerdict,
    ReconcileMethod,
    SampleDiagnostics,
    SampleStatus,
)
from ragcourt.stores.records import RecordStore

RUN = "run-graph"


def values(diagnostics: SampleDiagnostics) -> dict[str, float | None]:
    return {m.name: m.value for m in diagnostics.metrics}


def statuses(diagnostics: SampleDiagnostics) -> list[tuple[str, ElementStatus]]:
    return [(e.text, e.status) for e in diagnostics.elements]


@pytest.fixture
def store(tmp_path: Path) -> RecordStore:
    with RecordStore(tmp_path / "store.sqlite") as opened:
        yield opened


async def run_samples(store: RecordStore, sample_ids: list[str], **config_changes):
    system, judges = fixture_system(), fixture_judges()
    context = make_context(store, fixture_config(**config_changes), judges, system)
    graph = build_sample_graph()
    states = {}
    for sample_id in sample_ids:
        states[sample_id] = await graph.ainvoke({"run_id": RUN, "sample": SAMPLES[sample_id]}, context=context)
    return states, system, judges


async def test_three_samples_end_to_end_match_hand_computed_diagnostics(store: RecordStore) -> None:
    states, _, judges = await run_samples(store, ["s1", "s2", "s3"])
    s1, s2, s3 = (states[s]["diagnostics"] for s in ("s1", "s2", "s3"))

    ndcg_s1 = (0.5 / math.log2(3) + 0.5 / math.log2(4)) / (0.5 / math.log2(2) + 0.5 / math.log2(3))
    # element_answer_coverage: the elements the answer states (s1: Lovelace, not 1990; s2: Springfield only;
    # s3: two years and receipt of five); element_coverage: those in the normal retrieval's chunks
    assert values(s1) == pytest.approx({
        "c_prec@3": 1 / 3, "c_ndcg@3": ndcg_s1, "completeness": 1.0, "conciseness": 2 / 3,
        "verifiableness": 1.0, "element_answer_coverage": 0.5, "element_coverage": 1.0,
    })
    assert (s1.metric("verifiableness").n, s1.metric("verifiableness").n_unscored) == (2, 1)
    assert ndcg_s1 == pytest.approx(0.693426, abs=1e-6)
    # s2 and s3 keep 2 chunks above the score threshold: C-Prec@3 still divides by k = 3 (seed 002 Eq. 7), so
    # every sample reports the same metric; the missing rank adds nothing to either DCG
    assert values(s2) == pytest.approx({
        "c_prec@3": 1 / 3, "c_ndcg@3": 1.0, "completeness": 1.0, "conciseness": 1.0, "verifiableness": 1.0,
        "element_answer_coverage": 1 / 3, "element_coverage": 1 / 3,
    })
    assert values(s3) == pytest.approx({
        "c_prec@3": 2 / 3, "c_ndcg@3": 1.0, "completeness": 1.0, "conciseness": 0.5, "verifiableness": 0.5,
        "element_answer_coverage": 0.4, "element_coverage": 0.6,
    })

    assert statuses(s1) == [
        ("Acme was founded by Ada Lovelace.", ElementStatus.ANSWERED),
        ("Acme was founded in 1990.", ElementStatus.GENERATION_GAP),
    ]
    assert statuses(s2) == [
        ("The headquarters is in Springfield.", ElementStatus.ANSWERED),
        ("The building has ten floors.", ElementStatus.RETRIEVAL_GAP),
        ("The roof is green.", ElementStatus.DOCUMENT_GAP),
    ]
    assert statuses(s3) == [
        ("The warranty lasts two years.", ElementStatus.ANSWERED),
        ("It covers cracks.", ElementStatus.GENERATION_GAP),
        ("It covers rust.", ElementStatus.GENERATION_GAP),
        ("Returns need a receipt.", ElementStatus.ANSWERED),
        ("Shipping is free.", ElementStatus.UNDECIDED),
    ]

    assert s1.unsupported_claims == ()  # A3 awaits review (split), so it is not known to be unsupported
    assert s2.unsupported_claims == ()
    assert s3.unsupported_claims == ("Keep your receipt for returns.",)
    assert (s1.uncovered_subqueries, s2.uncovered_subqueries, s3.uncovered_subqueries) == ((), (), ())
    assert [d.n_checks for d in (s1, s2, s3)] == [27, 15, 19]
    assert [d.n_unscored for d in (s1, s2, s3)] == [0, 0, 0]
    assert [d.status for d in (s1, s2, s3)] == [SampleStatus.OK] * 3

    # The one escalation: judge B finds "Acme sells rockets." in "Bananas are yellow."; the 1-1 tie is a
    # split with no label (no judge decides by being listed first).
    (escalated,) = s1.escalations
    check = states["s1"]["checks"][escalated]
    assert (check.kind, check.subject_text, check.target_id) == (
        CheckKind.CLAIM_SUPPORTED, "Acme sells rockets.", "s1c1")
    decision = states["s1"]["reconciled"][escalated]
    assert (decision.label, decision.split, decision.agreement, decision.provisional, decision.method) == (
        None, True, 0.5, True, ReconcileMethod.MAJORITY)
    assert s2.escalations == () and s3.escalations == ()
    assert s1.metric("verifiableness").n_escalated == 1
    assert s1.metric("c_prec@3").n_escalated == 0

    # What streamed out is what the store holds; both judges gave a verdict on every check.
    assert store.get_diagnostics(RUN, "s2") == [s2]
    assert sum(len(checks) for _, checks in judges[0].calls) == 27 + 15 + 19
    assert sum(len(checks) for _, checks in judges[1].calls) == 27 + 15 + 19
    stored = store.get_verdicts([c.id for c in store.checks_for(RUN)])
    assert len(stored) == 2 * (27 + 15 + 19)
    assert {v.judge_id for v in stored} == {JUDGE_A, JUDGE_B}


async def test_low_coverage_triggers_loose_retrieval_with_doubled_k_and_no_threshold(store: RecordStore) -> None:
    states, system, judges = await run_samples(store, ["s2"])
    diagnostics = states["s2"]["diagnostics"]

    # normal (k=3, threshold 0.5), then loose (k=2x3=6, no threshold), same sample; nothing generated for loose
    assert system.retrieve_calls("s2") == [(3, 0.5), (6, None)]
    assert [c[2] for c in system.calls if c[0] == "generate"] == [NORMAL.key]
    loose = {r.condition.key: r for r in store.get_retrievals(RUN, "s2")}[LOOSE.key]
    assert (loose.k, loose.score_threshold) == (6, None)
    assert [c.id for c in loose.chunks] == ["s2c1", "s2c2", "s2c3", "s2c4", "s2c5", "s2c6"]
    assert LOOSE.key not in states["s2"]["answers"]

    # The loose context was judged once per judge, as one batch of the three elements.
    loose_batches = [ids for kind, ids in judges[0].calls
                     if kind is CheckKind.ELEMENT_IN_CONTEXT and states["s2"]["checks"][ids[0]].condition == LOOSE]
    assert [len(ids) for ids in loose_batches] == [3]

    by_text = {e.text: e for e in diagnostics.elements}
    floors = by_text["The building has ten floors."]
    assert (floors.in_context, floors.in_loose_context, floors.in_answer) == (False, True, False)
    assert floors.status is ElementStatus.RETRIEVAL_GAP  # found only by the loose run: not a document gap
    green = by_text["The roof is green."]
    assert (green.in_context, green.in_loose_context, green.in_answer) == (False, False, False)
    assert green.status is ElementStatus.DOCUMENT_GAP
    assert diagnostics.metric("element_coverage").value == pytest.approx(1 / 3)


async def test_coverage_at_threshold_makes_no_loose_run(store: RecordStore) -> None:
    states, system, _ = await run_samples(store, ["s3"])
    diagnostics = states["s3"]["diagnostics"]

    assert diagnostics.metric("element_coverage").value == pytest.approx(0.6)
    assert system.retrieve_calls("s3") == [(3, 0.5)]
    assert [r.condition.key for r in store.get_retrievals(RUN, "s3")] == [NORMAL.key]
    assert not any(c.condition == LOOSE for c in states["s3"]["checks"].values())
    assert "loose_requested" not in states["s3"]
    # Missing elements stay where the normal run puts them: in context -> generation gap; nowhere and no
    # loose verdict -> undecided (never guessed as a retrieval or document gap).
    assert [e.in_loose_context for e in diagnostics.elements] == [None] * 5
    assert [e.status for e in diagnostics.elements] == [
        ElementStatus.ANSWERED, ElementStatus.GENERATION_GAP, ElementStatus.GENERATION_GAP,
        ElementStatus.ANSWERED, ElementStatus.UNDECIDED,
    ]


async def test_raising_the_threshold_above_coverage_triggers_the_loose_run(store: RecordStore) -> None:
    # Same sample, threshold 0.61 > 0.6: now the loose run happens (k 6, no threshold). s3 has only three
    # chunks, all in the loose run, so "Shipping is free." (in none) becomes a document gap.
    states, system, _ = await run_samples(store, ["s3"], loose_coverage_threshold=0.61)
    assert system.retrieve_calls("s3") == [(3, 0.5), (6, None)]
    statuses_by_text = dict(statuses(states["s3"]["diagnostics"]))
    assert statuses_by_text["Shipping is free."] is ElementStatus.DOCUMENT_GAP
    assert statuses_by_text["Returns need a receipt."] is ElementStatus.ANSWERED


class QuestionSplitAfterClaims:
    """Sentences, but the question's split waits until the answer's claims have been asked for: it can only
    finish when the two run side by side."""

    model_id = "sentences"

    def __init__(self) -> None:
        self._inner = SentenceDecomposer()
        self.claims_asked = asyncio.Event()
        self.order: list[DecompositionKind] = []

    def prompt_hash(self, kind: DecompositionKind) -> str:
        return self._inner.prompt_hash(kind)

    async def split(self, kind: DecompositionKind, text: str, question: str):
        if kind is DecompositionKind.CLAIMS:
            self.claims_asked.set()
        if kind is DecompositionKind.SUBQUERIES:
            await asyncio.wait_for(self.claims_asked.wait(), timeout=5)
        self.order.append(kind)
        return await self._inner.split(kind, text, question)


async def test_question_split_runs_beside_the_answer_claims_split(store: RecordStore) -> None:
    decomposer = QuestionSplitAfterClaims()
    context = make_context(store, fixture_config(), fixture_judges(), fixture_system())
    context.decomposer = decomposer
    state = await build_sample_graph().ainvoke({"run_id": RUN, "sample": SAMPLES["s1"]}, context=context)
    # Claims were split before the question was: the question's split did not hold up the answer.
    assert decomposer.order.index(DecompositionKind.CLAIMS) < decomposer.order.index(DecompositionKind.SUBQUERIES)
    # And the checks still saw both: the hand-computed s1 figures above.
    assert values(state["diagnostics"])["completeness"] == 1.0
    assert state["diagnostics"].n_checks == 27


async def test_a_sample_without_a_reference_answer_says_why_it_has_no_element_coverage(store: RecordStore) -> None:
    context = make_context(store, fixture_config(), fixture_judges(), fixture_system())
    sample = SAMPLES["s1"].model_copy(update={"reference_answer": None})
    state = await build_sample_graph().ainvoke({"run_id": RUN, "sample": sample}, context=context)
    for name in ("element_answer_coverage", "element_coverage"):
        coverage = state["diagnostics"].metric(name)
        assert coverage.value is None and coverage.na_reason == NO_REFERENCE
        assert NaCause.NO_REFERENCE.explains(coverage)
    assert state["diagnostics"].elements == ()


async def test_a_failed_answer_makes_the_answer_side_na_and_keeps_the_context_side(store: RecordStore) -> None:
    """s1's generator raises: nothing is known about what an answer states (n/a, typed, never 0), while the
    retrieved chunks were judged as usual (both elements in them: 1.0)."""
    context = make_context(store, fixture_config(), fixture_judges(), fixture_system(fail_generate=frozenset({"s1"})))
    state = await build_sample_graph().ainvoke({"run_id": RUN, "sample": SAMPLES["s1"]}, context=context)
    answer, coverage = (state["diagnostics"].metric(n) for n in ("element_answer_coverage", "element_coverage"))
    assert answer.value is None and NaCause.ANSWER_FAILED.explains(answer)
    assert answer.na_reason == "the answer failed: RuntimeError: generator crashed on s1"
    assert coverage.value == 1.0


# --------------------------------------------------------------------------- the order of the judges

JUDGE_C = "judge-c"
# Judge C is judge B (the s1 claim split above) that also misses two element verdicts judge A finds: s2's
# "...in Springfield." in the answer, and s3's "It covers cracks." in both contexts. Worked out by hand, each
# 1-1 split counting 0.5 (seed 003 averages the two judges):
#   s1: as above: answered + generation_gap, coverage 1 -> no loose run; the claim split leaves A3 undecided
#   s2: Springfield in context (both), in the answer split -> judges_split {answered 0.5, generation_gap 0.5};
#       ten floors retrieval_gap, green document_gap; coverage 1/3 -> loose
#   s3: coverage (1 + 0.5 + 1 + 0 + 0) / 5 = 0.5 < 0.6 -> loose (k 6, no threshold: all three chunks);
#       two years, receipt answered; rust generation_gap; free document_gap (now that loose ran); cracks missing
#       from the answer, split in both contexts -> {generation 0.5, retrieval 0.25, document 0.25}
#   run: counts answered 3, generation 2, retrieval 1, document 2, judges_split 2 over 10 elements; weights
#       answered 3.5, generation 3, retrieval 1.25, document 2.25; gap shares over 6.5: 6/13, 5/26, 9/26
# With the first listed judge breaking ties, s3's coverage was 0.6 (no loose run) with A first and 0.4 with C first.
NEEDLES_C = {
    **NEEDLES_B,
    (CheckKind.ELEMENT_IN_ANSWER, "The headquarters is in Springfield."): "no such needle",
    (CheckKind.ELEMENT_IN_CONTEXT, "It covers cracks."): "no such needle",
}


@pytest.mark.parametrize("order", [(JUDGE_A, JUDGE_C), (JUDGE_C, JUDGE_A)])
async def test_swapping_the_judges_order_changes_no_figure(tmp_path: Path, order: tuple[str, str]) -> None:
    needles = {JUDGE_A: NEEDLES_A, JUDGE_C: NEEDLES_C}

    async def run(judge_ids: tuple[str, str], home: Path) -> dict:
        with RecordStore(home / "store.sqlite") as opened:
            context = make_context(opened, fixture_config(judge_ids), [NeedleJudge(j, needles[j]) for j in judge_ids],
                                   fixture_system())
            graph = build_sample_graph()
            return {s: await graph.ainvoke({"run_id": RUN, "sample": SAMPLES[s]}, context=context)
                    for s in ("s1", "s2", "s3")}

    (tmp_path / "listed").mkdir()
    (tmp_path / "swapped").mkdir()
    listed = await run(order, tmp_path / "listed")
    swapped = await run(order[::-1], tmp_path / "swapped")
    for sample_id in ("s1", "s2", "s3"):
        a, b = listed[sample_id]["diagnostics"], swapped[sample_id]["diagnostics"]
        assert (a.metrics, a.elements, a.escalations) == (b.metrics, b.elements, b.escalations)
        assert listed[sample_id].get("loose_requested") == swapped[sample_id].get("loose_requested")
        assert {k: r.model_dump() for k, r in listed[sample_id]["reconciled"].items()} == {
            k: r.model_dump() for k, r in swapped[sample_id]["reconciled"].items()}

    diagnostics = [listed[s]["diagnostics"] for s in ("s1", "s2", "s3")]
    assert [d.metric("element_coverage").value for d in diagnostics] == pytest.approx([1.0, 1 / 3, 0.5])
    # the answer side: s1 1 of 2; s2 Springfield split (0.5) of 3; s3 two years and receipt of 5
    assert [d.metric("element_answer_coverage").value for d in diagnostics] == pytest.approx([0.5, 0.5 / 3, 0.4])
    # each side counts the escalations of its own checks: s2's split on the answer, s3's on cracks in the normal
    # and in the loose context
    assert [(d.metric("element_answer_coverage").n_escalated, d.metric("element_coverage").n_escalated)
            for d in diagnostics] == [(0, 0), (1, 0), (0, 2)]
    assert [bool(listed[s].get("loose_requested")) for s in ("s1", "s2", "s3")] == [False, True, True]
    s2, s3 = ({e.text: e for e in d.elements} for d in diagnostics[1:])
    springfield = s2["The headquarters is in Springfield."]
    assert (springfield.status, springfield.attribution) == (
        ElementStatus.JUDGES_SPLIT, {ElementStatus.ANSWERED: 0.5, ElementStatus.GENERATION_GAP: 0.5})
    cracks = s3["It covers cracks."]
    assert (cracks.status, cracks.split) == (ElementStatus.JUDGES_SPLIT, (ElementVerdict.IN_CONTEXT,
                                                                          ElementVerdict.IN_LOOSE_CONTEXT))
    assert cracks.attribution == {ElementStatus.GENERATION_GAP: 0.5, ElementStatus.RETRIEVAL_GAP: 0.25,
                                  ElementStatus.DOCUMENT_GAP: 0.25}
    assert s3["Shipping is free."].status is ElementStatus.DOCUMENT_GAP

    frames = [gap_share_frame([r[s]["diagnostics"] for s in ("s1", "s2", "s3")]) for r in (listed, swapped)]
    assert frames[0].to_dict("records") == frames[1].to_dict("records")
    rows = {row["status"]: row for row in frames[0].to_dict("records")}
    assert {s: rows[s]["count"] for s in rows} == {"answered": 3, "generation_gap": 2, "retrieval_gap": 1,
                                                   "document_gap": 2, "judges_split": 2, "undecided": 0}
    assert frames[0].attrs["weights"] == {"answered": 3.5, "generation_gap": 3.0, "retrieval_gap": 1.25,
                                          "document_gap": 2.25}
    assert (frames[0].attrs["n_split"], frames[0].attrs["n_decided"]) == (2, 10)
    assert [rows[s]["gap_share"] for s in ("generation_gap", "retrieval_gap", "document_gap")] == pytest.approx(
        [6 / 13, 5 / 26, 9 / 26])
