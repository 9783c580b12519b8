"""Element-level attribution, pointer filter and measurement noise (seed 003)."""

import math

import pytest

from ragcourt.metrics.elements import (
    ANSWER_SIDE,
    CONTEXT_SIDE,
    SPLIT,
    RetrievalResult,
    element_attribution,
    element_coverage,
    element_outcome,
    element_status,
    is_noise,
    is_pointer_element,
    needs_loose,
    noise_band,
    run_to_run_noise,
    sample_elements,
    split_attribution,
    status_shares,
    verdict_value,
)
from ragcourt.schema import Element, ElementStatus, ElementVerdict

T, F, U = True, False, None
S = ElementStatus


@pytest.mark.parametrize(
    ("in_context", "in_loose", "in_answer", "status"),
    [
        (T, U, T, S.ANSWERED),
        (F, F, T, S.ANSWERED),  # answered wins over any context verdict
        (U, U, T, S.ANSWERED),
        (T, U, F, S.GENERATION_GAP),
        (T, F, F, S.GENERATION_GAP),  # normal context wins over the loose verdict
        (F, T, F, S.RETRIEVAL_GAP),
        (F, F, F, S.DOCUMENT_GAP),
        (F, U, F, S.UNDECIDED),  # loose run did not happen
        (U, T, F, S.UNDECIDED),  # normal-context verdict unscored
        (T, T, U, S.UNDECIDED),  # answer verdict unscored
        (U, U, U, S.UNDECIDED),
    ],
)
def test_element_status_precedence(in_context, in_loose, in_answer, status):
    assert element_status(in_context, in_loose, in_answer) is status


def _outcomes():
    verdicts = [
        ("在明细表中确认识别编号和消息内容", T, U, T),
        ("大多数情况下不需要营业网点处理", F, F, F),
        ("approval needs two signatures", F, T, F),
        ("limit is 5 million", T, U, F),
        ("unscored one", U, U, U),
    ]
    return [
        element_outcome(Element(id=f"e{i}", text=text, index=i), c, lo, a)
        for i, (text, c, lo, a) in enumerate(verdicts)
    ]


def test_sample_fields_as_in_the_seed():
    summary = sample_elements(_outcomes())
    assert summary.covered_elements == ("在明细表中确认识别编号和消息内容", "limit is 5 million")
    assert summary.newly_covered_in_loose == ("approval needs two signatures",)
    assert summary.uncovered_in_loose == ("大多数情况下不需要营业网点处理",)
    assert summary.answered == ("在明细表中确认识别编号和消息内容",)
    assert summary.coverage.value == pytest.approx(0.5)  # 2 of 4 decided
    assert summary.coverage.n == 4 and summary.coverage.n_unscored == 1


def test_the_seeds_result_label_of_a_question():
    """Seed 003, step 3: an element in neither retrieval makes the question "documents doubtful" (its example:
    one element covered, one uncovered in the loose run); the loose run finding one is a retrieval gap."""
    outcomes = _outcomes()
    assert sample_elements(outcomes).result_label(len(outcomes)) is RetrievalResult.DOCUMENTS_DOUBTFUL
    element = Element(id="e", text="x", index=0)
    found_loose = [element_outcome(element, F, T, F)]
    assert sample_elements(found_loose).result_label(1) is RetrievalResult.RETRIEVAL_GAP
    assert sample_elements([element_outcome(element, T, U, F)]).result_label(1) is RetrievalResult.RETRIEVED
    no_loose_run = [element_outcome(element, T, U, T), element_outcome(Element(id="f", text="y", index=1), F, U, F)]
    assert sample_elements(no_loose_run).result_label(2) is RetrievalResult.UNDECIDED


def test_coverage_edge_cases():
    assert element_coverage([]).na_reason == "the sample has no elements"
    only_unscored = [element_outcome(Element(id="e", text="x", index=0), U, U, U)]
    assert element_coverage(only_unscored).value is None


