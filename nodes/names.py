"""The node names of the per-sample graph and of the match graph, declared once: graphs/ wires nodes under
these names and the nodes' routes return them. They are part of stored checkpoints (channel names such as
`branch:to:judge`), so a paused inline review resumes only while they stay the same."""

from __future__ import annotations

from typing import Final

# the per-sample graph (graphs/sample.py)
RETRIEVE: Final = "retrieve_perturb"
ANSWER: Final = "answer"
SPLIT_INPUTS: Final = "decompose_inputs"
SPLIT_ANSWERS: Final = "decompose_answers"
PLAN_CHECKS: Final = "plan_checks"
JUDGE: Final = "judge"
RECONCILE: Final = "reconcile"
HUMAN_REVIEW: Final = "human_review"
SCORE: Final = "score"

# one DICE match (graphs/tournament.py)
JUDGE_PAIRS: Final = "judge_pairs"
SCORE_MATCH: Final = "score_match"
