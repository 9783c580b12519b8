"""CUE-R metrics (seed 004) against the official SQuAD / HotpotQA behaviour and hand-computed values."""

import pytest

from ragcourt.metrics.cuer import (
    Outcome,
    confidence_error,
    exact_match,
    grounding_score,
    judged_trace,
    normalize_answer,
    score_answer,
    soft_correct,
    soft_tokens,
    token_f1,
    trace_divergence,
    utility_table,
)
from ragcourt.schema import CLOSED_BOOK, NORMAL, Condition, ConditionKind, ConfidenceSource, TraceSource

# --------------------------------------------------------------------------- official normalization


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The Eiffel Tower!", "eiffel tower"),
        ("  an   apple, a pear  ", "apple pear"),
        ("Theatre of the Absurd", "theatre of absurd"),  # "the" inside a word stays
        ("U.S.A.", "usa"),
        ("Café", "café"),  # accents stay in the official function
        ("北京。", "北京。"),  # only ASCII punctuation is removed
        ("", ""),
    ],
)
def test_normalize_answer_is_official(text, expected):
    assert normalize_answer(text) == expected


def test_exact_match_over_several_golds():
    assert exact_match("the Beatles.", ["Rolling Stones", "Beatles"]) == 1.0
    assert exact_match("Beatles band", ["Beatles"]) == 0.0
    assert exact_match("", ["Beatles"]) == 0.0


def test_token_f1_hand_computed():
    # "cat sat" vs "cat sat on mat": precision 1, recall 1/2 -> F1 2/3
    assert token_f1("The cat sat", ["a cat sat on the mat"]) == pytest.approx(2 / 3)
    # best over golds
    assert token_f1("cat sat", ["dog", "cat sat on mat", "cat sat"]) == 1.0


def test_token_f1_hotpot_special_cases():
    assert token_f1("yes", ["no"]) == 0.0
    assert token_f1("Yes.", ["yes"]) == 1.0
    assert token_f1("yes it is", ["yes"]) == 0.0  # special case: gold yes needs exact equality
    assert token_f1("noanswer", ["no answer"]) == 0.0
    assert token_f1("", ["cat"]) == 0.0
    assert token_f1("", [""]) == 0.0  # official code: no common token -> 0


def test_golds_are_required():
    with pytest.raises(ValueError):
        token_f1("x", [])
    with pytest.raises(TypeError):
        soft_correct("x", "x")


# --------------------------------------------------------------------------- soft correctness


@pytest.mark.parametrize("prediction", ["Yes.", "yes", "YES", "yes, it is", "Yes - both are American."])
def test_yes_canonicalization(prediction):
    assert soft_correct(prediction, ["yes"])
    assert not soft_correct(prediction, ["no"])


def test_no_idea_is_not_no():
    assert soft_correct("No, they are not.", ["no"])
    assert not soft_correct("No idea", ["no"])


def test_yes_no_canonicalization_only_against_yes_no_golds():
    assert not soft_correct("No. 5 Squadron", ["No. 7 Squadron"])


@pytest.mark.parametrize(
    ("prediction", "gold"),
    [
        ("1,000", "1000"),
        ("one thousand", "1,000"),
        ("Twenty-one", "21"),
        ("one hundred and five", "105"),
        ("two thousand three hundred", "2300"),
        ("3 million people", "three million people"),
        ("seven", "7"),
    ],
)
def test_number_normalization(prediction, gold):
    assert soft_correct(prediction, [gold])


def test_numbers_that_differ_stay_different():
    assert not soft_correct("twenty two", ["21"])
    assert soft_tokens("one two") == ["1", "2"]


@pytest.mark.parametrize(
    ("prediction", "gold", "expected"),
    [
        # issue 35 item 1, verbatim: the decimal point used to be deleted, so "35" matched "3.5"
        ("35", "3.5", False),
        ("1.5 million", "15 million", False),
        ("3.50", "3.5", True),
        # numbers as numbers: thousands separators, leading zeros, a bare leading decimal point
        ("1,000", "1000", True),
        ("0.5", ".5", True),
        (".5", "0.50", True),
        ("05", "5", True),
        ("1.5 million", "1,500,000", True),
        ("3.5 percent.", "3.5 percent", True),
        ("3.05", "3.5", False),
        ("version 2.1", "version 21", False),
    ],
)
def test_decimals_compare_as_numbers(prediction, gold, expected):
    assert soft_correct(prediction, [gold]) is expected


def test_decimal_tokens():
    assert soft_tokens("3.50 and .5 at 1,000.25") == ["3.5", "and", "0.5", "at", "1000.25"]
    # a full stop after a number is punctuation, not a decimal point
    assert soft_tokens("It was 3. Then 4.") == ["it", "was", "3", "then", "4"]


