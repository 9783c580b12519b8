"""chromadb corpus and the offline embedding functions."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from chromadb.utils.embedding_functions import known_embedding_functions

from ragcourt.schema import Chunk
from ragcourt.stores.embeddings import EmbeddingKind, HashingEmbedding, MiniLMEmbedding, make_embedding
from ragcourt.stores.vectors import CollectionNotFoundError, VectorStore

# Features of HashingEmbedding: "alpha beta" -> alpha, beta, "alpha beta"; none of the features below
# share a hash bucket, so cosines are exact: query "alpha beta" vs AB = 1, vs AG = 1/3, vs GD = 0.
AB = Chunk(id="ab", text="alpha beta", title="Alpha", source="wiki", metadata={"year": 1999, "tags": ["x"]})
GD = Chunk(id="gd", text="gamma delta", title="Gamma")
AG = Chunk(id="ag", text="alpha gamma")


def test_hashing_embedding_is_exact_feature_hashing() -> None:
    ab, ag = np.array(HashingEmbedding()(["alpha beta", "alpha gamma"]))
    assert ab.shape == (256,)
    assert np.linalg.norm(ab) == pytest.approx(1.0)
    assert float(ab @ ag) == pytest.approx(1 / 3)
    assert np.count_nonzero(ab) == 3


def test_index_and_query_rank_and_score(tmp_path: Path) -> None:
    store = VectorStore.persistent(tmp_path, HashingEmbedding())
    assert store.index("corpus", [AB, GD, AG]) == 3
    assert store.count("corpus") == 3
    hits = store.query("corpus", "alpha beta", k=3)
    assert [(c.id, c.rank) for c in hits] == [("ab", 1), ("ag", 2), ("gd", 3)]
    assert [c.score for c in hits] == pytest.approx([1.0, 1 / 3, 0.0], abs=1e-5)
    first = hits[0]
    assert (first.text, first.title, first.source, first.metadata) == (
        "alpha beta",
        "Alpha",
        "wiki",
        {"year": 1999},
    )
    assert hits[1].title is None and hits[1].metadata == {}


def test_score_threshold_filters(tmp_path: Path) -> None:
    store = VectorStore.persistent(tmp_path, HashingEmbedding())
    store.index("corpus", [AB, GD, AG])
    assert [c.id for c in store.query("corpus", "alpha beta", k=3, score_threshold=0.3)] == ["ab", "ag"]
    assert [c.id for c in store.query("corpus", "alpha beta", k=3, score_threshold=0.5)] == ["ab"]


def test_query_many_is_one_list_per_text(tmp_path: Path) -> None:
    store = VectorStore.persistent(tmp_path, HashingEmbedding())
    store.index("corpus", [AB, GD, AG], batch_size=2)
    results = store.query_many("corpus", ["alpha beta", "gamma delta"], k=1)
    assert [[c.id for c in hits] for hits in results] == [["ab"], ["gd"]]


def test_upsert_replaces_and_bad_input_is_refused(tmp_path: Path) -> None:
    store = VectorStore.persistent(tmp_path, HashingEmbedding())
    store.index("corpus", [AB, GD])
    store.index("corpus", [AB.model_copy(update={"text": "gamma delta"})])
    assert store.count("corpus") == 2
    assert store.query("corpus", "gamma delta", k=2, score_threshold=0.99)[0].score == pytest.approx(
        1.0, abs=1e-5
    )
    with pytest.raises(ValueError, match="empty text"):
        store.index("corpus", [Chunk(id="blank", text="  ")])
    with pytest.raises(ValueError, match="duplicate chunk ids"):
        store.index("corpus", [AB, AB])
    with pytest.raises(CollectionNotFoundError):
        store.query("missing", "x", k=1)
    assert store.has_collection("corpus") and not store.has_collection("missing")


# Builds a collection with a non-default hashing dimension, so reopening must restore the config.
BUILD = """
import socket, sys
def no_network(*args, **kwargs):
    raise OSError("network used")
