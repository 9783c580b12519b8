"""Q-CARE metrics against hand-computed values (seed 002, section 3.4)."""

import json
import math

import networkx as nx
import pytest

from ragcourt.metrics.qcare import (
    alignment_graph,
    alignment_graph_json,
    c_ndcg_at_k,
    c_precision_at_k,
    completeness,
    conciseness,
    covered_subqueries,
    qcare_metrics,
    soft_relevance,
    verifiableness,
)
from ragcourt.schema import Chunk, Claim, SubQuery

T, F, U = True, False, None

# Three sub-queries, four chunks in rank order: r = 1/3, 2/3, 0, 1.
COVERS = [
    [T, F, F],
    [T, T, F],
    [F, F, F],
    [T, T, T],
]


def test_soft_relevance_is_share_of_subqueries_covered():
    values = soft_relevance(COVERS, 3)
    assert [v.value for v in values] == pytest.approx([1 / 3, 2 / 3, 0.0, 1.0])
    assert all(v.n == 3 and v.n_unscored == 0 for v in values)


def test_soft_relevance_leaves_undecided_cells_out():
    partial, empty = soft_relevance([[T, U], [U, U]], 2)
    assert partial.value == 1.0 and partial.n == 1 and partial.n_unscored == 1
    assert empty.value is None and "unscored" in empty.na_reason and empty.n_unscored == 2


def test_c_precision_hand_computed():
    assert c_precision_at_k(COVERS, 3, k=4).value == pytest.approx(0.5)  # (1/3+2/3+0+1)/4
    assert c_precision_at_k(COVERS, 3, k=2).value == pytest.approx(0.5)  # (1/3+2/3)/2
    assert c_precision_at_k(COVERS, 3, k=3).value == pytest.approx(1 / 3)  # (1/3+2/3+0)/3
    assert c_precision_at_k(COVERS, 3).value == pytest.approx(0.5)  # k = number of chunks
    assert c_precision_at_k(COVERS, 3, k=4).name == "c_prec@4"


def test_c_ndcg_hand_computed():
    dcg = 1 / 3 + (2 / 3) / math.log2(3) + 0 / 2 + 1 / math.log2(5)
    ideal = 1 + (2 / 3) / math.log2(3) + (1 / 3) / 2 + 0
    value = c_ndcg_at_k(COVERS, 3, k=4)
    assert value.value == pytest.approx(dcg / ideal)
    assert value.value == pytest.approx(0.7463238, abs=1e-6)
    assert value.name == "c_ndcg@4"


def test_ordering_changes_ndcg_but_not_precision():
    best_first = [[T], [F], [F]]
    best_last = [[F], [F], [T]]
    assert c_precision_at_k(best_first, 1, 3).value == pytest.approx(1 / 3)
    assert c_precision_at_k(best_last, 1, 3).value == pytest.approx(1 / 3)
    assert c_ndcg_at_k(best_first, 1, 3).value == pytest.approx(1.0)
    assert c_ndcg_at_k(best_last, 1, 3).value == pytest.approx(0.5)  # (1/log2 4) / 1


def test_k_larger_than_number_of_chunks():
    covers = [[T, T], [T, F]]  # r = 1, 0.5
    assert c_precision_at_k(covers, 2, k=4).value == pytest.approx(0.375)  # 1.5 / 4
    assert c_ndcg_at_k(covers, 2, k=4).value == pytest.approx(1.0)


def test_no_subqueries_is_na_everywhere():
    covers = [[], []]
    assert c_precision_at_k(covers, 0, 2).value is None
    assert c_ndcg_at_k(covers, 0, 2).na_reason == "the question has no sub-queries"
    assert all(v.value is None for v in soft_relevance(covers, 0))
    assert completeness([[], []], []).value is None
    assert conciseness([[], []], []).value is None


def test_no_chunks_is_na_for_retrieval_metrics():
    assert c_precision_at_k([], 2, 5).na_reason == "no chunks were retrieved"
    assert c_ndcg_at_k([], 2, 5).value is None


def test_all_zero_relevance():
    covers = [[F, F], [F, F]]
    assert c_precision_at_k(covers, 2).value == 0.0
    ndcg = c_ndcg_at_k(covers, 2)
    assert ndcg.value is None and "ideal DCG is 0" in ndcg.na_reason and ndcg.n == 2


def test_undecided_chunks_leave_precision_and_ndcg():
    covers = [[T, F], [U, U], [F, F]]  # r = 0.5, n/a, 0
    prec = c_precision_at_k(covers, 2, 3)
    assert prec.value == pytest.approx(0.25)  # 0.5 / (3 - 1)
    assert (prec.n, prec.n_unscored) == (2, 2)
    # The undecided chunk is removed from the ranking: the covering chunk moves up to rank 2.
    moved = c_ndcg_at_k([[F, F], [U, U], [T, T]], 2, 3)
    assert moved.value == pytest.approx(1 / math.log2(3))
    all_undecided = c_precision_at_k([[U, U]], 2)
    assert all_undecided.value is None and all_undecided.n_unscored == 2


