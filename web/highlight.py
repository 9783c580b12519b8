"""Evidence with the spans that matter marked: every character of the text is escaped, marks are ours.

Spans are found on the raw text (so a term never matches inside an entity such as `&amp;`), then each
piece is escaped and only the matched pieces are wrapped in `<mark>`. No text from the store is ever
inserted unescaped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from markupsafe import Markup, escape

STOPWORDS = frozenset(
    ["a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "have", "he", "her", "his", "in", "is", "it", "its", "of", "on", "or", "she", "that", "the", "their", "them", "they", "this", "to", "was", "were", "what", "when", "where", "which", "who", "whom", "why", "with", "how", "did", "does", "do", "not"]
)
MIN_TERM = 3


def terms(text: str) -> list[str]:
    """Content words of a text (lower case, no stopwords, at least MIN_TERM characters), first seen first."""
    words = re.findall(r"\w+", text.lower())
    return list(dict.fromkeys(w for w in words if len(w) >= MIN_TERM and w not in STOPWORDS))


def spans(text: str, wanted: Iterable[str]) -> list[tuple[int, int]]:
    """Merged (start, end) spans of whole-word, case-insensitive matches of the wanted terms."""
    found = []
    for term in wanted:
        found += [(m.start(), m.end()) for m in re.finditer(rf"(?<!\w){re.escape(term)}(?!\w)", text, re.IGNORECASE)]
    merged: list[tuple[int, int]] = []
    for start, end in sorted(found):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def highlight(text: str, subject: str) -> Markup:
    """`text` escaped, with the words it shares with `subject` in <mark>."""
    out, position = [], 0
    for start, end in spans(text, terms(subject)):
        out.append(escape(text[position:start]))
        out.append(Markup("<mark>") + escape(text[start:end]) + Markup("</mark>"))
        position = end
    out.append(escape(text[position:]))
    return Markup("").join(out)
