"""The CUE-R trace of each answer: the system's report, else judged from the claim-chunk decisions.

Normal shows c1, c2; its claim x is supported by c1 (yes, escalated) and not by c2: U = {c1}. remove:c1 shows
c2 to a new claim y that no judge scored: U unknown, 1 unscored. remove:c2 shows c1 to the normal claim x,
decided under normal (a pair is judged once per sample): U = {c1}. The closed book shows nothing: U empty. A
reported answer keeps its own ids.
"""

from __future__ import annotations

from ragcourt.nodes.scorer import Trace, cuer_traces
from ragcourt.schema import (
    CLOSED_BOOK,
    NORMAL,
    Answer,
    Check,
    CheckKind,
    Chunk,
    Claim,
    Condition,
    ConditionKind,
    Label,
    Reconciled,
    ReconcileMethod,
    Retrieval,
    Sample,
    TraceSource,
)

C1, C2 = Chunk(id="c1", text="Paris is in France."), Chunk(id="c2", text="Lyon is a city.")
X, Y = Claim(id="x", text="Paris is in France.", index=0), Claim(id="y", text="Lyon is a city.", index=0)
REMOVE_C1, REMOVE_C2 = (Condition(kind=ConditionKind.REMOVE, chunk_id=c) for c in ("c1", "c2"))
DUPLICATE_C1 = Condition(kind=ConditionKind.DUPLICATE, chunk_id="c1")


def _supported(claim: Claim, chunk: Chunk, condition: Condition) -> Check:
    return Check(kind=CheckKind.CLAIM_SUPPORTED, sample_id="s", condition=condition, subject_id=claim.id,
                 subject_text=claim.text, target_id=chunk.id, target_text=chunk.text)


def _decided(check: Check, label: Label, escalated: bool = False) -> Reconciled:
    return Reconciled(run_id="r", check_id=check.id, kind=check.kind, sample_id="s", label=label,
                      method=ReconcileMethod.MAJORITY, n_scored=1, n_unscored=0, escalated=escalated)


def test_each_condition_gets_its_own_trace() -> None:
    shown = {NORMAL: (C1, C2), REMOVE_C1: (C2,), REMOVE_C2: (C1,), CLOSED_BOOK: (), DUPLICATE_C1: (C1, C1, C2)}
    xc1, xc2, yc2 = _supported(X, C1, NORMAL), _supported(X, C2, NORMAL), _supported(Y, C2, REMOVE_C1)
    answers = {c.key: Answer(run_id="r", sample_id="s", condition=c, text="t", trace_source=TraceSource.NONE)
               for c in shown}
    answers[DUPLICATE_C1.key] = Answer(run_id="r", sample_id="s", condition=DUPLICATE_C1, text="t",
                                       used_chunk_ids=("c2",))  # this system reports its trace
    state = {
        "sample": Sample(id="s", question="q"),
        "retrievals": {c.key: Retrieval(run_id="r", sample_id="s", condition=c, chunks=chunks, made_by="test")
                       for c, chunks in shown.items()},
        "answers": answers,
        "claims": {NORMAL.key: (X,), REMOVE_C1.key: (Y,), REMOVE_C2.key: (X,)},
        "checks": {c.id: c for c in (xc1, xc2, yc2)},
        "reconciled": {xc1.id: _decided(xc1, Label.YES, escalated=True), xc2.id: _decided(xc2, Label.NO)},
    }
    assert cuer_traces(state) == {
        NORMAL.key: Trace(frozenset({"c1"}), TraceSource.JUDGED, unscored=0, escalated=1),
        REMOVE_C1.key: Trace(None, TraceSource.JUDGED, unscored=1, escalated=0),
        REMOVE_C2.key: Trace(frozenset({"c1"}), TraceSource.JUDGED, unscored=0, escalated=1),
        CLOSED_BOOK.key: Trace(frozenset(), TraceSource.JUDGED),
        DUPLICATE_C1.key: Trace(frozenset({"c2"}), TraceSource.REPORTED),
    }


def test_without_claims_a_black_box_answer_has_no_trace() -> None:
    """Neither cuer nor qcare ran: nothing was split or judged, so U is unknown (never every shown chunk)."""
    state = {
        "sample": Sample(id="s", question="q"),
        "retrievals": {NORMAL.key: Retrieval(run_id="r", sample_id="s", condition=NORMAL, chunks=(C1,),
                                             made_by="test")},
        "answers": {NORMAL.key: Answer(run_id="r", sample_id="s", condition=NORMAL, text="t",
                                       trace_source=TraceSource.NONE)},
    }
    assert cuer_traces(state) == {NORMAL.key: Trace(None, TraceSource.NONE)}
