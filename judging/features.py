"""The inputs of the stacked judge (judging.learned): per (subject, target) of a binary check, what the offline
judges already compute (judging.baseline: content-word coverage, token F1, MiniLM cosines) and a few cheap
mismatch signals they do not use (dates, named entities, negation, length).

The cosines are taken over the target's `EMBEDDED_SENTENCES` sentences with the highest token F1 with the
subject (all of them when it has no more), not over every sentence: embedding is nearly all of the judge's CPU
and a WiCE evidence page runs to hundreds of sentences (487 in the shared slice), where the semantic rule's
best sentence is one that shares words with the claim. On the 60 shared WiCE claims the best cosine among the
32 is the best among all for 58, 0.042 below it at most (0.0009 on average; a measurement of the feature, no
label used). No HotpotQA paragraph of the shared slice has more than 32 sentences, so there nothing changes.

A model is fit on vectors of one FEATURES_VERSION: any change to a feature's definition or order bumps it, and
a stored model of another version is refused, so coefficients never meet inputs they were not fit on.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np

from ragcourt.judging.baseline import EMBEDDED_SENTENCES, Embed, Sentences
from ragcourt.metrics.text import content_tokens, numbers, overlap, tokens
from ragcourt.stores.encoders import EmbeddingCache

FEATURES_VERSION = 2  # 2: the cosines over the EMBEDDED_SENTENCES nearest sentences
__all__ = ["EMBEDDED_SENTENCES", "FEATURES", "FEATURES_VERSION", "Feature", "FeatureExtractor", "Sentences",
           "lexical_features"]


class Feature(StrEnum):
    """One input of the stacked judge, in vector order (the enum's order is the vector's)."""

    COVERAGE = "coverage"  # share of the subject's content words in the target (the lexical rule's similarity)
    TOKEN_F1 = "token_f1"  # best content-word F1 of the subject with one sentence of the target
    COSINE_BEST = "cosine_best"  # MiniLM cosine with the best embedded sentence (the semantic rule's similarity)
    COSINE_CENTROID = "cosine_centroid"  # MiniLM cosine with the mean of the embedded sentences' vectors
    NUMBER_MISMATCH = "number_mismatch"  # share of the subject's numbers the target lacks
    DATE_MISMATCH = "date_mismatch"  # share of the subject's years and month names the target lacks
    ENTITY_MISMATCH = "entity_mismatch"  # share of the subject's capitalised words (not first) the target lacks
    NEGATION_MISMATCH = "negation_mismatch"  # 1 when exactly one of subject and best F1 sentence negates
    LENGTH_RATIO = "length_ratio"  # log((1 + subject content words) / (1 + target content words))


FEATURES = tuple(Feature)
_YEAR = re.compile(r"^(1[0-9]{3}|20[0-9]{2})$")
_MONTHS = frozenset(["january", "february", "march", "april", "may", "june", "july", "august", "september",
                     "october", "november", "december"])
# Word tokens split "isn't" into "isn" and "t", so the contracted forms are listed without "'t" ("won" and
# "don" are left out: "won the award", "Don").
_NEGATIONS = frozenset(["not", "no", "never", "none", "nor", "neither", "nobody", "nothing", "without", "cannot",
                        "didn", "doesn", "isn", "wasn", "weren", "aren", "hasn", "haven", "hadn", "wouldn",
                        "couldn", "shouldn"])
# A capitalised word that is not the first of its sentence: a name (a person, place, work), cheap to find
# without a tagger. The first word is capitalised by grammar, so it says nothing.
_CAPITALISED = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][\w'-]+)")


def _missing_share(wanted: set[str], present: set[str]) -> float:
    return len(wanted - present) / len(wanted) if wanted else 0.0


def _dates(words: list[str]) -> set[str]:
    return {w for w in words if _YEAR.match(w) or w in _MONTHS}


def _entities(text: str) -> set[str]:
    return {match.lower() for match in _CAPITALISED.findall(text.strip())}


def _cosine(first: np.ndarray, second: np.ndarray) -> float:
    norm = float(np.linalg.norm(first) * np.linalg.norm(second))
    return float(first @ second / norm) if norm > 0 else 0.0


def _negates(text: str) -> bool:
    return any(word in _NEGATIONS for word in tokens(text))


def lexical_features(subject: str, target: str, found: Sentences | None = None) -> dict[Feature, float]:
    """The features that need no embedding (`found`: the target's Sentences, when already split)."""
    target_words = tokens(target)
    present = set(target_words)
    found = found or Sentences.of(subject, target)
    best = found.best()
    return {
        Feature.COVERAGE: overlap(subject, target),
        Feature.TOKEN_F1: max(found.f1),
        Feature.NUMBER_MISMATCH: _missing_share(numbers(subject), numbers(target)),
        Feature.DATE_MISMATCH: _missing_share(_dates(tokens(subject)), _dates(target_words)),
        Feature.ENTITY_MISMATCH: _missing_share(_entities(subject), present),
        Feature.NEGATION_MISMATCH: float(_negates(subject) != _negates(best)),
        Feature.LENGTH_RATIO: math.log((1 + len(content_tokens(subject))) / (1 + len(content_tokens(target)))),
    }


@dataclass
class FeatureExtractor:
    """Feature vectors (FEATURES order) of (subject, target) pairs. Embeddings go through one EmbeddingCache, as
    the semantic judge's do: a claim meets the same evidence sentences in several checks."""

    embed: Embed
    _cached: EmbeddingCache = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._cached = EmbeddingCache(self.embed)

    def values(self, subject: str, target: str) -> dict[Feature, float]:
        split = Sentences.of(subject, target)
        found = lexical_features(subject, target, split)
        vectors = np.asarray(self._cached([subject, *split.nearest()]), dtype=np.float64)
        claim, windows = vectors[0], vectors[1:]
        found[Feature.COSINE_BEST] = max(_cosine(claim, window) for window in windows)
        # The whole target's similarity as the cosine with the mean of its sentences' vectors, not with one
        # embedding of the whole text: MiniLM reads only a text's first 256 word pieces (a fifth of a WiCE page),
        # and the sentence vectors are at hand, so it costs no model call.
        found[Feature.COSINE_CENTROID] = _cosine(claim, windows.mean(axis=0))
        return found

    def vector(self, subject: str, target: str) -> np.ndarray:
        found = self.values(subject, target)
        return np.array([found[name] for name in FEATURES], dtype=np.float64)

    def matrix(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        return np.stack([self.vector(s, t) for s, t in pairs]) if pairs else np.empty((0, len(FEATURES)))