def test_the_two_coverages_hand_computed():
    """3 elements, all 3 in the retrieved context, 2 stated by the answer: context side 3/3 = 1.0, answer side
    2/3 = 0.667; each under its own name."""
    outcomes = [element_outcome(Element(id=f"e{i}", text=f"fact {i}", index=i), T, U, a)
                for i, a in enumerate((T, T, F))]
    context, answer = element_coverage(outcomes), element_coverage(outcomes, ANSWER_SIDE)
    assert (context.name, context.value, context.n) == ("element_coverage", 1.0, 3)
    assert (answer.name, answer.value, answer.n) == ("element_answer_coverage", pytest.approx(2 / 3), 3)
    assert element_coverage(outcomes, CONTEXT_SIDE) == context
    summary = sample_elements(outcomes)
    assert (summary.coverage, summary.answer_coverage) == (context, answer)


def test_the_answer_side_counts_a_split_as_half_and_leaves_unscored_verdicts_out():
    """in the answer: yes, judges split, no, unscored -> (1 + 0.5 + 0) / 3 decided = 0.5, one unscored."""
    outcomes = [element_outcome(Element(id=f"e{i}", text=f"fact {i}", index=i), T, U, a)
                for i, a in enumerate((1.0, SPLIT, 0.0, None))]
    answer = element_coverage(outcomes, ANSWER_SIDE)
    assert (answer.value, answer.n, answer.n_unscored) == (0.5, 3, 1)
    unscored = [element_outcome(Element(id="e", text="x", index=0), T, U, U)]
    assert element_coverage(unscored, ANSWER_SIDE).na_reason == "every answer check is unscored"
    assert element_coverage(unscored).value == 1.0  # the context side is decided
    assert element_coverage([], ANSWER_SIDE).na_reason == "the sample has no elements"


@pytest.mark.parametrize(
    ("coverage", "expected"),
    [(0.5, True), (0.59, True), (0.6, False), (0.75, False), (None, False), (0.0, True)],
)
def test_needs_loose_strictly_under_threshold(coverage, expected):
    assert needs_loose(coverage) is expected


def test_needs_loose_custom_threshold():
    assert needs_loose(0.7, threshold=0.8)


def test_run_level_shares():
    statuses = (
        [S.ANSWERED] * 4
        + [S.GENERATION_GAP] * 3
        + [S.RETRIEVAL_GAP]
        + [S.DOCUMENT_GAP] * 2
        + [S.UNDECIDED] * 2
    )
    result = status_shares(statuses)
    assert result.n_decided == 10 and result.n_undecided == 2
    assert result.counts[S.GENERATION_GAP] == 3 and result.counts[S.UNDECIDED] == 2
    assert result.shares[S.ANSWERED].value == pytest.approx(0.4)
    assert result.shares[S.DOCUMENT_GAP].value == pytest.approx(0.2)
    assert result.shares[S.ANSWERED].n == 10 and result.shares[S.ANSWERED].n_unscored == 2
    assert S.UNDECIDED not in result.shares
    assert result.gap_shares[S.GENERATION_GAP].value == pytest.approx(0.5)  # 3 of 6 gaps
    assert result.gap_shares[S.RETRIEVAL_GAP].value == pytest.approx(1 / 6)
    assert result.gap_shares[S.DOCUMENT_GAP].value == pytest.approx(1 / 3)


def test_run_level_shares_without_decided_or_gaps():
    nothing = status_shares([S.UNDECIDED])
    assert nothing.shares[S.ANSWERED].value is None and nothing.n_undecided == 1
    all_answered = status_shares([S.ANSWERED, S.ANSWERED])
    assert all_answered.shares[S.ANSWERED].value == 1.0
    assert all_answered.gap_shares[S.DOCUMENT_GAP].value is None


# --------------------------------------------------------------------------- judges split (seed 003: averaged)

H = SPLIT  # the two judges split 1-1: their average, 0.5


