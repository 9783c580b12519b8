"""The report's Q-CARE and element tables from hand-made diagnostics (values checked cell by cell)."""

from __future__ import annotations

from ragcourt.analysis.qcare_tables import (
    NO_ANSWER_VERDICT,
    NO_LOOSE_VERDICT,
    RETRIEVAL_UNKNOWN,
    element_diagnosis_lines,
    element_status_frame,
    gap_share_frame,
    qcare_sample_frame,
    uncovered_subquery_frame,
    undecided_frame,
    unsupported_claim_frame,
)
from ragcourt.schema import ElementOutcome, ElementStatus, MetricValue, SampleDiagnostics, SampleStatus

S = ElementStatus


def outcome(eid: str, ctx, loose, ans, status: ElementStatus) -> ElementOutcome:
    return ElementOutcome(element_id=eid, text=f"text {eid}", in_context=ctx, in_loose_context=loose, in_answer=ans,
                          status=status)


D1 = SampleDiagnostics(
    run_id="r", sample_id="s1", question="q1?",
    metrics=(MetricValue(name="c_prec@3", value=1 / 3, n=3), MetricValue(name="c_ndcg@3", value=0.5, n=3),
             MetricValue(name="completeness", value=1.0, n=2), MetricValue(name="conciseness", value=None,
                                                                         na_reason="the answer has no claims"),
             MetricValue(name="verifiableness", value=None, na_reason="the answer has no claims"),
             MetricValue(name="element_coverage", value=0.25, n=4)),
    elements=(outcome("e1", True, None, True, S.ANSWERED), outcome("e2", True, None, False, S.GENERATION_GAP),
              outcome("e3", False, True, False, S.RETRIEVAL_GAP), outcome("e4", False, False, False, S.DOCUMENT_GAP),
              outcome("e5", False, None, False, S.UNDECIDED), outcome("e6", True, None, None, S.UNDECIDED)),
    unsupported_claims=("Acme sells rockets.",), uncovered_subqueries=("When?",),
)
D2 = SampleDiagnostics(
    run_id="r", sample_id="s2", question="q2?",
    metrics=(MetricValue(name="element_coverage", value=None,
                         na_reason="the retrieved chunks are unknown: sample s2 has no precomputed contexts"),),
    elements=(outcome("f1", None, None, False, S.UNDECIDED), outcome("f2", None, None, True, S.ANSWERED)),
)
FAILED = SampleDiagnostics(run_id="r", sample_id="s3", question="q3?", status=SampleStatus.FAILED, error="boom")


def test_qcare_sample_frame_keeps_na_with_reasons():
    frame = qcare_sample_frame([D1, FAILED])
    one, failed = frame.to_dict("records")
    assert (one["k"], one["c_prec"], one["c_ndcg"], one["completeness"]) == (3, 1 / 3, 0.5, 1.0)
    assert one["conciseness"] is None and one["conciseness_na_reason"] == "the answer has no claims"
    assert one["c_prec_na_reason"] is None
    assert (one["n_unsupported_claims"], one["n_uncovered_subqueries"]) == (1, 1)
    assert failed["c_prec"] is None and failed["c_prec_na_reason"] == "sample failed: boom"


def test_element_status_frame_and_undecided_reasons():
    frame = element_status_frame([D1, D2])
    assert list(frame["status"]) == ["answered", "generation_gap", "retrieval_gap", "document_gap", "undecided",
                                     "undecided", "undecided", "answered"]
    assert list(frame["undecided_reason"]) == [None, None, None, None, NO_LOOSE_VERDICT, NO_ANSWER_VERDICT,
                                               RETRIEVAL_UNKNOWN, None]
    assert frame.loc[2, "in_loose_context"] is True and frame.loc[0, "in_loose_context"] is None
    assert undecided_frame([D1, D2]).to_dict("records") == [
        {"reason": reason, "count": 1, "samples": 1}
        for reason in sorted((NO_LOOSE_VERDICT, NO_ANSWER_VERDICT, RETRIEVAL_UNKNOWN))
    ]


def test_undecided_reasons_come_most_frequent_first_and_ties_by_reason_whatever_the_question_order():
    twice = D2.model_copy(update={"sample_id": "s4"})
    no_loose = D1.model_copy(update={"sample_id": "s5", "elements": D1.elements[4:5]})
    no_answer = D1.model_copy(update={"sample_id": "s6", "elements": D1.elements[5:6]})
    for order in ([no_loose, no_answer, D2, twice], [twice, no_answer, D2, no_loose]):
        rows = undecided_frame(order).to_dict("records")
        assert rows[0] == {"reason": RETRIEVAL_UNKNOWN, "count": 2, "samples": 2}
        assert [r["reason"] for r in rows[1:]] == sorted((NO_LOOSE_VERDICT, NO_ANSWER_VERDICT))


def test_gap_share_frame():
    # decided: answered 2, generation 1, retrieval 1, document 1 -> 5; gaps 3; undecided 3
    rows = {row["status"]: row for row in gap_share_frame([D1, D2]).to_dict("records")}
    assert rows["answered"]["count"] == 2 and rows["answered"]["share"] == 2 / 5
    assert rows["answered"]["gap_share"] is None
    assert rows["generation_gap"]["share"] == 1 / 5 and rows["generation_gap"]["gap_share"] == 1 / 3
    assert rows["document_gap"]["gap_share"] == 1 / 3
    assert rows["undecided"]["count"] == 3 and rows["undecided"]["share"] is None
    empty = {row["status"]: row for row in gap_share_frame([D2]).to_dict("records")}
    assert empty["generation_gap"]["gap_share"] is None
    assert empty["generation_gap"]["na_reason"] == "no decided element is missing from the answer"


def test_claim_and_subquery_frames_and_terminal_lines():
    assert unsupported_claim_frame([D1, D2]).to_dict("records") == [
        {"sample_id": "s1", "question": "q1?", "claim": "Acme sells rockets."}]
    assert uncovered_subquery_frame([D1]).to_dict("records") == [
        {"sample_id": "s1", "question": "q1?", "subquery": "When?"}]
    assert list(unsupported_claim_frame([D2]).columns) == ["sample_id", "question", "claim"]
    lines = element_diagnosis_lines([D1, D2])
    assert lines[0] == ("elements: 8 in 2 samples: answered 2, generation_gap 1, retrieval_gap 1, "
                        "document_gap 1, undecided 3")
    assert lines[1].startswith("gap shares (of decided elements missing from the answer): generation_gap 33%, "
                               "retrieval_gap 33%, document_gap 33%")
    assert len(lines) == 5 and element_diagnosis_lines([FAILED]) == []
    # every element answered: the shares are n/a, and nothing is promised "below"
    answered = D1.model_copy(update={"elements": (outcome("e1", True, None, True, S.ANSWERED),)})
    (_, shares) = element_diagnosis_lines([answered])
    assert shares.startswith("gap shares: n/a: ") and shares.endswith("(no element undecided)")
