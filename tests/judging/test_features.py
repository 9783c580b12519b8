"""The stacked judge's features on hand-made pairs, checked by hand, and the cosines the semantic rule computes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ragcourt.judging.baseline import best_sentence_cosine
from ragcourt.judging.features import (
    EMBEDDED_SENTENCES,
    FEATURES,
    Feature,
    FeatureExtractor,
    Sentences,
    lexical_features,
)
from ragcourt.metrics.text import sentences


def letters(texts: list[str]) -> np.ndarray:
    """A fake embedding: counts of the letters a-z (deterministic, no model)."""
    return np.array([[t.lower().count(chr(c)) for c in range(ord("a"), ord("z") + 1)] for t in texts], dtype=float)


def test_lexical_features_of_a_partly_supported_claim() -> None:
    found = lexical_features("Paris hosted the 1900 Olympics in July.",
                             "The Olympics were held in Paris in 1900. It rained.")
    # content words: claim {paris, hosted, 1900, olympics, july}; evidence {olympics, held, paris, 1900, rained}
    assert found[Feature.COVERAGE] == pytest.approx(3 / 5)
    # best sentence {olympics, held, paris, 1900}: precision 3/5, recall 3/4
    assert found[Feature.TOKEN_F1] == pytest.approx(2 * 0.6 * 0.75 / 1.35)
    assert found[Feature.NUMBER_MISMATCH] == 0.0
    assert found[Feature.DATE_MISMATCH] == pytest.approx(0.5)  # 1900 found, July not
    assert found[Feature.ENTITY_MISMATCH] == pytest.approx(0.5)  # Olympics found, July not; Paris starts the claim
    assert found[Feature.NEGATION_MISMATCH] == 0.0
    assert found[Feature.LENGTH_RATIO] == pytest.approx(math.log(6 / 6))


def test_lexical_features_of_a_negated_claim_with_another_year() -> None:
    found = lexical_features("The bridge wasn't finished in 2010.", "The bridge was finished in 2012.")
    assert found[Feature.NUMBER_MISMATCH] == 1.0
    assert found[Feature.DATE_MISMATCH] == 1.0
    assert found[Feature.NEGATION_MISMATCH] == 1.0
    assert found[Feature.ENTITY_MISMATCH] == 0.0  # no capitalised word after the first
    # content words: claim {bridge, wasn, t, finished, 2010}; evidence {bridge, finished, 2012}
    assert found[Feature.LENGTH_RATIO] == pytest.approx(math.log(6 / 4))


def test_vector_holds_the_semantic_rules_cosines_in_feature_order() -> None:
    subject, target = "cats purr", "Dogs bark loudly. Cats purr softly."
    vector = FeatureExtractor(letters).vector(subject, target)
    assert vector.shape == (len(FEATURES),)
    assert vector[FEATURES.index(Feature.COSINE_BEST)] == pytest.approx(best_sentence_cosine(letters, subject, target))
    a, *sentence_vectors = letters([subject, "Dogs bark loudly.", "Cats purr softly."])
    centroid = np.mean(sentence_vectors, axis=0)
    assert vector[FEATURES.index(Feature.COSINE_CENTROID)] == pytest.approx(
        a @ centroid / (np.linalg.norm(a) * np.linalg.norm(centroid)))
    assert vector[FEATURES.index(Feature.COVERAGE)] == pytest.approx(1.0)


def test_matrix_of_no_pairs_is_empty() -> None:
    assert FeatureExtractor(letters).matrix([]).shape == (0, len(FEATURES))


def test_a_long_target_embeds_only_the_sentences_nearest_in_words() -> None:
    embedded: list[str] = []

    def recording(texts: list[str]) -> np.ndarray:
        embedded.extend(texts)
        return letters(texts)

    subject = "The tower opened in 1889."
    filler = [f"Paragraph {i} is about gardens." for i in range(EMBEDDED_SENTENCES + 5)]
    near = ["The tower opened to visitors in 1889.", "The tower is tall."]
    target = " ".join([filler[0], near[0], *filler[1:], near[1]])
    split = Sentences.of(subject, target)
    kept = split.nearest()
    assert len(kept) == EMBEDDED_SENTENCES and set(near) <= set(kept)
    assert kept == [s for s in split.texts if s in kept]  # in the target's order
    assert kept[:2] == [filler[0], near[0]]  # F1 ties (0) are kept in order: the first filler sentences
    vector = FeatureExtractor(recording).vector(subject, target)
    assert embedded == [subject, *kept]
    vectors = letters([subject, *kept])
    cosines = vectors[1:] @ vectors[0] / (np.linalg.norm(vectors[1:], axis=1) * np.linalg.norm(vectors[0]))
    assert vector[FEATURES.index(Feature.COSINE_BEST)] == pytest.approx(cosines.max())
    centroid = vectors[1:].mean(axis=0)
    assert vector[FEATURES.index(Feature.COSINE_CENTROID)] == pytest.approx(
        vectors[0] @ centroid / (np.linalg.norm(vectors[0]) * np.linalg.norm(centroid)))


def test_a_short_target_embeds_every_sentence_as_the_semantic_rule_does() -> None:
    subject, target = "cats purr", " ".join(f"Sentence {i} about cats." for i in range(EMBEDDED_SENTENCES))
    assert Sentences.of(subject, target).nearest() == sentences(target)
    assert FeatureExtractor(letters).vector(subject, target)[FEATURES.index(Feature.COSINE_BEST)] == pytest.approx(
        best_sentence_cosine(letters, subject, target))
