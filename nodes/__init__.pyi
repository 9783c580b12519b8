"""The public names of ragcourt.nodes (see __init__.py)."""

from .answerer import (
    answer,
)
from .check_planner import (
    plan_checks,
)
from .claims import (
    decompose_answers,
)
from .decomposer import (
    decompose_inputs,
    route_splits,
)
from .human_review import (
    human_review,
)
from .judges import (
    fan_out,
    judge,
)
from .match_scorer import (
    score_match,
)
from .names import (
    ANSWER,
    HUMAN_REVIEW,
    JUDGE,
    JUDGE_PAIRS,
    PLAN_CHECKS,
    RECONCILE,
    RETRIEVE,
    SCORE,
    SCORE_MATCH,
    SPLIT_ANSWERS,
    SPLIT_INPUTS,
)
from .pairwise import (
    judge_pairs,
)
from .reconciliation import (
    reconcile,
    route_after_reconcile,
)
from .retriever_perturber import (
    retrieve_perturb,
)
from .scorer import (
    score,
)
from .state import (
    EvalContext,
    SampleState,
)
from .tournament_state import (
    AnswerSet,
    JudgeCallCount,
    MatchContext,
    MatchState,
    QuestionOutcome,
    ScoreScheme,
)

__all__ = [
    "ANSWER",
    "answer",
    "AnswerSet",
    "decompose_answers",
    "decompose_inputs",
    "EvalContext",
    "fan_out",
    "HUMAN_REVIEW",
    "human_review",
    "JUDGE",
    "judge",
    "JUDGE_PAIRS",
    "judge_pairs",
    "JudgeCallCount",
    "MatchContext",
    "MatchState",
    "PLAN_CHECKS",
    "plan_checks",
    "QuestionOutcome",
    "RECONCILE",
    "reconcile",
    "RETRIEVE",
    "retrieve_perturb",
    "route_after_reconcile",
    "route_splits",
    "SampleState",
    "SCORE",
    "score",
    "SCORE_MATCH",
    "score_match",
    "ScoreScheme",
    "SPLIT_ANSWERS",
    "SPLIT_INPUTS",
]
