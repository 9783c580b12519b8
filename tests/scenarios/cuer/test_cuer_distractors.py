"""CUE-R replace perturbation: the `random` distractor is a seeded draw from the whole corpus (not retrieved,
not gold), `best_non_gold` the nearest non-gold chunk outside the retrieval."""

from __future__ import annotations

import random
import sys
from collections import Counter
from pathlib import Path

import pytest
from fixtures import FIXTURES
from langgraph.runtime import Runtime

sys.path.insert(0, str(FIXTURES / "graph"))

from graph_fixtures import ScriptedSystem, make_context, ranked

from ragcourt.nodes.retriever_perturber import retrieve_perturb
from ragcourt.schema import Chunk, ConditionKind, Sample
from ragcourt.schema.config import DistractorPolicy, EvalConfig, PerturbationSpec, Retriever
from ragcourt.stores.embeddings import HashingEmbedding
from ragcourt.stores.records import RecordStore
from ragcourt.stores.vectors import VectorStore
from ragcourt.systems import ExtractiveGenerator, ReferenceRAG
from ragcourt.systems.bm25 import BM25Index

GOLD = Chunk(id="gold", text="alpha beta gamma", title="Gold")
GOLD_BY_TITLE = Chunk(id="g2", text="gamma alpha", title="Gold")  # another paragraph of the gold title
SAMPLE = Sample(id="p1", question="alpha beta gamma", gold_titles=("Gold",), gold_documents=(GOLD,))
SHOWN = ranked("p1", ("alpha", 0.9), ("beta", 0.8), ("gamma", 0.7))
NEAR = Chunk(id="near", text="alpha beta")  # the best non-gold chunk: cosine 3/sqrt(15) with the question
FAR = [Chunk(id=f"z{i:02d}", text=f"unrelated words number{i}") for i in range(12)]  # cosine 0
CORPUS = [*SHOWN, GOLD, GOLD_BY_TITLE, NEAR, *FAR]
CANDIDATES = sorted(["near", *(c.id for c in FAR)])  # not shown, not gold by id or title


@pytest.fixture(scope="module")
def vectors(tmp_path_factory: pytest.TempPathFactory) -> VectorStore:
    store = VectorStore.persistent(tmp_path_factory.mktemp("chroma"), HashingEmbedding())
    store.index("corpus", CORPUS)
    return store


async def replacements(tmp_path: Path, vectors: VectorStore, policy: DistractorPolicy, seed: int) -> dict[str, str]:
    config = EvalConfig(top_k=3, perturbations=PerturbationSpec(
        kinds=(ConditionKind.REPLACE,), distractor=policy, seed=seed))
    with RecordStore(tmp_path / f"{policy}-{seed}.sqlite") as store:
        context = make_context(store, config, [], ScriptedSystem(ranked={"p1": SHOWN}, answers={"p1": "x"}))
        context.vectors, context.collection = vectors, "corpus"
        update = await retrieve_perturb({"run_id": "r", "sample": SAMPLE}, Runtime(context=context))
    made = update["retrievals"]
    return {f"p1c{i}": made[f"replace:p1c{i}"].chunks[i - 1].id for i in (1, 2, 3)}


async def test_best_non_gold_takes_the_nearest_chunk_that_is_neither_shown_nor_gold(
        tmp_path: Path, vectors: VectorStore) -> None:
    # "gold" (1.0) and "g2" (gold title) are skipped, the shown chunks too: "near" (0.775) is next.
    assert await replacements(tmp_path, vectors, DistractorPolicy.BEST_NON_GOLD, 0) == {
        "p1c1": "near", "p1c2": "near", "p1c3": "near"}


async def test_random_draws_from_the_whole_corpus_deterministically_per_seed(
        tmp_path: Path, vectors: VectorStore) -> None:
    first = await replacements(tmp_path, vectors, DistractorPolicy.RANDOM, 3)
    again = await replacements(tmp_path, vectors, DistractorPolicy.RANDOM, 3)
    assert first == again
    # The documented seeding: Random("seed:sample:chunk").choice over the candidates sorted by id.
    assert first == {c: random.Random(f"3:p1:{c}").choice(CANDIDATES) for c in ("p1c1", "p1c2", "p1c3")}


async def test_random_is_uniform_over_unretrieved_non_gold_chunks(tmp_path: Path, vectors: VectorStore) -> None:
    drawn = Counter()
    for seed in range(60):
        drawn.update((await replacements(tmp_path, vectors, DistractorPolicy.RANDOM, seed)).values())
    assert sum(drawn.values()) == 180
    assert set(drawn) == set(CANDIDATES)  # every candidate, far ones included; never shown or gold
    # 180 draws over 13 candidates: 13.8 expected each; a nearest-first policy would give "near" 180 times.
    assert max(drawn.values()) < 30 and min(drawn.values()) >= 4


# Ranked differently by the two retrievers: BM25 puts "rare" (the rare word gamma) second and "near" third, the
# hashing embedding "a1" second and "near" third.
RANKED_APART = [Chunk(id="gold", text="alpha beta gamma", title="Gold"), Chunk(id="a1", text="alpha beta"),
                Chunk(id="a2", text="alpha beta delta"), Chunk(id="rare", text="gamma zeta eta theta iota kappa"),
                Chunk(id="near", text="alpha beta alpha beta"),
                *(Chunk(id=f"z{i:02d}", text=f"alpha beta filler{i}") for i in range(6))]


@pytest.mark.parametrize(("retriever", "shown", "distractor"), [(Retriever.BM25, ["gold", "rare"], "near"),
                                                                 (Retriever.DENSE, ["gold", "a1"], "near")])
async def test_best_non_gold_is_what_the_reference_retriever_ranks_next(
        tmp_path: Path, retriever: Retriever, shown: list[str], distractor: str) -> None:
    """Under BM25 the distractor is BM25's best chunk outside its top-k, not the dense ranking's (which would be
    "a1" after BM25's top 2)."""
    vectors = VectorStore.persistent(tmp_path / "chroma", HashingEmbedding())
    vectors.index("apart", RANKED_APART)
    assert [c.id for c in BM25Index(RANKED_APART).top_k(SAMPLE.question, 3)] == ["gold", "rare", "near"]
    assert [c.id for c in vectors.query("apart", SAMPLE.question, 3, None)] == ["gold", "a1", "near"]
    config = EvalConfig(top_k=2, perturbations=PerturbationSpec(
        kinds=(ConditionKind.REPLACE,), distractor=DistractorPolicy.BEST_NON_GOLD))
    system = ReferenceRAG(vectors, "apart", ExtractiveGenerator(), retriever=retriever)
    with RecordStore(tmp_path / "records.sqlite") as store:
        context = make_context(store, config, [], system)
        context.vectors, context.collection = vectors, "apart"
        update = await retrieve_perturb({"run_id": "r", "sample": SAMPLE}, Runtime(context=context))
    made = update["retrievals"]
    assert [c.id for c in made["normal"].chunks] == shown
    replaced = made[f"replace:{shown[1]}"]
    assert [c.id for c in replaced.chunks] == [shown[0], distractor]