@pytest.mark.parametrize(
    ("in_context", "in_loose", "in_answer", "attribution"),
    [
        # split on "in the answer", unanimous "in context": half answered, half generation gap
        (T, U, H, {S.ANSWERED: 0.5, S.GENERATION_GAP: 0.5}),
        # unanimous miss in the answer, split on the context, unanimous loose yes: half generation, half retrieval
        (H, T, F, {S.GENERATION_GAP: 0.5, S.RETRIEVAL_GAP: 0.5}),
        # split on both contexts: (1-0)*0.5 generation; 0.5*0.5 retrieval; 0.5*0.5 document
        (H, H, F, {S.GENERATION_GAP: 0.5, S.RETRIEVAL_GAP: 0.25, S.DOCUMENT_GAP: 0.25}),
        # split everywhere: a = 0.5; 0.5*0.5 generation; 0.5*0.5*0.5 retrieval and document
        (H, H, H, {S.ANSWERED: 0.5, S.GENERATION_GAP: 0.25, S.RETRIEVAL_GAP: 0.125, S.DOCUMENT_GAP: 0.125}),
        (F, F, H, {S.ANSWERED: 0.5, S.DOCUMENT_GAP: 0.5}),
        # a split that no rule reaches changes nothing: the answer states it unanimously
        (H, H, T, {S.ANSWERED: 1.0}),
        (T, H, F, {S.GENERATION_GAP: 1.0}),  # found in the normal context: the loose split is not needed
        # a missing verdict where mass is left to place: the whole element is undecided
        (U, U, H, None),
        (H, U, F, None),  # half not in the normal context and no loose run
        (F, U, H, None),
    ],
)
def test_a_split_verdict_shares_the_element_out_as_the_judges_average(in_context, in_loose, in_answer,
                                                                      attribution):
    assert element_attribution(in_context, in_loose, in_answer) == attribution
    found = element_status(in_context, in_loose, in_answer)
    if attribution is None:
        assert found is S.UNDECIDED
    elif len(attribution) == 1:
        assert found is next(iter(attribution))
    else:
        assert found is S.JUDGES_SPLIT
        assert sum(attribution.values()) == 1.0


def test_the_outcome_marks_split_verdicts_and_keeps_the_attribution_of_a_split_element():
    element = Element(id="e1", text="limit is 5 million", index=0)
    outcome = element_outcome(element, T, U, H)
    assert (outcome.in_context, outcome.in_loose_context, outcome.in_answer) == (True, None, None)
    assert (outcome.status, outcome.split) == (S.JUDGES_SPLIT, (ElementVerdict.IN_ANSWER,))
    assert outcome.attribution == {S.ANSWERED: 0.5, S.GENERATION_GAP: 0.5}
    assert [verdict_value(outcome, v) for v in ElementVerdict] == [1.0, None, 0.5]
    answered = element_outcome(element, H, U, T)  # split on the context only: answered, attribution implied
    assert (answered.status, answered.split, answered.attribution) == (S.ANSWERED, (ElementVerdict.IN_CONTEXT,), {})
    with pytest.raises(ValueError, match="in_answer must be 0, 0.5, 1 or None"):
        element_outcome(element, T, U, 0.7)


def test_coverage_counts_a_split_as_half_and_the_seed_fields_list_it():
    elements = [Element(id=f"e{i}", text=f"fact {i}", index=i) for i in range(4)]
    outcomes = [element_outcome(elements[0], T, U, T), element_outcome(elements[1], H, U, F),
                element_outcome(elements[2], F, U, F), element_outcome(elements[3], U, U, F)]
    coverage = element_coverage(outcomes)  # (1 + 0.5 + 0) / 3 decided; e3 unscored
    assert (coverage.value, coverage.n, coverage.n_unscored) == (pytest.approx(0.5), 3, 1)
    summary = sample_elements(outcomes)
    assert summary.covered_elements == ("fact 0",)
    assert summary.judges_split == ("fact 1",)
    assert needs_loose(coverage.value)  # 0.5 < 0.6