def test_fuzzy_match_threshold():
    # 4 of 5 tokens shared: precision 4/5, recall 4/4 -> F1 8/9 = 0.889 >= 0.8
    assert soft_correct("the university of new york city", ["University of New York"])
    # "cat sat" vs "cat sat on mat": F1 2/3 < 0.8
    assert not soft_correct("cat sat", ["cat sat on mat"])


def test_containment_is_not_correctness():
    assert not soft_correct("It is not Paris but London, capital of England", ["Paris"])


def test_unicode():
    assert soft_correct("José Martí", ["Jose Marti"])
    assert soft_correct("北京。", ["北京"])
    assert soft_tokens("北京大学") == ["北", "京", "大", "学"]
    # two of four characters: F1 2/3 < 0.8
    assert not soft_correct("北京", ["北京大学"])
    assert soft_correct("１０００", ["1000"])  # full-width digits


def test_empty_strings():
    assert not soft_correct("", ["Paris"])
    assert not soft_correct("...", ["Paris"])
    assert not soft_correct("Paris", ["the"])  # a gold that normalizes to nothing matches nothing


def test_several_gold_spans():
    assert soft_correct("NYC", ["New York City", "NYC"])
    assert not soft_correct("Boston", ["New York City", "NYC"])


# --------------------------------------------------------------------------- grounding, confidence, trace


def test_grounding_score():
    assert grounding_score(["A", "B", None], {"A", "C"}) == pytest.approx(1 / 3)
    assert grounding_score(["A", "C"], {"A", "C"}) == 1.0
    assert grounding_score([], {"A"}) == 0.0  # seed: 0 when nothing was used


def test_confidence_error():
    assert confidence_error(0.8, True) == pytest.approx(0.2)
    assert confidence_error(0.8, False) == pytest.approx(0.8)
    assert confidence_error(None, True) is None
    with pytest.raises(ValueError):
        confidence_error(1.5, True)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ({"c0", "c1"}, {"c0", "c1"}, 0.0),
        ({"c0", "c1"}, {"c1", "c2"}, 2 / 3),  # |∩| = 1, |∪| = 3
        ({"c0"}, {"c1"}, 1.0),
        (set(), set(), 0.0),
        ({"c0"}, set(), 1.0),
        (["c0", "c0"], ["c0"], 0.0),  # sets: repeats do not count
    ],
)
def test_trace_divergence(a, b, expected):
    assert trace_divergence(a, b) == pytest.approx(expected)


def test_score_answer():
    soft, f1, em, ce = score_answer("Paris, France", ["Paris"], confidence=0.9)
    assert soft.value == 0.0  # F1 2/3 < 0.8
    assert f1.value == pytest.approx(2 / 3)
    assert em.value == 0.0
    assert ce.value == pytest.approx(0.9)
    assert all(
        v.value is None and v.na_reason == "the sample has no gold answer" for v in score_answer("x", [])
    )
    assert score_answer(None, ["x"])[0].na_reason == "the answer is unscored"
    assert score_answer("x", ["x"])[3].na_reason == "the model reported no confidence"


# --------------------------------------------------------------------------- utility table


def test_utility_table_deltas_and_aggregation():
    golds = ["Paris"]
    original = Outcome.score(NORMAL, "Paris", golds, 0.9, ["c0", "c1"])
    remove_gold = Outcome.score(
        Condition(kind=ConditionKind.REMOVE, chunk_id="c0"), "Lyon", golds, 0.4, ["c1"]
    )
    remove_other = Outcome.score(
        Condition(kind=ConditionKind.REMOVE, chunk_id="c1"), "Paris", golds, 0.8, ["c0"]
    )
    duplicate = Outcome.score(
        Condition(kind=ConditionKind.DUPLICATE, chunk_id="c0"), "Paris", golds, None, ["c0", "c1"]
    )
    closed = Outcome.score(CLOSED_BOOK, None, golds, None, None)
    table = utility_table(
        original,
        [remove_gold, remove_other, duplicate, closed],
        chunk_titles={"c0": "Paris", "c1": "Lyon"},
        gold_titles={"Paris"},
    )
    gold_row, other_row, dup_row, closed_row = table.rows
    assert gold_row.chunk_is_gold is True and gold_row.chunk_title == "Paris"
    assert gold_row.d_soft_correct == -1.0
    assert gold_row.d_f1 == -1.0
    assert gold_row.d_confidence == pytest.approx(-0.5)
    assert gold_row.trace_divergence == pytest.approx(0.5)
    assert other_row.chunk_is_gold is False and other_row.d_soft_correct == 0.0
    assert other_row.d_confidence == pytest.approx(-0.1)
    assert dup_row.d_confidence is None and dup_row.trace_divergence == 0.0
    assert (
        closed_row.chunk_is_gold is None and closed_row.d_f1 is None and closed_row.trace_divergence is None
    )

    by_key = {(a.kind, a.chunk_is_gold): a for a in table.aggregates}
    assert set(by_key) == {
        (ConditionKind.REMOVE, True),
        (ConditionKind.REMOVE, False),
        (ConditionKind.DUPLICATE, True),
        (ConditionKind.CLOSED_BOOK, None),
    }
    assert by_key[ConditionKind.REMOVE, True].d_soft_correct.value == -1.0
    assert by_key[ConditionKind.DUPLICATE, True].d_confidence.value is None
    assert by_key[ConditionKind.CLOSED_BOOK, None].d_f1.n_unscored == 1


