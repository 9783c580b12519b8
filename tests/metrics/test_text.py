"""Tokens, sentences and overlap used by the no-LLM baselines."""

from __future__ import annotations

import pytest

from ragcourt.metrics.text import content_tokens, numbers, overlap, sentences, tokens


def test_tokens_are_lower_cased_words() -> None:
    assert tokens("The Eiffel Tower, built in 1889!") == ["the", "eiffel", "tower", "built", "in", "1889"]


def test_tokens_normalise_with_nfkc() -> None:
    # full-width letters and digits, the 'fi' ligature, a superscript two
    assert tokens("Ｐａｒｉｓ ２０２４ ﬁne x²") == ["paris", "2024", "fine", "x2"]
    # a decomposed e + combining acute accent is composed to the same token as 'café'
    assert tokens("cafe\u0301") == tokens("café") == ["café"]


def test_cjk_is_split_per_character() -> None:
    assert tokens("北京是中国的首都") == ["北", "京", "是", "中", "国", "的", "首", "都"]
    assert tokens("東京タワー") == ["東", "京", "タ", "ワ", "ー"]


def test_numbers_and_latin_words_next_to_cjk_stay_whole() -> None:
    assert tokens("2024年") == ["2024", "年"]
    assert tokens("iPhone手机") == ["iphone", "手", "机"]


def test_content_tokens_drop_stopwords() -> None:
    assert content_tokens("What is the capital of France?") == {"capital", "france"}
    assert content_tokens("the of and") == set()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Paris is big. Is it? Yes! It is.", ["Paris is big.", "Is it?", "Yes!", "It is."]),
        ("It costs 3.5 million. Cheap", ["It costs 3.5 million.", "Cheap"]),  # no split inside a number
        ("Barack Obama", ["Barack Obama"]),
        ("  spaced out.   again.  ", ["spaced out.", "again."]),
        ("东京很大。大阪也很大。", ["东京很大。", "大阪也很大。"]),  # CJK full stop needs no space
        # seed 003: clauses after a full-width semicolon are facts of their own
        ("报销需提供发票原件；电子发票需打印；抬头须为公司全称。", ["报销需提供发票原件；", "电子发票需打印；", "抬头须为公司全称。"]),
        ("Bring the receipt; keep a copy.", ["Bring the receipt; keep a copy."]),  # an ASCII one does not split
        ("", []),
        ("   ", []),
    ],
)
def test_sentences(text: str, expected: list[str]) -> None:
    assert sentences(text) == expected


def test_overlap_is_the_share_of_subject_content_words_in_the_target() -> None:
    # subject {capital, france, paris}; target {paris, capital, city}: 2 of 3
    assert overlap("The capital of France is Paris", "Paris is the capital city") == pytest.approx(2 / 3)
    # the measure is directional: it asks how much of the subject the target covers
    assert overlap("Paris", "Paris is the capital of France") == 1.0
    assert overlap("Paris is the capital of France", "Paris") == pytest.approx(1 / 3)


def test_overlap_counts_distinct_words_and_ignores_case() -> None:
    # subject {paris} once, although repeated
    assert overlap("Paris PARIS paris", "paris") == 1.0


def test_overlap_of_cjk_text() -> None:
    # subject 北,京,首,都 (4 distinct); target has 北,京 -> 2 of 4
    assert overlap("北京首都", "北京大学") == 0.5


def test_overlap_without_subject_content_words_is_zero() -> None:
    assert overlap("the of and", "anything at all") == 0.0
    assert overlap("", "Paris") == 0.0
    assert overlap("Paris", "") == 0.0


@pytest.mark.parametrize(("text", "expected"), [
    ("普通员工每月通讯补贴为500元。", {"500"}),
    ("补贴为五百元", {"500"}),  # Chinese numerals read as numbers
    ("3个工作日", {"3"}), ("三个工作日", {"3"}),  # one Chinese digit before a measure word
    ("单次采购金额超过50万元", {"500000"}), ("500000元", {"500000"}), ("5万元", {"50000"}),
    ("两万三千", {"23000"}), ("一百零五", {"105"}), ("十五天", {"15"}), ("一九九八年", {"1998"}),
    ("第4.20条", {"4.2"}), ("1,000 dollars", {"1000"}), ("２０２４年", {"2024"}),  # full-width digits: NFKC
    ("一般情况下", set()), ("统一标准", set()), ("万一出错", set()),  # numerals inside words
    ("ten days", set()),  # English number words are not read
])
def test_numbers_are_read_canonically(text: str, expected: set[str]) -> None:
    assert numbers(text) == expected
