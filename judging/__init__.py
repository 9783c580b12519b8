"""Judging: the judges that decide atomic checks, and the decomposers that make the units they judge.

- `judge`: what a judge is to the pipeline (`Judge`, `SampleJudge`).
- `llm_judge`: the LLM judge (`LLMJudge`) and the output schemas it asks for.
- `baseline`: the no-LLM judges (`BaselineJudge`, `BaselineRule`).
- `features`, `learned`: the stacked offline judge's inputs and the judge applying a stored model
  (`LearnedJudge`; fit by validity.stacking).
- `combined_checks`: all alignment checks of a sample in one prompt (batching=per_sample).
- `decision_tokens`: A/B/Tie probabilities from the logprobs of a pairwise decision token.
- `decomposers`: sub-queries, elements and claims (`LLMDecomposer`, `SentenceDecomposer`).
- `reconciliation`: the pure policy that turns a jury's verdicts on one check into one decision.

Modules of this package import each other by module path, never through this facade.
"""

from ragcourt.judging.baseline import BaselineJudge, BaselineRule
from ragcourt.judging.combined_checks import (
    COMBINABLE,
    CombinedJudgements,
    context_segments,
    read_labels,
    render_combined,
)
from ragcourt.judging.decision_tokens import (
    decision_label_of_token,
    token_decision_probabilities,
    verdict_probabilities,
)
from ragcourt.judging.decomposers import (
    ClaimList,
    Decomposer,
    ElementList,
    LLMDecomposer,
    QueryDecomposition,
    SentenceDecomposer,
    Split,
    SplitsInFlight,
    frozen_split,
    split_for_sample,
)
from ragcourt.judging.judge import Judge, SampleJudge
from ragcourt.judging.llm_judge import (
    BinaryJudgements,
    DimensionScore,
    LinkJudgements,
    LLMJudge,
    PairwiseDecision,
    render_batch,
)
from ragcourt.judging.reconciliation import reconcile_check, reconcile_weighted

__all__ = [
    "BaselineJudge",
    "BaselineRule",
    "BinaryJudgements",
    "COMBINABLE",
    "ClaimList",
    "CombinedJudgements",
    "Decomposer",
    "DimensionScore",
    "ElementList",
    "Judge",
    "LLMDecomposer",
    "LLMJudge",
    "LinkJudgements",
    "PairwiseDecision",
    "QueryDecomposition",
    "SampleJudge",
    "SentenceDecomposer",
    "Split",
    "SplitsInFlight",
    "context_segments",
    "decision_label_of_token",
    "frozen_split",
    "read_labels",
    "reconcile_check",
    "reconcile_weighted",
    "render_batch",
    "render_combined",
    "split_for_sample",
    "token_decision_probabilities",
    "verdict_probabilities",
]
