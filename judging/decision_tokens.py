"""Where a structured reply states its decisions, and the probabilities of the labels there.

Pairwise (seed 001): A / B / Tie at the value of the ``"decision"`` key. Binary checks: yes / no at the value
of each item's decision key (``"verdict"`` of a per-kind batch; ``"in_context"``, ``"in_answer"``,
``"answered"`` of a combined one), found in the JSON object that names the item (``"item_id"``), whatever
the order of its keys. Linked checks (a list of target ids: ``"ids"`` of a per-kind batch;
``"supporting_chunk_ids"``, ``"chunk_ids"``, ``"served_subquery_ids"`` of a combined one) where the batch
offers exactly one target: yes / no is whether the list is non-empty, decided at the token after its ``[``
(`nonempty_list_probabilities`); with several targets no probability is identifiable there, so none is given.

The judge answers with JSON (tool-call arguments or message content), e.g.
``{"analysis": "...", "decision": "A"}``. The endpoint's logprobs are per output token of that JSON, so the
decision is the first token after the key ``"decision"`` and its colon/quote; the endpoint's top
alternatives at that position are what seed 001 (3.2) takes the softmax over.

Token boundaries differ between tokenizers (``":"A`` may be one token, ``Tie`` may be ``T`` + ``ie``), so a
token is compared after stripping JSON punctuation and whitespace, and a proper prefix of ``Tie`` (``T``,
``Ti``) stands for Tie: at that position nothing else that starts with it is a valid decision.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from ragcourt.judging.combined_checks import shown_id
from ragcourt.llm.reply import TokenLogprob
from ragcourt.metrics.dice import DecisionProbabilities, decision_probabilities
from ragcourt.schema import Label

_DECISION_KEY = re.compile(r'"decision"\s*:\s*"?')
_JSON_PUNCTUATION = ' \t\r\n":{},'


def decision_label_of_token(token: str) -> Label | None:
    """The decision a single token stands for, or None (A and B case-sensitive, Tie and its prefixes not)."""
    text = token.strip(_JSON_PUNCTUATION)
    if text in (Label.A.value, Label.B.value):
        return Label(text)
    if text and Label.TIE.value.casefold().startswith(text.casefold()):
        return Label.TIE
    return None


def decision_token(tokens: Sequence[TokenLogprob]) -> TokenLogprob | None:
    """The token holding the first character of the value of the last ``"decision"`` key, if any."""
    text = "".join(t.token for t in tokens)
    matches = list(_DECISION_KEY.finditer(text))
    if not matches:
        return None
    return _token_at(tokens, matches[-1].end())


def _label_logprobs(token: TokenLogprob, label_of: Callable[[str], Label | None]) -> dict[Label, float] | None:
    """The log probability of each label among a decision token's top alternatives; variants of one label
    (" A" and "A") pooled as the log of their summed probability. None without top alternatives (the chosen
    token alone would always read as probability 1) or when none of them is a label."""
    if not token.top:
        return None
    alternatives = dict(token.top)
    alternatives.setdefault(token.token, token.logprob)
    pooled: dict[Label, list[float]] = {}
    for text, logprob in alternatives.items():
        label = label_of(text)
        if label is not None and logprob > -math.inf:
            pooled.setdefault(label, []).append(logprob)
    if not pooled:
        return None
    return {label: max(lps) + math.log(math.fsum(math.exp(lp - max(lps)) for lp in lps))
            for label, lps in pooled.items()}


def token_decision_probabilities(tokens: Sequence[TokenLogprob] | None) -> DecisionProbabilities | None:
    """Softmax over A / B / Tie at the decision token; None when there are no logprobs, no decision token,
    or no top alternatives (the chosen token alone would always read as probability 1)."""
    if not tokens:
        return None
    chosen = decision_token(tokens)
    summed = _label_logprobs(chosen, decision_label_of_token) if chosen is not None else None
    if summed is None:
        return None
    probabilities = decision_probabilities({label.value: lp for label, lp in summed.items()})
    return None if probabilities.na_reason else probabilities


def _token_at(tokens: Sequence[TokenLogprob], at: int) -> TokenLogprob | None:
    """The token holding character `at` of the concatenated text, or the first token after it with content."""
    offset = 0
    for token in tokens:
        end = offset + len(token.token)
        if end > at and token.token.strip(_JSON_PUNCTUATION):
            return token
        offset = end
    return None


def _item_value_offsets(text: str, keys: Collection[str],
                        list_keys: Collection[str] = ()) -> dict[tuple[str, str], int]:
    """(item id as shown, key) -> where that item's value of `key` starts in `text`: the first character of a
    string value for `keys`, the first character inside the ``[`` of a list value for `list_keys`.

    A small scan of the reply's JSON (strings with escapes, objects nested in lists): a key belongs to the
    innermost object around it, and that object's ``"item_id"`` may come before or after it. An item named
    twice keeps neither: the reply is ambiguous there, so it gets no probability.
    """
    objects: list[dict[str, object]] = []  # per open object: its item_id and the value offsets of the keys
    found: dict[tuple[str, str], int] = {}
    ambiguous: set[tuple[str, str]] = set()
    pos, last_key, expecting_value = 0, None, False
    while pos < len(text):
        char = text[pos]
        if char == '"':
            end = pos + 1
            while end < len(text) and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            value = text[pos + 1:end]
            after = end + 1
            while after < len(text) and text[after] in " \t\r\n":
                after += 1
            if after < len(text) and text[after] == ":" and not expecting_value:
                last_key, expecting_value = value, True
                pos = after + 1
                continue
            if expecting_value and objects:
                if last_key == "item_id":
                    objects[-1]["item_id"] = value
                elif last_key in keys:
                    objects[-1][f"@{last_key}"] = pos + 1
                expecting_value = False
            pos = end + 1
            continue
        if char == "{":
            objects.append({})
            expecting_value = False
        elif char == "}" and objects:
            closed = objects.pop()
            item = closed.get("item_id")
            for key in (*keys, *list_keys):
                at = closed.get(f"@{key}")
                if isinstance(item, str) and isinstance(at, int):
                    item = shown_id(item)
                    if (item, key) in found:
                        ambiguous.add((item, key))
                    found[(item, key)] = at
        elif char == "[" and expecting_value and objects and last_key in list_keys:
            objects[-1][f"@{last_key}"] = pos + 1
            expecting_value = False
        elif char in "[,":
            expecting_value = False
        elif expecting_value and not char.isspace():
            expecting_value = False  # a non-string value (null, a list, a number): no decision token
        pos += 1
    return {name: at for name, at in found.items() if name not in ambiguous}


def item_decision_tokens(tokens: Sequence[TokenLogprob], keys: Collection[str]) -> dict[tuple[str, str], TokenLogprob]:
    """(item id as shown, key) -> the token where that item's value of `key` starts (string values only;
    an item named twice keeps neither, see `_item_value_offsets`)."""
    out = {}
    for name, at in _item_value_offsets("".join(t.token for t in tokens), keys).items():
        token = _token_at(tokens, at)
        if token is not None:
            out[name] = token
    return out


@dataclass(frozen=True)
class ListStart:
    """The token where a list value's first element (or its closing ``]``) is decided, and the part of that
    token before it (``": ["`` when the tokenizer joined the bracket to it; empty when the token starts there)."""

    token: TokenLogprob
    before: str


def item_list_starts(tokens: Sequence[TokenLogprob], keys: Collection[str]) -> dict[tuple[str, str], ListStart]:
    """(item id as shown, key) -> where that item's list value of `key` is decided empty or not: the token
    holding the first non-blank character after its ``[`` (an id's opening quote, or ``]``)."""
    text = "".join(t.token for t in tokens)
    out = {}
    for name, at in _item_value_offsets(text, (), keys).items():
        while at < len(text) and text[at] in " \t\r\n":
            at += 1
        offset = 0
        for token in tokens:
            end = offset + len(token.token)
            if end > at:
                out[name] = ListStart(token, token.token[:at - offset])
                break
            offset = end
    return out


def yes_no_label_of_token(token: str) -> Label | None:
    text = token.strip(_JSON_PUNCTUATION).casefold()
    return {"yes": Label.YES, "no": Label.NO}.get(text)


def yes_no_probabilities(token: TokenLogprob | None, chosen: Label) -> dict[Label, float] | None:
    """P(yes), P(no) at a decision token: the softmax over the endpoint's yes / no alternatives there (variants
    pooled), as seed 001 does for A / B / Tie. None without top alternatives (the chosen token alone would
    always read as 1), when the token does not state `chosen` (the reply parsed is not the one scored), or
    when no alternative is a yes or a no."""
    if token is None or yes_no_label_of_token(token.token) is not chosen:
        return None
    summed = _label_logprobs(token, yes_no_label_of_token)
    if summed is None:
        return None
    top = max(summed.values())
    mass = {label: math.exp(lp - top) for label, lp in summed.items()}
    total = math.fsum(mass.values())
    return {label: mass.get(label, 0.0) / total for label in (Label.YES, Label.NO)}


def _list_reading(token: str, before: str) -> Label | None:
    """What a token at a list's start says: an id follows (yes: the list is not empty) or the list closes (no).
    None for a token that does not continue the text before the list's start (another value, e.g. null)."""
    if not token.startswith(before):
        return None
    rest = token[len(before):].lstrip()
    return Label.YES if rest.startswith('"') else Label.NO if rest.startswith("]") else None


def nonempty_list_probabilities(start: ListStart | None, chosen: Label) -> dict[Label, float] | None:
    """P(yes), P(no) of a linked check whose batch offers exactly one target: yes is the list of linked ids
    being non-empty, read at the token where the list's first id (a ``"``-starting token) or its ``]`` is chosen,
    the endpoint's alternatives of each reading pooled as `yes_no_probabilities` does.

    Only for one offered target: with several, P(this target is in the list) is not one token's choice (the
    ids come one after another, each conditioned on the ones before), so callers give none there. None, too,
    without top alternatives, when the token's reading is not `chosen` (e.g. the list names an id that is not
    the target, so it is non-empty but the label is no), or when no alternative reads either way."""
    if start is None or _list_reading(start.token.token, start.before) is not chosen:
        return None
    summed = _label_logprobs(start.token, lambda text: _list_reading(text, start.before))
    if summed is None:
        return None
    top = max(summed.values())
    mass = {label: math.exp(lp - top) for label, lp in summed.items()}
    total = math.fsum(mass.values())
    return {label: mass.get(label, 0.0) / total for label in (Label.YES, Label.NO)}


def verdict_probabilities(tokens: Sequence[TokenLogprob] | None) -> dict[Label, float] | None:
    """The probabilities in the form a Verdict keeps them."""
    found = token_decision_probabilities(tokens)
    if found is None:
        return None
    return {label: found.of(label) for label in (Label.A, Label.B, Label.TIE)}  # type: ignore[misc]
