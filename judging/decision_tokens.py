"""Where a structured pairwise reply states its decision, and the A / B / Tie probabilities there.

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
from collections.abc import Sequence

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
    value_at = matches[-1].end()
    offset = 0
    for token in tokens:
        end = offset + len(token.token)
        if end > value_at and token.token.strip(_JSON_PUNCTUATION):
            return token
        offset = end
    return None


def token_decision_probabilities(tokens: Sequence[TokenLogprob] | None) -> DecisionProbabilities | None:
    """Softmax over A / B / Tie at the decision token; None when there are no logprobs, no decision token,
    or no top alternatives (the chosen token alone would always read as probability 1)."""
    if not tokens:
        return None
    chosen = decision_token(tokens)
    if chosen is None or not chosen.top:
        return None
    alternatives = dict(chosen.top)
    alternatives.setdefault(chosen.token, chosen.logprob)
    pooled: dict[Label, list[float]] = {}
    for token, logprob in alternatives.items():
        label = decision_label_of_token(token)
        if label is not None and logprob > -math.inf:
            pooled.setdefault(label, []).append(logprob)
    if not pooled:
        return None
    # variants of one label (" A" and "A") are pooled: log of the summed probability
    summed = {
        label.value: max(lps) + math.log(math.fsum(math.exp(lp - max(lps)) for lp in lps))
        for label, lps in pooled.items()
    }
    probabilities = decision_probabilities(summed)
    return None if probabilities.na_reason else probabilities


def verdict_probabilities(tokens: Sequence[TokenLogprob] | None) -> dict[Label, float] | None:
    """The probabilities in the form a Verdict keeps them."""
    found = token_decision_probabilities(tokens)
    if found is None:
        return None
    return {label: found.of(label) for label in (Label.A, Label.B, Label.TIE)}  # type: ignore[misc]