socket.socket.connect = no_network
from ragcourt.schema import Chunk
from ragcourt.stores.embeddings import HashingEmbedding
from ragcourt.stores.vectors import VectorStore
store = VectorStore.persistent(sys.argv[1], HashingEmbedding(dim=64))
store.index("corpus", [Chunk(id="ab", text="alpha beta"), Chunk(id="gd", text="gamma delta")])
"""


def test_collection_built_in_one_process_is_queried_in_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    subprocess.run([sys.executable, "-c", BUILD, str(tmp_path)], check=True, timeout=120)

    def no_network(*args: object, **kwargs: object) -> None:
        raise OSError("network used")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    store = VectorStore.persistent(tmp_path)  # no embedding passed: the registered one is rebuilt
    hits = store.query("corpus", "gamma delta", k=2)
    assert [c.id for c in hits] == ["gd", "ab"]
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    collection = store._collection("corpus", create=False)
    assert collection.configuration_json["embedding_function"]["config"] == {"dim": 64}
    # Passing the same function again is accepted too.
    assert VectorStore.persistent(tmp_path, HashingEmbedding(dim=64)).count("corpus") == 2


def test_embedding_functions_are_registered_and_rebuildable() -> None:
    assert known_embedding_functions[MiniLMEmbedding.name()] is MiniLMEmbedding
    assert known_embedding_functions[HashingEmbedding.name()] is HashingEmbedding
    rebuilt = HashingEmbedding.build_from_config(HashingEmbedding(dim=32).get_config())
    assert isinstance(rebuilt, HashingEmbedding) and rebuilt.dim == 32
    for kind, cls in ((EmbeddingKind.MINILM, MiniLMEmbedding), (EmbeddingKind.HASHING, HashingEmbedding)):
        made = make_embedding(kind)
        assert isinstance(made, cls)
        assert made.default_space() == "cosine" and not made.is_legacy()


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedding:
    return MiniLMEmbedding()


def test_minilm_gives_unit_vectors_that_rank_meaning(minilm: MiniLMEmbedding) -> None:
    cat, kitten, stocks = np.array(
        minilm(["a cat sat on the mat", "a kitten sits on a rug", "stock market prices fell"])
    )
    assert cat.shape == (384,)
    assert [float(np.linalg.norm(v)) for v in (cat, kitten, stocks)] == pytest.approx(
        [1.0, 1.0, 1.0], abs=1e-5
    )
    assert float(cat @ kitten) > float(cat @ stocks) + 0.3


def test_minilm_padding_and_batching_do_not_change_vectors(minilm: MiniLMEmbedding) -> None:
    short = "a cat sat on the mat"
    long = (
        "the committee published a long report on the economics of fishing fleets in the north atlantic " * 3
    )
    (alone,) = np.array(minilm([short]))
    in_batch = np.array(minilm([long, short]))
    assert np.abs(in_batch[1] - alone).max() < 1e-5
    # 40 texts of varied length span two length-sorted batches; each comes back in its own place.
    texts = [f"sentence number {n} " + "with filler words " * (n % 7) for n in range(40)]
    batched = np.array(minilm(texts))
    for n in (0, 13, 39):
        assert np.abs(batched[n] - np.array(minilm([texts[n]]))[0]).max() < 1e-5


def test_minilm_truncates_at_256_tokens(minilm: MiniLMEmbedding) -> None:
    # "apple " * 254 is exactly 256 tokens with [CLS] and [SEP]; longer texts are cut to the same tokens.
    at_limit, beyond, shorter = np.array(minilm(["apple " * 254, "apple " * 300, "apple " * 200]))
    assert np.abs(at_limit - beyond).max() < 1e-6
    assert np.abs(at_limit - shorter).max() > 1e-3


def test_minilm_loads_nothing_until_called() -> None:
    code = (
        "import sys; from ragcourt.stores.embeddings import MiniLMEmbedding; MiniLMEmbedding(); "
        "print('onnxruntime' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert json.loads(done.stdout.strip().lower()) is False