def test_bad_shapes_and_k():
    with pytest.raises(ValueError):
        c_precision_at_k(COVERS, 3, k=0)
    with pytest.raises(ValueError):
        soft_relevance([[T, F]], 3)


# --------------------------------------------------------------------------- generation

# Three sub-queries, three claims: a1, a2 serve q1; a3 serves nothing.
SERVES = [[T, F, F], [T, F, F], [F, F, F]]


def test_completeness_counts_subqueries_answered_by_claims():
    # q1: served and judged sufficient; q2: no claim serves it (answered flag is irrelevant);
    # q3: no serving claim although flagged answered -> not covered.
    answered = [T, U, T]
    assert covered_subqueries(SERVES, answered) == (True, False, False)
    value = completeness(SERVES, answered)
    assert value.value == pytest.approx(1 / 3) and value.n == 3 and value.n_unscored == 0


def test_completeness_insufficient_claims_are_not_coverage():
    assert completeness(SERVES, [F, F, F]).value == 0.0


def test_conciseness_counts_claims_serving_a_covered_subquery():
    assert conciseness(SERVES, [T, U, T]).value == pytest.approx(2 / 3)
    # q1 served but not sufficient: no claim serves a covered sub-query.
    assert conciseness(SERVES, [F, F, F]).value == 0.0


def test_generation_metrics_with_undecided_verdicts():
    serves = [[T, U], [F, F]]
    answered = [T, U]
    assert covered_subqueries(serves, answered) == (True, None)
    comp = completeness(serves, answered)
    assert comp.value == 1.0 and comp.n == 1 and comp.n_unscored == 1
    conc = conciseness(serves, answered)
    assert conc.value == pytest.approx(0.5) and conc.n == 2
    only_undecided = conciseness([[U, F]], [T, T])
    assert only_undecided.value is None and only_undecided.n_unscored == 1


def test_no_claims():
    assert completeness([], [T, T]).value == 0.0
    assert conciseness([], [T, T]).na_reason == "the answer has no claims"
    assert verifiableness([], 3).value is None


def test_verifiableness():
    supports = [[T, F], [F, F], [F, U], [U, T]]  # supported, not, undecided, supported
    value = verifiableness(supports, 2)
    assert value.value == pytest.approx(2 / 3) and value.n == 3 and value.n_unscored == 1
    assert verifiableness([[], []], 0).value == 0.0  # closed book: nothing retrieved verifies a claim


def test_qcare_metrics_bundle():
    values = qcare_metrics(
        COVERS,
        [[T, F, F], [F, F, F], [F, F, F], [F, F, F]],
        [T, F, F],
        [[T, F, F, F], [F, F, F, F], [F, F, F, F], [F, F, F, T]],
        k=4,
    )
    assert [v.name for v in values] == [
        "c_prec@4",
        "c_ndcg@4",
        "completeness",
        "conciseness",
        "verifiableness",
    ]
    assert [v.value for v in values] == pytest.approx([0.5, 0.7463238, 1 / 3, 0.25, 0.5], abs=1e-6)


# --------------------------------------------------------------------------- graph


def test_alignment_graph_and_json():
    subs = [SubQuery(id="q1", text="who", index=0), SubQuery(id="q2", text="when", index=1)]
    chunks = [Chunk(id="c1", text="A", title="T1"), Chunk(id="c2", text="B")]
    claims = [Claim(id="a1", text="x", index=0)]
    graph = alignment_graph(
        subs,
        chunks,
        claims,
        covers=[[T, F], [U, T]],
        serves=[[T, F]],
        supports=[[F, T]],
    )
    assert graph.number_of_nodes() == 5
    assert set(graph.edges) == {
        ("chunk:c1", "subquery:q1"),
        ("chunk:c2", "subquery:q1"),
        ("chunk:c2", "subquery:q2"),
        ("claim:a1", "subquery:q1"),
        ("chunk:c2", "claim:a1"),
    }
    assert graph.edges["chunk:c2", "subquery:q1"]["decided"] is False
    assert graph.edges["chunk:c2", "claim:a1"]["relation"] == "supports"
    assert graph.nodes["chunk:c2"]["position"] == 2
    data = alignment_graph_json(graph)
    restored = nx.node_link_graph(json.loads(json.dumps(data)), edges="edges")
    assert set(restored.edges) == set(graph.edges) and restored.is_directed()


def test_alignment_graph_rejects_mismatched_matrices():
    with pytest.raises(ValueError):
        alignment_graph(
            [SubQuery(id="q", text="q", index=0)],
            [Chunk(id="c", text="c")],
            [],
            covers=[],
            serves=[],
            supports=[],
        )
