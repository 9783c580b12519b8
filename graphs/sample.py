"""The per-sample state machine. Wiring only: which nodes, which edges, which routes."""

from __future__ import annotations

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from ragcourt.nodes.answerer import answer
from ragcourt.nodes.check_planner import plan_checks
from ragcourt.nodes.claims import decompose_answers
from ragcourt.nodes.decomposer import SPLIT_ANSWERS, SPLIT_INPUTS, decompose_inputs, route_splits
from ragcourt.nodes.human_review import human_review
from ragcourt.nodes.judges import AFTER_JUDGES, JUDGE_NODE, fan_out, judge
from ragcourt.nodes.reconciliation import HUMAN_REVIEW, RETRIEVE, SCORE, reconcile, route_after_reconcile
from ragcourt.nodes.retriever_perturber import retrieve_perturb
from ragcourt.nodes.scorer import score
from ragcourt.nodes.state import EvalContext, SampleState


def build_sample_graph(checkpointer: BaseCheckpointSaver | None = None) -> CompiledStateGraph:
    graph = StateGraph(SampleState, context_schema=EvalContext)
    graph.add_node(SPLIT_INPUTS, decompose_inputs)
    graph.add_node(RETRIEVE, retrieve_perturb)
    graph.add_node("answer", answer)
    graph.add_node(SPLIT_ANSWERS, decompose_answers)
    graph.add_node("plan_checks", plan_checks)
    graph.add_node(JUDGE_NODE, judge)
    graph.add_node(AFTER_JUDGES, reconcile)
    graph.add_node(HUMAN_REVIEW, human_review)
    graph.add_node(SCORE, score)

    graph.add_edge(START, RETRIEVE)
    graph.add_edge(RETRIEVE, "answer")
    graph.add_conditional_edges("answer", route_splits, [SPLIT_INPUTS, SPLIT_ANSWERS])
    graph.add_edge(SPLIT_INPUTS, "plan_checks")
    graph.add_edge(SPLIT_ANSWERS, "plan_checks")
    graph.add_conditional_edges("plan_checks", fan_out, [JUDGE_NODE, AFTER_JUDGES])
    graph.add_edge(JUDGE_NODE, AFTER_JUDGES)
    graph.add_conditional_edges(AFTER_JUDGES, route_after_reconcile, [RETRIEVE, HUMAN_REVIEW, SCORE])
    graph.add_edge(HUMAN_REVIEW, SCORE)
    graph.add_edge(SCORE, END)
    return graph.compile(checkpointer=checkpointer)