def test_run_level_shares_add_the_split_elements_fractions():
    c = Element(id="c", text="c", index=0)
    outcomes = [
        element_outcome(c, T, U, T),  # answered
        element_outcome(c, T, U, F),  # generation gap
        element_outcome(c, F, F, F),  # document gap
        element_outcome(c, T, U, H),  # split: 0.5 answered, 0.5 generation
        element_outcome(c, H, T, F),  # split: 0.5 generation, 0.5 retrieval
        element_outcome(c, U, U, U),  # undecided
    ]
    split = split_attribution(outcomes)
    assert split == {S.ANSWERED: 0.5, S.GENERATION_GAP: 1.0, S.RETRIEVAL_GAP: 0.5}
    result = status_shares((o.status for o in outcomes), split)
    assert (result.n_decided, result.n_undecided, result.n_split) == (5, 1, 2)
    assert result.counts[S.JUDGES_SPLIT] == 2
    assert result.weights == {S.ANSWERED: 1.5, S.GENERATION_GAP: 2.0, S.RETRIEVAL_GAP: 0.5, S.DOCUMENT_GAP: 1.0}
    assert result.shares[S.ANSWERED].value == pytest.approx(1.5 / 5)
    assert S.JUDGES_SPLIT not in result.shares
    # gaps: 2.0 + 0.5 + 1.0 = 3.5 elements' worth, from 2 whole gaps and 2 split elements
    assert result.gap_shares[S.GENERATION_GAP].value == pytest.approx(2.0 / 3.5)
    assert result.gap_shares[S.RETRIEVAL_GAP].value == pytest.approx(0.5 / 3.5)
    assert result.gap_shares[S.DOCUMENT_GAP].value == pytest.approx(1.0 / 3.5)
    assert result.gap_shares[S.DOCUMENT_GAP].n == 4
    with pytest.raises(ValueError, match="need their attribution"):
        status_shares(o.status for o in outcomes)


# --------------------------------------------------------------------------- pointer elements


@pytest.mark.parametrize(
    "text",
    [
        "See section 3.2.",
        "see Section X",
        "Refer to chapter 3",
        "For details, see the Approval Rules > Authority > Branch limits.",
        "Please refer to Appendix B for more details.",
        "Details are in Chapter 4",
        "As specified in Article 12.",
        "详见第X节",
        "详见第三章",
        "详细内容请参见某某规则集 > 审批权限 > 某某",
        "具体见《费用报销管理办法》第五条的规定",
        "请参阅附件2。",
    ],
)
def test_pointer_elements(text):
    assert is_pointer_element(text)


@pytest.mark.parametrize(
    "text",
    [
        "The approval limit is 5 million; see section 3",
        "See section 3 for the approval limit of 5 million",
        "Click Settings > Approval > Limits",  # a UI path: the location is the answer
        "在明细表中确认识别编号和消息内容",
        "审批额度为500万元，详见第三节",
        "大多数情况下不需要营业网点处理",
        "See the manager",  # not a place in the documents
        "",
    ],
)
def test_not_pointer_elements(text):
    assert not is_pointer_element(text)


# Pure pointers a Chinese-speaking user found undetected, and their English analogues.
REPORTED_POINTERS = [
    "具体流程详见附件2。",
    "如需了解更多，请查阅《员工手册》第十条。",
    "相关规定详见《差旅管理办法》。",
    "可参考《报销指南》第3章。",
    "请查看附件1。",
    "以上内容详见《员工手册》第4.2条。",
    "具体以《员工手册》第4.2条为准。",
    "详见《员工手册》第4.2条；",  # a split element keeping its full-width semicolon
    "For details, refer to Appendix 2.",
    "Please consult section 4.",
    "As specified in Article 10.",
]


@pytest.mark.parametrize("text", REPORTED_POINTERS)
def test_reported_pure_pointers(text):
    assert is_pointer_element(text)


