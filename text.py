"""Small text utilities shared by the no-LLM baselines: tokens, sentences, overlap."""

from __future__ import annotations

import re
import unicodedata

_TOKEN = re.compile(r"\w+", re.UNICODE)
# Chinese and Japanese write words without spaces, so each ideograph or kana is a token of its own;
# runs of other word characters (latin words, numbers such as the 2024 in 2024年) stay whole.
_CJK_CHAR = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK_OR_RUN = re.compile(f"[{_CJK_CHAR}]|[^{_CJK_CHAR}]+")
# A sentence ends at . ! ? or a CJK full stop followed by space or end; abbreviations like "U.S." are rare
# enough in the bundled data that a simple rule beats a dependency.
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|(?<=[。！？])")
STOPWORDS = frozenset(
    ["a", "an", "the", "of", "in", "on", "at", "to", "for", "from", "by", "with", "and", "or", "but", "is", "are", "was", "were", "be", "been", "being", "this", "that", "these", "those", "it", "its", "as", "which", "who", "whom", "whose", "what", "when", "where", "why", "how", "do", "does", "did", "has", "have", "had", "not", "no", "yes", "than", "then", "so", "such", "can", "could", "would", "should", "will", "shall", "may", "might", "must", "into", "about", "over", "under", "after", "before", "between", "both", "also", "there", "their", "they", "them", "he", "she", "his", "her", "we", "you", "i"]
)


def tokens(text: str) -> list[str]:
    """Lower-cased NFKC word tokens; CJK ideographs and kana are split per character (no spaces in CJK)."""
    normalized = unicodedata.normalize("NFKC", text).lower()
    return [part for token in _TOKEN.findall(normalized) for part in _CJK_OR_RUN.findall(token)]


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
