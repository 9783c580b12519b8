"""CUE-R metrics (seed 004): answer correctness, grounding, confidence error and trace divergence.

`normalize_answer`, `exact_match` and `token_f1` are the official SQuAD / HotpotQA evaluation
functions, taken over several gold spans (best match). `soft_correct` is the seed's "normalized
match with yes/no canonicalization, number normalization, and high-overlap fuzzy matching
(F1 >= 0.8)". `judged_trace` reads the used-chunk set from the jury's claim-chunk decisions for a system
that reports no trace. `utility_table` turns the answers of the original and the perturbed conditions
into per-chunk deltas (correctness, confidence, grounding, confidence error, trace divergence) with
gold / non-gold aggregation.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

from ragcourt.metrics.values import Decision, MetricName, any_true, not_available
from ragcourt.schema import (
    Condition,
    ConditionKind,
    ConfidenceSource,
    MetricValue,
    PerturbationEffect,
    TraceSource,
)

SOFT_F1_THRESHOLD = 0.8

# --------------------------------------------------------------------------- official SQuAD / HotpotQA


def normalize_answer(text: str) -> str:
    """Lower case, remove ASCII punctuation, remove the articles a/an/the, collapse whitespace.

    Exactly the official SQuAD v1.1 / HotpotQA function: punctuation is `string.punctuation` (ASCII
    only, so "。" or "¿" stay), letters keep their accents, and CJK text stays one token per
    whitespace-separated run.
    """
    lowered = text.lower()
    no_punctuation = "".join(ch for ch in lowered if ch not in _ASCII_PUNCTUATION)
    no_articles = re.sub(r"\b(a|an|the)\b", " ", no_punctuation)
    return " ".join(no_articles.split())


_ASCII_PUNCTUATION = frozenset(string.punctuation)
_HOTPOT_SPECIAL = ("yes", "no", "noanswer")


def _require_golds(golds: Sequence[str]) -> None:
    if isinstance(golds, str):
        raise TypeError("golds must be a sequence of gold answers, not one string")
    if not golds:
        raise ValueError("at least one gold answer is needed")


def exact_match(prediction: str, golds: Sequence[str]) -> float:
    """1.0 when the normalized prediction equals some normalized gold, else 0.0 (official EM, max over golds)."""
    _require_golds(golds)
    normalized = normalize_answer(prediction)
    return 1.0 if any(normalized == normalize_answer(gold) for gold in golds) else 0.0


def _f1_of_tokens(prediction: Sequence[str], gold: Sequence[str]) -> float:
    same = sum((Counter(prediction) & Counter(gold)).values())
    if same == 0:
        return 0.0
    precision = same / len(prediction)
    recall = same / len(gold)
    return 2 * precision * recall / (precision + recall)


def _hotpot_f1(prediction: str, gold: str) -> float:
    pred, ref = normalize_answer(prediction), normalize_answer(gold)
    # Official special case: a yes / no / noanswer on either side scores only by exact equality.
    if (pred in _HOTPOT_SPECIAL or ref in _HOTPOT_SPECIAL) and pred != ref:
        return 0.0
    return _f1_of_tokens(pred.split(), ref.split())


def token_f1(prediction: str, golds: Sequence[str]) -> float:
    """Official HotpotQA token F1, maximum over the gold answers.

    Edge cases (as the official code): an empty (after normalization) prediction or gold scores 0.0,
    also when both are empty; "yes"/"no"/"noanswer" against anything else scores 0.0.
    Raises ValueError when `golds` is empty.
    """
    _require_golds(golds)
    return max(_hotpot_f1(prediction, gold) for gold in golds)


# --------------------------------------------------------------------------- soft correctness

_UNITS = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
}
_TEENS = {
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
}
_TENS = {
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
}
_SCALES = {"thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000, "trillion": 10**12}
_SMALL = {**_UNITS, **_TEENS, **_TENS}
# "No idea" is a non-answer, not the answer "no".
_NON_ANSWER_AFTER_NO = frozenset({"idea", "answer", "information", "clue", "data"})


# A decimal point between digits survives punctuation removal as this private-use character, so that
# "3.5" stays one number instead of becoming "35"; `_number_value` reads it back.
_DECIMAL_POINT = "\ue000"
_NUMBER_TOKEN = re.compile(rf"\d+(?:{_DECIMAL_POINT}\d+)?")


def _number_value(token: str) -> Decimal | None:
    """The value of a token written in digits ("35", "3.50", "007"), else None."""
    if not _NUMBER_TOKEN.fullmatch(token):
        return None
    return Decimal(token.replace(_DECIMAL_POINT, "."))


def _number_text(value: Decimal) -> str:
    """One spelling per value: "3.50" and "3.5" -> "3.5", "007" -> "7", "1.5 million" -> "1500000"."""
    if value == value.to_integral_value():
        return str(int(value))
    return format(value.normalize(), "f")


def _parse_number(tokens: Sequence[str], start: int) -> tuple[Decimal, int] | None:
    """(value, index after the number) of the number-word phrase starting at `start`, or None.

    Accepts e.g. "twenty one", "one hundred and five", "two thousand three hundred", "3 million",
    "1.5 million". A token that cannot continue the phrase grammatically ("one two") ends it.
    """
    total, group, last = Decimal(0), Decimal(0), ""
    index = start
    leading = _number_value(tokens[start])
    if leading is not None and start + 1 < len(tokens) and tokens[start + 1] in _SCALES | {"hundred": 100}:
        group, last, index = leading, "small", start + 1
    while index < len(tokens):
        word = tokens[index]
        if (
            word == "and"
            and last in ("hundred", "scale")
            and index + 1 < len(tokens)
            and tokens[index + 1] in _SMALL
        ):
            index += 1
            continue
        if word in _UNITS and last not in ("unit", "teen", "small"):
            group, last = group + _UNITS[word], "unit"
        elif word in _TEENS and last not in ("unit", "teen", "tens", "small"):
            group, last = group + _TEENS[word], "teen"
        elif word in _TENS and last not in ("unit", "teen", "tens", "small"):
            group, last = group + _TENS[word], "tens"
        elif word == "hundred" and last in ("unit", "teen", "tens", "small") and group < 100:
            group, last = group * 100, "hundred"
        elif word in _SCALES and last in ("unit", "teen", "tens", "small", "hundred"):
            total, group, last = total + group * _SCALES[word], Decimal(0), "scale"
        else:
            break
        index += 1
    if last in ("", "small"):  # nothing parsed, or a bare number without a scale word
        return None
    return total + group, index


def _numbers_to_digits(tokens: Sequence[str]) -> list[str]:
    out: list[str] = []
    index = 0
    while index < len(tokens):
        parsed = _parse_number(tokens, index)
        if parsed is None:
            value = _number_value(tokens[index])
            out.append(tokens[index] if value is None else _number_text(value))
            index += 1
        else:
            number, index = parsed
            out.append(_number_text(number))
    return out


def _is_cjk(ch: str) -> bool:
    name = unicodedata.name(ch, "")
    return name.startswith(("CJK UNIFIED", "CJK COMPATIBILITY IDEOGRAPH", "HIRAGANA", "KATAKANA", "HANGUL"))


def soft_tokens(text: str) -> list[str]:
    """The canonical token list soft correctness compares.

    Beyond `normalize_answer`: accents stripped (NFKD, combining marks dropped, then NFC), Unicode
    punctuation removed, hyphens between words split ("twenty-one" -> "twenty one"), thousands
    separators dropped ("1,000" -> "1000"), numbers compared as numbers (a decimal point kept: "3.50" and
    "3.5" are one number, "35" another; ".5" is "0.5"; "007" is "7"), number words turned into digits
    ("one thousand" -> "1000", "1.5 million" -> "1500000"), and every CJK / kana / hangul character made its own token, so partial CJK overlap
    gets partial F1 instead of 0.
    """
    decomposed = unicodedata.normalize("NFKD", text.lower())
    stripped = unicodedata.normalize(
        "NFC", "".join(ch for ch in decomposed if unicodedata.category(ch) != "Mn")
    )
    # ".5" -> "0.5", then the point of a decimal number is protected from punctuation removal
    stripped = re.sub(r"(?<![\w.])\.(?=\d)", "0.", stripped)
    stripped = re.sub(r"(?<=\d)\.(?=\d)", _DECIMAL_POINT, stripped)
    pieces = []
    for ch in stripped:
        if unicodedata.category(ch).startswith("P") and ch not in "-,":
            # ASCII punctuation is deleted as normalize_answer does; other punctuation separates words.
            pieces.append("" if ch in _ASCII_PUNCTUATION else " ")
        elif _is_cjk(ch):
            pieces.append(f" {ch} ")
        else:
            pieces.append(ch)
    spaced = re.sub(r"(?<=\d),(?=\d{3}\b)", "", "".join(pieces))
    spaced = spaced.replace("-", " ").replace(",", " ")
    return _numbers_to_digits(normalize_answer(spaced).split())


def _yes_no(tokens: Sequence[str]) -> str | None:
    """The yes or no an answer starts with ("Yes, it is." -> yes), else None; "No idea" is not a "no"."""
    if not tokens or tokens[0] not in ("yes", "no"):
        return None
    if tokens[0] == "no" and len(tokens) > 1 and tokens[1] in _NON_ANSWER_AFTER_NO:
        return None
    return tokens[0]


def bare_yes_no(text: str) -> str | None:
    """"yes" or "no" when that is the whole text ("Yes.", "NO"), else None."""
    tokens = soft_tokens(text)
    return tokens[0] if tokens in (["yes"], ["no"]) else None


def answered_yes_no(text: str) -> str | None:
    """The yes or no an answer starts with ("Yes, it is." -> yes), else None."""
    return _yes_no(soft_tokens(text))


def soft_correct(prediction: str, golds: Sequence[str]) -> bool:
    """Seed 004 soft correctness: canonical match or token F1 >= 0.8 against some gold.

    Both sides are canonicalized by `soft_tokens` (number normalization and the rest). Against a
    yes/no gold the prediction is reduced to the yes/no it starts with (yes/no canonicalization:
    "Yes.", "YES", "yes, it is" -> yes) and must equal it; fuzzy matching does not apply there.
    Otherwise the prediction is correct when its tokens equal a gold's tokens or their token F1 is
    >= 0.8. Containment ("the gold appears inside the prediction") is not a rule: the seed does not
    name it, and "not Paris but London" contains "Paris". An empty canonical prediction is never
    correct; a gold that is empty after canonicalization matches nothing.
    Raises ValueError when `golds` is empty.
    """
    _require_golds(golds)
    pred = soft_tokens(prediction)
    if not pred:
        return False
    for gold in golds:
        ref = soft_tokens(gold)
        if ref in (["yes"], ["no"]):
            if _yes_no(pred) == ref[0]:
                return True
        elif ref and (pred == ref or _f1_of_tokens(pred, ref) >= SOFT_F1_THRESHOLD):
            return True
    return False


# --------------------------------------------------------------------------- grounding, confidence, trace


def grounding_score(used_titles: Sequence[str | None], gold_titles: Collection[str]) -> float:
    """G = |{u in U : title(u) in S}| / |U| (seed 004), 0.0 when no chunk was used (as the seed says).

    `used_titles` has one entry per distinct used chunk id (the caller de-duplicates ids and maps
    each to its title; None for a chunk without title or an id that was not in the context, which
    never counts as gold). Titles compare exactly. A coarse proxy: a gold title does not prove the
    right passage was used.
    """
    if not used_titles:
        return 0.0
    gold = set(gold_titles)
    return sum(1 for title in used_titles if title is not None and title in gold) / len(used_titles)


def confidence_error(confidence: float | None, correct: bool) -> float | None:
    """CE = |c - 1[correct]| (seed 004); None when the model reported no confidence."""
    if confidence is None:
        return None
    if not 0.0 <= confidence <= 1.0:
        raise ValueError(f"confidence must be in [0, 1], got {confidence}")
    return abs(confidence - (1.0 if correct else 0.0))


def judged_trace(support: Mapping[str, Sequence[Decision]]) -> frozenset[str] | None:
    """U read from the jury, for a system that reports no trace: the chunks that support at least one claim of
    the answer (seed 004 asks the model for the ids it used; ragcourt's reading when it gives none).

    `support` maps every distinct chunk id the condition showed to the reconciled decisions "this claim is
    supported by this chunk" over the answer's claims. A chunk with a yes is used, a chunk with only no's is
    not; a chunk with no yes and an undecided check makes U unknown (None), never a guess. No chunk shown, or
    an answer without claims: U is empty.
    """
    used = set()
    for chunk_id, decisions in support.items():
        decided = any_true(decisions)
        if decided is None:
            return None
        if decided:
            used.add(chunk_id)
    return frozenset(used)


def trace_divergence(used_a: Iterable[str], used_b: Iterable[str]) -> float:
    """Jaccard distance 1 - |A ∩ B| / |A ∪ B| of two sets of used chunk ids.

    The seed computes trace divergence "via Equation 9" of the CUE-R paper without giving it;
    ragcourt uses the Jaccard distance of the used-id sets. Both empty: 0.0 (identical traces).
    """
    a, b = set(used_a), set(used_b)
    union = a | b
    if not union:
        return 0.0
    return 1.0 - len(a & b) / len(union)


def score_answer(
    prediction: str | None, golds: Sequence[str], confidence: float | None = None
) -> tuple[MetricValue, ...]:
    """Per-sample CUE-R answer metrics: soft correctness, answer F1, exact match, confidence error.

    n/a when there is no gold answer or no usable prediction (None: the answer is unscored);
    confidence error is also n/a without a self-reported confidence. An empty string is a real
    (wrong) answer, not a missing one.
    """
    names = (MetricName.SOFT_CORRECTNESS, MetricName.ANSWER_F1, MetricName.EXACT_MATCH)
    if not golds or prediction is None:
        reason = "the sample has no gold answer" if not golds else "the answer is unscored"
        return tuple(not_available(name.value, reason) for name in (*names, MetricName.CONFIDENCE_ERROR))
    correct = soft_correct(prediction, golds)
    error = confidence_error(confidence, correct)
    values = (float(correct), token_f1(prediction, golds), exact_match(prediction, golds))
    scored = tuple(
        MetricValue(name=name.value, value=value, n=1) for name, value in zip(names, values, strict=True)
    )
    ce = (
        MetricValue(name=MetricName.CONFIDENCE_ERROR.value, value=error, n=1)
        if error is not None
        else not_available(MetricName.CONFIDENCE_ERROR.value, "the model reported no confidence")
    )
    return (*scored, ce)


# --------------------------------------------------------------------------- utility table


@dataclass(frozen=True)
class Outcome:
    """One answer under one condition, already scored.

    `soft_correct` / `f1` are None when the answer is unscored or the sample has no gold answer;
    `used_chunk_ids` is None when the trace is unknown, and `trace_source` says whose trace it is (the
    system's report, or the jury's reading of the answer's claims); `trace_unscored` / `trace_escalated`
    count the claim-chunk checks behind a judged trace left undecided (unscored, or judges split) or escalated.
    `grounding` is None without a known trace, a scored answer or gold titles.
    """

    condition: Condition
    soft_correct: bool | None
    f1: float | None
    confidence: float | None
    used_chunk_ids: frozenset[str] | None
    grounding: float | None = None
    trace_source: TraceSource = TraceSource.REPORTED
    confidence_source: ConfidenceSource | None = None
    trace_unscored: int = 0
    trace_escalated: int = 0

    @property
    def confidence_error(self) -> float | None:
        """CE of this answer; None without a confidence or a soft correctness."""
        return None if self.soft_correct is None else confidence_error(self.confidence, self.soft_correct)

    @classmethod
    def score(
        cls,
        condition: Condition,
        prediction: str | None,
        golds: Sequence[str],
        confidence: float | None = None,
        used_chunk_ids: Iterable[str] | None = None,
        *,
        chunk_titles: Mapping[str, str | None] | None = None,
        gold_titles: Collection[str] = (),
        trace_source: TraceSource = TraceSource.REPORTED,
        confidence_source: ConfidenceSource | None = None,
        trace_unscored: int = 0,
        trace_escalated: int = 0,
    ) -> Outcome:
        """Score a prediction (None = unscored answer) against the gold answers; with the titles of the
        chunks this condition showed (`chunk_titles`) and the gold titles, its grounding too."""
        graded = bool(golds)
        used = frozenset(used_chunk_ids) if used_chunk_ids is not None else None
        grounding = None
        if prediction is not None and used is not None and gold_titles and chunk_titles is not None:
            grounding = grounding_score([chunk_titles.get(i) for i in sorted(used)], gold_titles)
        return cls(
            condition=condition,
            soft_correct=soft_correct(prediction, golds) if prediction is not None and graded else None,
            f1=token_f1(prediction, golds) if prediction is not None and graded else None,
            confidence=confidence,
            used_chunk_ids=used,
            grounding=grounding,
            trace_source=trace_source,
            confidence_source=confidence_source,
            trace_unscored=trace_unscored,
            trace_escalated=trace_escalated,
        )


@dataclass(frozen=True)
class UtilityAggregate:
    """Mean deltas of one perturbation kind over chunks of one gold status (None = unknown)."""

    kind: ConditionKind
    chunk_is_gold: bool | None
    n: int
    d_soft_correct: MetricValue
    d_f1: MetricValue
    d_confidence: MetricValue
    trace_divergence: MetricValue
    grounding: MetricValue
    d_grounding: MetricValue
    confidence_error: MetricValue
    d_confidence_error: MetricValue


@dataclass(frozen=True)
class UtilityTable:
    rows: tuple[PerturbationEffect, ...]
    aggregates: tuple[UtilityAggregate, ...]


def _delta(after: float | None, before: float | None) -> float | None:
    return None if after is None or before is None else after - before


def _as_float(value: bool | None) -> float | None:
    return None if value is None else float(value)


def perturbation_effect(
    original: Outcome,
    perturbed: Outcome,
    chunk_titles: Mapping[str, str | None],
    gold_titles: Collection[str],
) -> PerturbationEffect:
    """Deltas perturbed - original for one condition (negative d_soft_correct under remove = the chunk helped).

    chunk_is_gold is None when the condition names no chunk, the chunk has no known title, or
    there are no gold titles; any delta is None when either side lacks the value. Trace divergence needs
    both traces from the same source: the system's report against the jury's reading would measure two
    instruments, not the perturbation.
    """
    chunk_id = perturbed.condition.chunk_id
    title = chunk_titles.get(chunk_id) if chunk_id is not None else None
    is_gold = (title in set(gold_titles)) if title is not None and gold_titles else None
    divergence = (
        trace_divergence(original.used_chunk_ids, perturbed.used_chunk_ids)
        if original.used_chunk_ids is not None and perturbed.used_chunk_ids is not None
        and original.trace_source is perturbed.trace_source
        else None
    )
    return PerturbationEffect(
        condition=perturbed.condition,
        chunk_title=title,
        chunk_is_gold=is_gold,
        d_soft_correct=_delta(_as_float(perturbed.soft_correct), _as_float(original.soft_correct)),
        d_f1=_delta(perturbed.f1, original.f1),
        d_confidence=_delta(perturbed.confidence, original.confidence),
        trace_divergence=divergence,
        soft_correct=_as_float(perturbed.soft_correct),
        f1=perturbed.f1,
        grounding=perturbed.grounding,
        d_grounding=_delta(perturbed.grounding, original.grounding),
        confidence_error=perturbed.confidence_error,
        d_confidence_error=_delta(perturbed.confidence_error, original.confidence_error),
        trace_source=perturbed.trace_source,
        confidence_source=perturbed.confidence_source,
        trace_unscored=perturbed.trace_unscored,
        trace_escalated=perturbed.trace_escalated,
    )


def _mean(name: str, values: Sequence[float | None]) -> MetricValue:
    known = [v for v in values if v is not None]
    missing = len(values) - len(known)
    if not known:
        return not_available(name, "no row has this value", n_unscored=missing)
    return MetricValue(name=name, value=sum(known) / len(known), n=len(known), n_unscored=missing)


def utility_table(
    original: Outcome,
    others: Sequence[Outcome],
    chunk_titles: Mapping[str, str | None],
    gold_titles: Collection[str],
) -> UtilityTable:
    """Per-condition effects against the original (normal) answer and their aggregates.

    `others` holds the answers under remove / replace / duplicate (one per chunk) and controls such
    as closed book. Aggregates: per condition kind and chunk gold status (True / False / None), the
    mean of every delta over the rows that have it (n = rows with a value, n_unscored = rows without).
    """
    rows = tuple(perturbation_effect(original, other, chunk_titles, gold_titles) for other in others)
    groups: dict[tuple[ConditionKind, bool | None], list[PerturbationEffect]] = {}
    for row in rows:
        groups.setdefault((row.condition.kind, row.chunk_is_gold), []).append(row)
    aggregates = tuple(
        UtilityAggregate(
            kind=kind,
            chunk_is_gold=is_gold,
            n=len(group),
            d_soft_correct=_mean("d_soft_correct", [r.d_soft_correct for r in group]),
            d_f1=_mean("d_f1", [r.d_f1 for r in group]),
            d_confidence=_mean("d_confidence", [r.d_confidence for r in group]),
            trace_divergence=_mean("trace_divergence", [r.trace_divergence for r in group]),
            grounding=_mean("grounding", [r.grounding for r in group]),
            d_grounding=_mean("d_grounding", [r.d_grounding for r in group]),
            confidence_error=_mean("confidence_error", [r.confidence_error for r in group]),
            d_confidence_error=_mean("d_confidence_error", [r.d_confidence_error for r in group]),
        )
        for (kind, is_gold), group in groups.items()
    )
    return UtilityTable(rows=rows, aggregates=aggregates)