@pytest.mark.parametrize(
    "text",
    [
        "以《员工手册》第4.2条为准",
        "如需了解更多信息，请参阅附件2以了解详情。",
        "更多信息请参见《员工手册》中的相关规定。",
        "上述要求详见《差旅管理办法》第五条",
        "Refer to the Handbook, section 4.",  # every comma-separated part names a place
    ],
)
def test_more_pure_pointers(text):
    assert is_pointer_element(text)


@pytest.mark.parametrize(
    "text",
    [
        # a fact plus a pointer is not a pure pointer: the seed deletes elements that only locate
        "报销须在30天内提交，详见附件2。",
        "详见附件2：报销须在30天内提交。",
        "以上内容详见附件2，报销须在30天内提交。",
        "可参考附件2，每人每天补贴100元。",
        "具体以《员工手册》第4.2条为准，最高500元。",
        "详见附件2中30天内提交的规定。",  # a quantity inside the reference
        "As specified in Article 10, the limit is 5 million.",
        "For details, refer to Appendix 2: claims must be filed within 30 days.",
        "See Appendix 2. Claims must be filed within 30 days.",
        # a topic in the lead-in is kept (telling a topic from a fact needs the documents)
        "报销流程详见附件2。",
        "报销标准以《差旅管理办法》为准。",
        # "查看" of a UI path or of something that is not a document
        "请查看 设置 > 额度",
        "请查看审批状态。",
        "如需报销，请在30天内提交。",
        "Please consult your manager.",
    ],
)
def test_fact_with_pointer_or_non_document_is_not_a_pointer(text):
    assert not is_pointer_element(text)


# --------------------------------------------------------------------------- measurement noise


def test_noise_band_reproduces_seed_298_questions():
    band = noise_band(0.14, 298)
    assert band == pytest.approx(1.96 * 0.14 / math.sqrt(298))
    assert band == pytest.approx(0.015, abs=0.001)  # seed: about ±0.015


def test_noise_band_reproduces_seed_25_questions():
    band = noise_band(0.14, 25)
    assert band == pytest.approx(0.05488)
    assert band == pytest.approx(0.05, abs=0.005)  # seed: about ±0.05


def test_plain_standard_error_does_not_reproduce_seed():
    assert noise_band(0.14, 298, z=1.0) == pytest.approx(0.0081, abs=1e-4)  # about half the seed's 0.015


def test_noise_band_rejects_bad_input():
    with pytest.raises(ValueError):
        noise_band(0.14, 0)


def test_run_to_run_noise_hand_computed():
    run_a = {"q1": 0.5, "q2": 1.0, "q3": 0.0, "only_a": 1.0}
    run_b = {"q1": 0.7, "q2": 0.8, "q3": 0.3, "only_b": 0.0}
    noise = run_to_run_noise(run_a, run_b)
    # differences 0.2, -0.2, 0.3; mean 0.1; deviations 0.1, -0.3, 0.2; sum sq 0.14; var 0.07
    assert noise.n_questions == 3 and noise.n_unpaired == 2
    assert noise.mean_difference == pytest.approx(0.1)
    assert noise.per_question_sd == pytest.approx(math.sqrt(0.07))
    assert noise.band == pytest.approx(1.96 * math.sqrt(0.07) / math.sqrt(3))
    assert noise.na_reason is None


def test_run_to_run_noise_needs_two_shared_questions():
    noise = run_to_run_noise({"q1": 0.5}, {"q1": 0.7, "q2": 0.1})
    assert noise.per_question_sd is None and noise.band is None and noise.na_reason


def test_is_noise():
    band = noise_band(0.14, 25)
    assert is_noise(0.02, band)  # the seed's "+0.02 on an unchanged group" is noise
    assert is_noise(-0.05, band)
    assert not is_noise(0.13, band)  # the seed's +0.13 after removing pointer elements is not
    assert is_noise(band, band)  # inclusive
