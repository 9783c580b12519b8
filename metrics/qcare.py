"""Q-CARE metrics (seed 002, section 3.4): coverage-aware retrieval and multi-aspect generation scores.

Inputs are the three alignment matrices of seed 002 section 3.3, as three-valued decisions
(True / False / None, None = the check is unscored or undecided):

- `covers[i][j]`: retrieved chunk i (rank order, row 0 = rank 1) contains information for sub-query j
  (the edge set E(Q, C));
- `serves[a][j]`: answer claim a is relevant to sub-query j (E(Q, A));
- `answered[j]`: the claims relevant to sub-query j, R(q_j), are sufficient to answer it (the
  coverage check of section 3.4.2, prompt in the seed's Table 26), judged on R(q_j) alone, never on claims
  the serve check rejected; None when it is undecided or was not asked (no claim serves q_j);
- `supports[a][i]`: claim a is supported by retrieved chunk i (E(A, C)).

How undecided inputs are handled (the same rule everywhere): a None never counts as True or False.
Per unit (chunk, sub-query or claim) the decisions are combined with three-valued (Kleene) logic;
a unit whose outcome stays undecided is left out of both numerator and denominator and counted in
`n_unscored`. Soft relevance is the exception, because it is a count: see `soft_relevance`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import networkx as nx

from ragcourt.metrics.values import (
    Decision,
    MetricName,
    any_true,
    both_true,
    count_decisions,
    not_available,
    share,
)
from ragcourt.schema import Chunk, Claim, MetricValue, SubQuery

Matrix = Sequence[Sequence[Decision]]

NO_SUBQUERIES = "the question has no sub-queries"
NO_CHUNKS = "no chunks were retrieved"
NO_CLAIMS = "the answer has no claims"


def _check_rows(matrix: Matrix, width: int, what: str) -> None:
    for index, row in enumerate(matrix):
        if len(row) != width:
            raise ValueError(f"{what} row {index} has {len(row)} entries, expected {width}")


# --------------------------------------------------------------------------- retrieval


def soft_relevance(covers: Matrix, n_subqueries: int) -> tuple[MetricValue, ...]:
    """Soft relevance r_i of every retrieved chunk, in rank order (seed 002 Eq. 6).

    r_i = |{q : (q, c_i) in E(Q, C)}| / |Q|. Undecided cells are left out of the count and of the
    denominator, so r_i = covered / decided sub-queries of that chunk (= the seed's formula when
    every cell is decided); `n` = decided cells, `n_unscored` = undecided cells of the row.

    Edge cases: no sub-queries -> every r_i n/a; a chunk whose every cell is undecided -> n/a.
    """
    _check_rows(covers, n_subqueries, "covers")
    name = MetricName.SOFT_RELEVANCE.value
    if n_subqueries == 0:
        return tuple(not_available(name, NO_SUBQUERIES) for _ in covers)
    values = []
    for row in covers:
        yes, no, missing = count_decisions(row)
        values.append(
            share(
                name,
                yes,
                yes + no,
                n_unscored=missing,
                empty_reason="every coverage check of this chunk is unscored",
            )
        )
    return tuple(values)


def _top_k(
    covers: Matrix, n_subqueries: int, k: int | None, name: str
) -> tuple[int, list[MetricValue]] | MetricValue:
    """The cut-off and the soft relevances of the first k ranks, or the n/a value that ends the metric."""
    if k is not None and k <= 0:
        raise ValueError(f"k must be positive, got {k}")
    if n_subqueries == 0:
        return not_available(name, NO_SUBQUERIES)
    if not covers:
        return not_available(name, NO_CHUNKS)
    cut = len(covers) if k is None else k
    return cut, list(soft_relevance(covers[:cut], n_subqueries))


def c_precision_at_k(covers: Matrix, n_subqueries: int, k: int | None = None) -> MetricValue:
    """C-Prec@k = sum_{i=1..k} r_i / k (seed 002 Eq. 7). k None = the number of retrieved chunks.

    - k larger than the number of retrieved chunks: the missing ranks contribute r = 0 and the
      denominator stays k, as the seed's sum over i = 1..k (and trec_eval's P@k) has it.
    - A chunk whose r_i is n/a (all its coverage checks unscored) is dropped from both the sum and
      the denominator: value = sum of decided r_i / (k - number of such chunks).
    - n = chunks counted; n_unscored = undecided coverage cells in the first k rows.
    - n/a: no sub-queries; no retrieved chunks; every chunk in the first k undecided.
    """
    name = MetricName.C_PRECISION.at(k) if k is not None else MetricName.C_PRECISION.value
    top = _top_k(covers, n_subqueries, k, name)
    if isinstance(top, MetricValue):
        return top
    cut, relevances = top
    decided = [r.value for r in relevances if r.value is not None]
    undecided_cells = sum(r.n_unscored for r in relevances)
    denominator = cut - (len(relevances) - len(decided))
    if not decided:
        return not_available(
            name, "every chunk in the top k has only unscored coverage checks", n_unscored=undecided_cells
        )
    return MetricValue(
        name=name, value=sum(decided) / denominator, n=len(decided), n_unscored=undecided_cells
    )


def _dcg(gains: Sequence[float]) -> float:
    # Linear gain, discount log2(i + 1) for 1-based rank i (Järvelin and Kekäläinen 2002).
    return sum(gain / math.log2(rank + 1) for rank, gain in enumerate(gains, start=1))


def c_ndcg_at_k(covers: Matrix, n_subqueries: int, k: int | None = None) -> MetricValue:
    """C-nDCG@k = DCG(r_1..r_k) / DCG(r_1..r_k sorted descending), DCG = sum_i r_i / log2(i + 1).

    The seed's text (as stored) names C-nDCG@k but its equation did not survive extraction; this is
    the DESIGN.md form: canonical nDCG with the soft relevances as gains and the ideal ranking taken
    over the same retrieved top-k chunks (reference-free: there is no labelled pool to draw from).

    - k larger than the number of retrieved chunks: only the retrieved chunks count (missing ranks
      would add 0 to both DCGs).
    - A chunk whose r_i is n/a is removed from the ranking before discounting (later chunks move up
      one rank); n = chunks counted, n_unscored = undecided coverage cells in the first k rows.
    - n/a: no sub-queries; no retrieved chunks; every chunk undecided; all counted r_i = 0 (the
      ideal DCG is 0, so the ratio is undefined rather than 0 or 1).
    """
    name = MetricName.C_NDCG.at(k) if k is not None else MetricName.C_NDCG.value
    top = _top_k(covers, n_subqueries, k, name)
    if isinstance(top, MetricValue):
        return top
    _, relevances = top
    gains = [r.value for r in relevances if r.value is not None]
    undecided_cells = sum(r.n_unscored for r in relevances)
    if not gains:
        return not_available(
            name, "every chunk in the top k has only unscored coverage checks", n_unscored=undecided_cells
        )
    ideal = _dcg(sorted(gains, reverse=True))
    if ideal == 0:
        return not_available(
            name,
            "no retrieved chunk covers any sub-query (ideal DCG is 0)",
            n=len(gains),
            n_unscored=undecided_cells,
        )
    return MetricValue(name=name, value=_dcg(gains) / ideal, n=len(gains), n_unscored=undecided_cells)


# --------------------------------------------------------------------------- generation


def covered_subqueries(serves: Matrix, answered: Sequence[Decision]) -> tuple[Decision, ...]:
    """Membership of every sub-query in Q_cov (seed 002 section 3.4.2).

    q is in Q_cov when its relevant claims R(q) = {a : serves[a][q]} are non-empty and judged
    sufficient to answer q: covered(q) = (any_a serves[a][q]) AND answered[q], in three-valued
    logic. So a sub-query no claim serves is not covered whatever `answered` says (the check is not
    even asked then), and `answered[q] = False` settles it as not covered.
    """
    _check_rows(serves, len(answered), "serves")
    return tuple(both_true(any_true(row[j] for row in serves), answered[j]) for j in range(len(answered)))


def completeness(serves: Matrix, answered: Sequence[Decision]) -> MetricValue:
    """Completeness = |Q_cov| / |Q| (seed 002 Eq. 8).

    Q_cov is decided by the *answer claims* (`covered_subqueries`), as the seed says: sub-queries the
    answer fully addresses. DESIGN.md writes only "|Q_cov|/|Q|"; it must not be read as coverage by
    retrieved chunks (that is what C-Prec/C-nDCG measure).

    - Undecided sub-queries leave numerator and denominator; n = decided, n_unscored = undecided.
    - No claims: every sub-query is not covered -> 0.0 (an answer that says nothing addresses nothing).
    - n/a: no sub-queries; every sub-query undecided.
    """
    name = MetricName.COMPLETENESS.value
    if not answered:
        return not_available(name, NO_SUBQUERIES)
    yes, no, missing = count_decisions(covered_subqueries(serves, answered))
    return share(name, yes, yes + no, n_unscored=missing, empty_reason="every sub-query is undecided")


def conciseness(serves: Matrix, answered: Sequence[Decision]) -> MetricValue:
    """Conciseness = |{a : a serves some q in Q_cov}| / |A| (seed 002 section 3.1 / 3.4.2).

    The seed defines it as "the proportion of answer claims that are relevant to the covered
    sub-queries" (its equation is lost in the stored text); a claim counts when it serves at least
    one sub-query in Q_cov: any_q (serves[a][q] AND covered(q)), three-valued.

    - Undecided claims leave numerator and denominator; n = decided, n_unscored = undecided.
    - n/a: no sub-queries (nothing to be relevant to: a failed decomposition, not a verbose answer);
      no claims; every claim undecided.
    """
    name = MetricName.CONCISENESS.value
    if not answered:
        return not_available(name, NO_SUBQUERIES)
    if not serves:
        return not_available(name, NO_CLAIMS)
    covered = covered_subqueries(serves, answered)
    relevant = [any_true(both_true(row[j], covered[j]) for j in range(len(covered))) for row in serves]
    yes, no, missing = count_decisions(relevant)
    return share(name, yes, yes + no, n_unscored=missing, empty_reason="every claim is undecided")


def verifiableness(supports: Matrix, n_chunks: int) -> MetricValue:
    """Verifiableness = |{a : (a, c) in E(A, C) for some c}| / |A| (seed 002 Eq. 9).

    A claim counts when at least one retrieved chunk supports it (three-valued OR over its row).

    - No retrieved chunks (e.g. closed book): no claim can be verified by retrieved evidence -> 0.0.
    - Undecided claims leave numerator and denominator; n = decided, n_unscored = undecided.
    - n/a: no claims; every claim undecided.
    """
    name = MetricName.VERIFIABLENESS.value
    _check_rows(supports, n_chunks, "supports")
    if not supports:
        return not_available(name, NO_CLAIMS)
    yes, no, missing = count_decisions(any_true(row) for row in supports)
    return share(name, yes, yes + no, n_unscored=missing, empty_reason="every claim is undecided")


def qcare_metrics(
    covers: Matrix,
    serves: Matrix,
    answered: Sequence[Decision],
    supports: Matrix,
    k: int | None = None,
) -> tuple[MetricValue, ...]:
    """The five Q-CARE metrics of one sample: C-Prec@k, C-nDCG@k, Completeness, Conciseness, Verifiableness."""
    n_subqueries = len(answered)
    return (
        c_precision_at_k(covers, n_subqueries, k),
        c_ndcg_at_k(covers, n_subqueries, k),
        completeness(serves, answered),
        conciseness(serves, answered),
        verifiableness(supports, len(covers)),
    )


# --------------------------------------------------------------------------- alignment graph


def _node(kind: str, item_id: str) -> str:
    return f"{kind}:{item_id}"


def alignment_graph(
    subqueries: Sequence[SubQuery],
    chunks: Sequence[Chunk],
    claims: Sequence[Claim],
    covers: Matrix,
    serves: Matrix,
    supports: Matrix,
) -> nx.DiGraph:
    """The alignment of seed 002 section 3.3 as a directed graph.

    Nodes `subquery:<id>`, `chunk:<id>`, `claim:<id>` with attributes kind, item id, text and
    position (sub-query/claim index, chunk rank 1-based). Edges point as the seed's arrows do:
    chunk -> sub-query (covers), claim -> sub-query (serves), chunk -> claim (supports). An edge
    exists for every True or None cell; attribute `decided` is False for None (undecided) cells so a
    reviewer sees them, `relation` names the alignment. False cells have no edge.
    """
    _check_rows(covers, len(subqueries), "covers")
    _check_rows(serves, len(subqueries), "serves")
    _check_rows(supports, len(chunks), "supports")
    if len(covers) != len(chunks) or len(serves) != len(claims) or len(supports) != len(claims):
        raise ValueError("matrix rows must match chunks (covers) and claims (serves, supports)")
    graph = nx.DiGraph()
    for sub in subqueries:
        graph.add_node(
            _node("subquery", sub.id), kind="subquery", item_id=sub.id, text=sub.text, position=sub.index
        )
    for rank, chunk in enumerate(chunks, start=1):
        graph.add_node(
            _node("chunk", chunk.id),
            kind="chunk",
            item_id=chunk.id,
            text=chunk.text,
            title=chunk.title,
            position=rank,
        )
    for claim in claims:
        graph.add_node(
            _node("claim", claim.id), kind="claim", item_id=claim.id, text=claim.text, position=claim.index
        )

    def link(source: str, target: str, decision: Decision, relation: str) -> None:
        if decision is not False:
            graph.add_edge(source, target, relation=relation, decided=decision is not None)

    for chunk, row in zip(chunks, covers, strict=True):
        for sub, decision in zip(subqueries, row, strict=True):
            link(_node("chunk", chunk.id), _node("subquery", sub.id), decision, "covers")
    for claim, row in zip(claims, serves, strict=True):
        for sub, decision in zip(subqueries, row, strict=True):
            link(_node("claim", claim.id), _node("subquery", sub.id), decision, "serves")
    for claim, row in zip(claims, supports, strict=True):
        for chunk, decision in zip(chunks, row, strict=True):
            link(_node("chunk", chunk.id), _node("claim", claim.id), decision, "supports")
    return graph


def alignment_graph_json(graph: nx.DiGraph) -> dict[str, Any]:
    """Node-link JSON of an alignment graph (keys `nodes` and `edges`), fit for SampleDiagnostics."""
    return nx.node_link_data(graph, edges="edges")
