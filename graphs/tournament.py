"""One DICE match as a graph: judge the pairwise checks (both orders, or one drawn order), then score it.
Wiring only. The tournament around the matches (Swiss or round robin, Elo) is `ranking.rank_systems`."""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from ragcourt.nodes.match_scorer import score_match
from ragcourt.nodes.names import JUDGE_PAIRS, SCORE_MATCH
from ragcourt.nodes.pairwise import judge_pairs
from ragcourt.nodes.tournament_state import MatchContext, MatchState


def build_match_graph() -> CompiledStateGraph[MatchState, MatchContext, MatchState, MatchState]:
    graph = StateGraph(MatchState, context_schema=MatchContext)
    graph.add_node(JUDGE_PAIRS, judge_pairs)
    graph.add_node(SCORE_MATCH, score_match)
    graph.add_edge(START, JUDGE_PAIRS)
    graph.add_edge(JUDGE_PAIRS, SCORE_MATCH)
    graph.add_edge(SCORE_MATCH, END)
    return graph.compile()
