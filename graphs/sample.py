"""The per-sample state machine. Wiring only: which nodes, which edges, which routes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from ragcourt.nodes.answerer import answer
from ragcourt.nodes.check_planner import plan_checks
from ragcourt.nodes.claims import decompose_answers
from ragcourt.nodes.decomposer import decompose_inputs, route_splits
from ragcourt.nodes.human_review import human_review
from ragcourt.nodes.judges import fan_out, judge
from ragcourt.nodes.names import (
    ANSWER,
    HUMAN_REVIEW,
    JUDGE,
    PLAN_CHECKS,
    RECONCILE,
    RETRIEVE,
    SCORE,
    SPLIT_ANSWERS,
    SPLIT_INPUTS,
)
from ragcourt.nodes.reconciliation import reconcile, route_after_reconcile
from ragcourt.nodes.retriever_perturber import retrieve_perturb
from ragcourt.nodes.scorer import score
from ragcourt.nodes.state import EvalContext, SampleState

NodeWrapper = Callable[[str, Any], Any]
"""Given a node's name and function, the function run in its place (observability.telemetry: a span around it)."""


def build_sample_graph(
    checkpointer: BaseCheckpointSaver | None = None, wrap_node: NodeWrapper | None = None,
) -> CompiledStateGraph[SampleState, EvalContext, SampleState, SampleState]:
    graph = StateGraph(SampleState, context_schema=EvalContext)
    wrap: NodeWrapper = wrap_node or (lambda _, node: node)
    graph.add_node(SPLIT_INPUTS, wrap(SPLIT_INPUTS, decompose_inputs))
    graph.add_node(RETRIEVE, wrap(RETRIEVE, retrieve_perturb))
    graph.add_node(ANSWER, wrap(ANSWER, answer))
    graph.add_node(SPLIT_ANSWERS, wrap(SPLIT_ANSWERS, decompose_answers))
    graph.add_node(PLAN_CHECKS, wrap(PLAN_CHECKS, plan_checks))
    # LangGraph's node protocols name the input parameter `state` (callable by keyword), though LangGraph
    # passes it positionally: judge's is `task`, the JudgeTask its Send carries, so no overload matches.
    graph.add_node(JUDGE, wrap(JUDGE, judge))
    graph.add_node(RECONCILE, wrap(RECONCILE, reconcile))
    graph.add_node(HUMAN_REVIEW, wrap(HUMAN_REVIEW, human_review))
    graph.add_node(SCORE, wrap(SCORE, score))

    # The routes are coroutines: LangGraph runs a plain function of an async graph in a thread, a hop per
    # route and sample for a few microseconds of work.
    graph.add_edge(START, RETRIEVE)
    graph.add_edge(RETRIEVE, ANSWER)
    graph.add_conditional_edges(ANSWER, route_splits, [SPLIT_INPUTS, SPLIT_ANSWERS])
    graph.add_edge(SPLIT_INPUTS, PLAN_CHECKS)
    graph.add_edge(SPLIT_ANSWERS, PLAN_CHECKS)
    graph.add_conditional_edges(PLAN_CHECKS, fan_out, [JUDGE, RECONCILE])
    graph.add_edge(JUDGE, RECONCILE)
    graph.add_conditional_edges(RECONCILE, route_after_reconcile, [RETRIEVE, PLAN_CHECKS, HUMAN_REVIEW, SCORE])
    graph.add_edge(HUMAN_REVIEW, SCORE)
    graph.add_edge(SCORE, END)
    return graph.compile(checkpointer=checkpointer)
