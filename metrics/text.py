"""Small text utilities shared by the no-LLM baselines: tokens, sentences, overlap."""

from __future__ import annotations

import re
import unicodedata

_TOKEN = re.compile(r"\w+", re.UNICODE)
# Chinese and Japanese write words without spaces, so each ideograph or kana is a token of its own;
# runs of other word characters (latin words, numbers such as the 2024 in 2024年) stay whole.
_CJK_CHAR = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK_OR_RUN = re.compile(f"[{_CJK_CHAR}]|[^{_CJK_CHAR}]+")
_CJK_SEARCH = re.compile(f"[{_CJK_CHAR}]")
# A sentence ends at . ! ? or a CJK full stop followed by space or end; abbreviations like "U.S." are rare
# enough in the bundled data that a simple rule beats a dependency.
# The full-width semicolon separates clauses that each state a fact in Chinese reference answers (seed 003's
# "报销需提供发票原件；电子发票需打印"), so it ends an element too.
_SENTENCE_END = re.compile(r"(?<=[.!?。！？；])\s+|(?<=[。！？；])")
STOPWORDS = frozenset(
    ["a", "an", "the", "of", "in", "on", "at", "to", "for", "from", "by", "with", "and", "or", "but", "is", "are", "was", "were", "be", "been", "being", "this", "that", "these", "those", "it", "its", "as", "which", "who", "whom", "whose", "what", "when", "where", "why", "how", "do", "does", "did", "has", "have", "had", "not", "no", "yes", "than", "then", "so", "such", "can", "could", "would", "should", "will", "shall", "may", "might", "must", "into", "about", "over", "under", "after", "before", "between", "both", "also", "there", "their", "they", "them", "he", "she", "his", "her", "we", "you", "i"]
)


def tokens(text: str) -> list[str]:
    """Lower-cased NFKC word tokens; CJK ideographs and kana are split per character (no spaces in CJK)."""
    normalized = unicodedata.normalize("NFKC", text).lower()
    return [part for token in _TOKEN.findall(normalized) for part in _CJK_OR_RUN.findall(token)]


def has_cjk(text: str) -> bool:
    return _CJK_SEARCH.search(text) is not None


# Scripts an English-only encoder has (next to) no word pieces for: Greek, Cyrillic, Hebrew, Arabic, Devanagari,
# Bengali, Thai, Hangul, and CJK. A Latin-script language (German, Spanish) cannot be told from English this cheaply.
_NON_LATIN_SEARCH = re.compile(r"[\u0370-\u03ff\u0400-\u04ff\u0590-\u05ff\u0600-\u06ff\u0900-\u09ff\u0e00-\u0e7f"
                               r"\u1100-\u11ff\uac00-\ud7af\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]")


def has_non_latin_script(text: str) -> bool:
    return _NON_LATIN_SEARCH.search(text) is not None


def content_tokens(text: str) -> set[str]:
    return {token for token in tokens(text) if token not in STOPWORDS}


def sentences(text: str) -> list[str]:
    return [part.strip() for part in _SENTENCE_END.split(text) if part and part.strip()]


def overlap(subject: str, target: str) -> float:
    """Share of the subject's content tokens that appear in the target (0 when the subject has none)."""
    wanted = content_tokens(subject)
    if not wanted:
        return 0.0
    return len(wanted & content_tokens(target)) / len(wanted)


# --------------------------------------------------------------------------- numbers

_ZH_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_ZH_UNITS = {"十": 10, "百": 100, "千": 1000}
_ZH_BIG = {"万": 10_000, "亿": 100_000_000}
_ZH_NUMERAL = re.compile(f"[{''.join(_ZH_DIGITS)}{''.join(_ZH_UNITS)}{''.join(_ZH_BIG)}]+")
# One Chinese digit alone is a number only before a measure word ("三个工作日", "一次"): in 一般, 一些, 统一 it
# is part of a word. Runs with a unit (十五, 五百) or of several digits (一九九八) are numbers.
_MEASURE_WORDS = frozenset("个天日年月次元名位件条项周岁人家张份倍种季号")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_DIGITS_TIMES_BIG = re.compile(r"(\d+(?:\.\d+)?)\s*([万亿])")  # 50万 -> 500000


def _zh_value(numeral: str, next_char: str) -> int | None:
    """三 -> 3 (before a measure word), 十五 -> 15, 五百 -> 500, 两万三千 -> 23000, 一九九八 (digit by digit)
    -> 1998; None when the run is part of a word (一般, 万一) rather than a number."""
    if numeral[0] in _ZH_BIG or numeral[0] in "百千":
        return None
    if all(ch in _ZH_DIGITS for ch in numeral):
        if len(numeral) == 1 and next_char not in _MEASURE_WORDS:
            return None
        return int("".join(str(_ZH_DIGITS[ch]) for ch in numeral))
    total = section = digit = 0
    seen_digit = False
    for ch in numeral:
        if ch in _ZH_DIGITS:
            digit, seen_digit = _ZH_DIGITS[ch], True
        elif ch in _ZH_UNITS:
            section += (digit or 1) * _ZH_UNITS[ch]
            digit = 0
        else:
            total += (section + digit) * _ZH_BIG[ch]
            section = digit = 0
    return total + section + digit if seen_digit or numeral[0] == "十" else None


def numbers(text: str) -> set[str]:
    """The numbers a text states, canonical: digits after NFKC ("２０２４" -> "2024"), thousands separators
    dropped, trailing zeros of decimals dropped ("4.20" -> "4.2"), Chinese numerals converted ("三" -> "3",
    "五百元" -> "500"). Number words in English are not read."""
    normalized = _THOUSANDS.sub("", unicodedata.normalize("NFKC", text))
    normalized = _DIGITS_TIMES_BIG.sub(
        lambda m: _canonical(str(float(m.group(1)) * _ZH_BIG[m.group(2)])), normalized)
    found = set()
    for match in _ZH_NUMERAL.finditer(normalized):
        value = _zh_value(match.group(), normalized[match.end():match.end() + 1])
        if value is not None:
            found.add(str(value))
    found.update(_canonical(match.group()) for match in _NUMBER.finditer(normalized))
    return found


def _canonical(number: str) -> str:
    return number.rstrip("0").rstrip(".") if "." in number else str(int(number))
