"""nodes/retriever_perturber: every condition's context, what made it, and reuse of stored retrievals.

Chunk texts are single words of HashingEmbedding's exact features (see tests/stores/test_vectors.py), so
cosines against the question "alpha beta gamma" (features alpha, beta, gamma, "alpha beta", "beta gamma")
are hand-computable: "alpha beta" 3/sqrt(15) = 0.775, "gamma delta" 1/sqrt(15) = 0.258.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from fixtures import FIXTURES
from langgraph.runtime import Runtime

sys.path.insert(0, str(FIXTURES / "graph"))

from graph_fixtures import ScriptedSystem, make_context, ranked

from ragcourt.nodes.retriever_perturber import retrieve_perturb
from ragcourt.schema import CLOSED_BOOK, LOOSE, NORMAL, ORACLE, Chunk, ConditionKind, Sample
from ragcourt.schema.config import DistractorPolicy, EvalConfig, PerturbationSpec
from ragcourt.stores.embeddings import HashingEmbedding
from ragcourt.stores.records import RecordStore
from ragcourt.stores.vectors import VectorStore
from ragcourt.systems import ConditionUnavailable

RUN = "run-rp"
GOLD = Chunk(id="gold", text="alpha beta gamma", title="Gold")
SAMPLE = Sample(id="p1", question="alpha beta gamma", gold_titles=("Gold",), gold_documents=(GOLD,))
SHOWN = ranked("p1", ("alpha", 0.9), ("beta", 0.8), ("gamma", 0.7), ("epsilon", 0.6), ("zeta", 0.1))
CORPUS = [*SHOWN[:3], GOLD, Chunk(id="d1", text="alpha beta"), Chunk(id="d2", text="gamma delta")]


@pytest.fixture
def store(tmp_path: Path) -> RecordStore:
    with RecordStore(tmp_path / "store.sqlite") as opened:
        yield opened


def system() -> ScriptedSystem:
    return ScriptedSystem(ranked={"p1": SHOWN}, answers={"p1": "alpha"})


async def run_node(store: RecordStore, config: EvalConfig, scripted: ScriptedSystem, state: dict | None = None,
                   vectors: VectorStore | None = None) -> dict:
    context = make_context(store, config, [], scripted)
    context.vectors, context.collection = vectors, "corpus" if vectors else None
    return await retrieve_perturb({"run_id": RUN, "sample": SAMPLE, **(state or {})}, Runtime(context=context))


def ids(retrieval) -> list[str]:
    return [c.id for c in retrieval.chunks]


async def test_normal_closed_book_and_oracle(store: RecordStore) -> None:
    config = EvalConfig(top_k=3, score_threshold=0.75, conditions=(
        ConditionKind.NORMAL, ConditionKind.CLOSED_BOOK, ConditionKind.ORACLE))
    scripted = system()
    update = await run_node(store, config, scripted)
    made = update["retrievals"]
    assert set(made) == {NORMAL.key, CLOSED_BOOK.key, ORACLE.key}
    assert ids(made[NORMAL.key]) == ["p1c1", "p1c2"]  # top 3, then score >= 0.75
    assert (made[NORMAL.key].k, made[NORMAL.key].score_threshold) == (3, 0.75)
    assert made[NORMAL.key].made_by == "scripted-rag.retrieve"
    assert made[CLOSED_BOOK.key].chunks == ()
    assert made[ORACLE.key].chunks == (GOLD,)
    assert update["unavailable"] == {}
    assert scripted.retrieve_calls("p1") == [(3, 0.75)]
    assert {r.condition.key for r in store.get_retrievals(RUN, "p1")} == set(made)


async def test_oracle_without_gold_documents_is_unavailable_with_the_reason(store: RecordStore) -> None:
    config = EvalConfig(conditions=(ConditionKind.NORMAL, ConditionKind.ORACLE))
    context = make_context(store, config, [], system())
    bare = SAMPLE.model_copy(update={"gold_documents": ()})
    update = await retrieve_perturb({"run_id": RUN, "sample": bare}, Runtime(context=context))
    assert ORACLE.key not in update["retrievals"]
    assert update["unavailable"] == {ORACLE.key: "the sample has no gold documents"}


async def test_loose_retrieval_doubles_k_and_drops_the_threshold(store: RecordStore) -> None:
    config = EvalConfig(top_k=2, score_threshold=0.85, loose_k_factor=2)
    scripted = system()
    first = await run_node(store, config, scripted)
    second = await run_node(store, config, scripted, {"retrievals": first["retrievals"], "loose_requested": True})
    loose = second["retrievals"][LOOSE.key]
    assert ids(first["retrievals"][NORMAL.key]) == ["p1c1"]
    assert ids(loose) == ["p1c1", "p1c2", "p1c3", "p1c4"]
    assert (loose.k, loose.score_threshold, loose.made_by) == (4, None, "scripted-rag.retrieve loose")
    # the normal retrieval in the state was reused, not redone
    assert scripted.retrieve_calls("p1") == [(2, 0.85), (4, None)]


async def test_stored_retrievals_are_reused_without_asking_the_system(store: RecordStore) -> None:
    config = EvalConfig(top_k=3, conditions=(ConditionKind.NORMAL, ConditionKind.CLOSED_BOOK),
                        perturbations=PerturbationSpec(kinds=(ConditionKind.REMOVE,)))
    first_system, second_system = system(), system()
    first = await run_node(store, config, first_system)
    again = await run_node(store, config, second_system)  # fresh state, as a resumed run has
    assert second_system.calls == []
    assert again["retrievals"] == first["retrievals"]
    assert len(store.get_retrievals(RUN, "p1")) == 2 + 3  # normal, closed book, remove x 3


async def test_remove_and_duplicate_perturbations(store: RecordStore) -> None:
    config = EvalConfig(top_k=3, perturbations=PerturbationSpec(
        kinds=(ConditionKind.REMOVE, ConditionKind.DUPLICATE)))
    made = (await run_node(store, config, system()))["retrievals"]
    assert ids(made["remove:p1c1"]) == ["p1c2", "p1c3"]
    assert ids(made["remove:p1c2"]) == ["p1c1", "p1c3"]
    assert ids(made["remove:p1c3"]) == ["p1c1", "p1c2"]
    assert ids(made["duplicate:p1c1"]) == ["p1c1", "p1c1", "p1c2", "p1c3"]
    assert ids(made["duplicate:p1c2"]) == ["p1c1", "p1c2", "p1c2", "p1c3"]
    assert ids(made["duplicate:p1c3"]) == ["p1c1", "p1c2", "p1c3", "p1c3"]
    assert made["remove:p1c2"].made_by == "removed p1c2"
    assert len(made) == 1 + 6


async def test_max_chunks_perturbs_a_seeded_sample_of_chunks(store: RecordStore, tmp_path: Path) -> None:
    config = EvalConfig(top_k=3, perturbations=PerturbationSpec(kinds=(ConditionKind.REMOVE,), max_chunks=1, seed=7))
    made = (await run_node(store, config, system()))["retrievals"]
    perturbed = [key for key in made if key != NORMAL.key]
    assert len(perturbed) == 1 and perturbed[0] in {"remove:p1c1", "remove:p1c2", "remove:p1c3"}
    with RecordStore(tmp_path / "other.sqlite") as other:
        again = (await run_node(other, config, system()))["retrievals"]
    assert [key for key in again if key != NORMAL.key] == perturbed  # same seed, same choice


async def test_replace_with_the_best_non_gold_distractor(store: RecordStore, tmp_path: Path) -> None:
    vectors = VectorStore.persistent(tmp_path / "chroma", HashingEmbedding())
    vectors.index("corpus", CORPUS)
    config = EvalConfig(top_k=3, perturbations=PerturbationSpec(
        kinds=(ConditionKind.REPLACE,), distractor=DistractorPolicy.BEST_NON_GOLD))
    made = (await run_node(store, config, system(), vectors=vectors))["retrievals"]
    # Nearest to "alpha beta gamma" are the gold chunk (1.0, excluded: gold), the shown chunks (excluded),
    # then "alpha beta" (0.775) before "gamma delta" (0.258): d1 replaces each chunk in turn.
    assert ids(made["replace:p1c1"]) == ["d1", "p1c2", "p1c3"]
    assert ids(made["replace:p1c2"]) == ["p1c1", "d1", "p1c3"]
    assert ids(made["replace:p1c3"]) == ["p1c1", "p1c2", "d1"]
    assert made["replace:p1c2"].made_by == "replaced p1c2 with d1 (best_non_gold)"

    random_config = config.with_overrides(perturbations={"kinds": ["replace"], "distractor": "random"})
    with RecordStore(tmp_path / "other.sqlite") as other:
        first = (await run_node(other, random_config, system(), vectors=vectors))["retrievals"]
    with RecordStore(tmp_path / "third.sqlite") as third:
        second = (await run_node(third, random_config, system(), vectors=vectors))["retrievals"]
    for key in ("replace:p1c1", "replace:p1c2", "replace:p1c3"):
        position = int(key[-1]) - 1
        assert first[key].chunks[position].id in {"d1", "d2"}  # never shown, never gold
        assert ids(first[key]) == ids(second[key])  # seeded


async def test_replace_without_a_corpus_makes_no_replacement(store: RecordStore) -> None:
    config = EvalConfig(top_k=3, perturbations=PerturbationSpec(kinds=(ConditionKind.REPLACE,)))
    made = (await run_node(store, config, system()))["retrievals"]
    assert list(made) == [NORMAL.key]


class Refusing(ScriptedSystem):
    async def retrieve(self, sample, k, score_threshold):
        raise ConditionUnavailable("no contexts were given for p1")


async def test_system_failures_are_recorded_and_the_run_goes_on(store: RecordStore) -> None:
    config = EvalConfig(top_k=3, conditions=(ConditionKind.NORMAL, ConditionKind.CLOSED_BOOK))
    broken = ScriptedSystem(ranked={"p1": SHOWN}, answers={}, fail_retrieve=frozenset({"p1"}))
    update = await run_node(store, config, broken)
    assert update["unavailable"] == {NORMAL.key: "retrieval failed: RuntimeError: index offline for p1"}
    assert set(update["retrievals"]) == {CLOSED_BOOK.key}  # the other conditions still exist
    refused = await run_node(store, config, Refusing(ranked={}, answers={}))
    # ConditionUnavailable: the system answers without showing its retrieval (not a failure of the sample)
    assert refused["retrieval_hidden"] == "no contexts were given for p1"
    assert refused["unavailable"] == {}
    loose = await run_node(store, config, broken, {"retrievals": update["retrievals"], "loose_requested": True})
    assert loose["unavailable"][LOOSE.key] == "loose retrieval failed: RuntimeError: index offline for p1"