def test_gold_status_unknown_without_gold_titles():
    original = Outcome.score(NORMAL, "a", ["a"], None, ["c0"])
    removed = Outcome.score(Condition(kind=ConditionKind.REMOVE, chunk_id="c0"), "a", ["a"], None, [])
    (row,) = utility_table(original, [removed], {"c0": "T"}, gold_titles=()).rows
    assert row.chunk_is_gold is None and row.trace_divergence == 1.0


# --------------------------------------------------------------------------- judged traces, per-condition figures


def test_judged_trace_is_the_chunks_supporting_some_claim_and_unknown_when_undecided():
    assert judged_trace({"c0": [True, None], "c1": [False, False]}) == {"c0"}  # a yes decides, undecided or not
    assert judged_trace({"c0": [True], "c1": [None, False]}) is None  # c1 could be used: U unknown, not guessed
    assert judged_trace({"c0": [], "c1": []}) == frozenset()  # an answer without claims uses nothing
    assert judged_trace({}) == frozenset()  # shown nothing


def test_grounding_and_confidence_error_are_per_condition():
    """Normal: U {c0 (gold), c1}, G 1/2, c 0.9 on a right answer, CE 0.1 (to 9 decimals). Remove c0: a wrong
    answer with U {c1}, G 0, c 0.6: CE 0.6. The perturbed chunk title map is the condition's own, so a distractor
    that replaced c1 (title "Rome") counts as non-gold."""
    titles, golds = {"c0": "Paris", "c1": "Lyon"}, ["Paris"]
    original = Outcome.score(NORMAL, "Paris", golds, 0.9, ["c0", "c1"], chunk_titles=titles, gold_titles={"Paris"},
                             trace_source=TraceSource.JUDGED, confidence_source=ConfidenceSource.PROBED)
    removed = Outcome.score(Condition(kind=ConditionKind.REMOVE, chunk_id="c0"), "Lyon", golds, 0.6, ["c1"],
                            chunk_titles={"c1": "Lyon"}, gold_titles={"Paris"}, trace_source=TraceSource.JUDGED,
                            confidence_source=ConfidenceSource.PROBED, trace_unscored=0, trace_escalated=2)
    replaced = Outcome.score(Condition(kind=ConditionKind.REPLACE, chunk_id="c1"), "Paris", golds, 0.9, ["c0", "z"],
                             chunk_titles={"c0": "Paris", "z": "Rome"}, gold_titles={"Paris"},
                             trace_source=TraceSource.JUDGED)
    assert (original.grounding, round(original.confidence_error, 9)) == (0.5, 0.1)
    row, other = utility_table(original, [removed, replaced], titles, {"Paris"}).rows
    assert (row.grounding, row.d_grounding, row.trace_divergence) == (0.0, -0.5, 0.5)
    assert (round(row.confidence_error, 9), round(row.d_confidence_error, 9)) == (0.6, 0.5)
    assert (row.trace_source, row.confidence_source, row.trace_escalated) == (
        TraceSource.JUDGED, ConfidenceSource.PROBED, 2)
    assert (other.grounding, other.d_grounding, other.trace_divergence) == (0.5, 0.0, pytest.approx(2 / 3))
    (aggregate,) = [a for a in utility_table(original, [removed], titles, {"Paris"}).aggregates]
    assert (aggregate.grounding.value, aggregate.d_grounding.value) == (0.0, -0.5)


def test_a_reported_trace_is_not_compared_with_a_judged_one():
    original = Outcome.score(NORMAL, "a", ["a"], None, ["c0"])
    judged = Outcome.score(Condition(kind=ConditionKind.REMOVE, chunk_id="c1"), "a", ["a"], None, ["c0"],
                           trace_source=TraceSource.JUDGED)
    (row,) = utility_table(original, [judged], {}, gold_titles=()).rows
    assert row.trace_divergence is None and row.trace_source is TraceSource.JUDGED
