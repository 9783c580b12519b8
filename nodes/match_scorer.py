"""Node: one match's verdicts into per-question outcomes and the match result (seed 001, 3.2).

Per judge and question, the two orders are put into A's frame (B-first's A is the match's B). Agreeing
orders give the judge's label; disagreeing orders count as Tie and are flagged as position bias, and that
judge's probabilities are not used (they contradict themselves across orders), so it contributes a sure
Tie. A judge with an unscored order gives no decision for the question (never a Tie, 0 or 1). Under the
single order (seed 001's protocol) the one judged order, put into A's frame, is the judge's decision.

The jury's A/B/Tie probabilities: the mean of the judges' logprob probabilities (each averaged over both
orders) when every deciding judge has them; otherwise the jury's vote shares (the mean of one-hot votes: the
baselines give no pairwise probabilities). `DecisionProbabilities.source` says which. A's question score: hard
(the jury's label by the context's PairwiseJury rule and tie margin, metrics.dice.jury_label) or soft
(P_A + P_Tie/2, which no margin changes). Questions without any decision are
left out of the match result and counted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from langgraph.runtime import Runtime

from ragcourt.metrics.dice import (
    DecisionProbabilities,
    MatchResult,
    ProbabilitySource,
    hard_score_of,
    jury_label,
    soft_score,
    vote_probabilities,
)
from ragcourt.nodes.state import verdict_key
from ragcourt.nodes.tournament_state import (
    JudgeDecision,
    MatchContext,
    MatchState,
    PairChecks,
    QuestionOutcome,
    ScoreScheme,
)
from ragcourt.schema import Label, Verdict
from ragcourt.schema.config import PairwiseJury

_SWAP = {Label.A: Label.B, Label.B: Label.A, Label.TIE: Label.TIE}
_SURE_TIE = {Label.A: 0.0, Label.B: 0.0, Label.TIE: 1.0}


def swap_label(label: Label) -> Label:
    return _SWAP[label]


def _problem(order: str, verdict: Verdict | None) -> str | None:
    if verdict is None:
        return f"no verdict with {order} shown first"
    if not verdict.scored:
        return f"unscored with {order} shown first ({verdict.unscored_reason})"
    if verdict.label not in _SWAP:
        return f"label {verdict.label} with {order} shown first is not A, B or Tie"
    return None


def resolve_orders(judge_id: str, first: Verdict | None, second: Verdict | None) -> JudgeDecision:
    """A judge's decision on a pair from its verdicts with A shown first and with B shown first."""
    problems = [p for p in (_problem("A", first), _problem("B", second)) if p]
    if problems:
        return JudgeDecision(judge_id=judge_id, label=None, label_first=first.label if first else None,
                             label_second=swap_label(second.label) if second and second.label in _SWAP else None,
                             na_reason="; ".join(problems))
    assert first is not None and second is not None and first.label and second.label
    label_second = swap_label(second.label)
    with_logprobs = bool(first.probabilities and second.probabilities)
    if first.label != label_second:
        return JudgeDecision(judge_id=judge_id, label=Label.TIE, label_first=first.label, label_second=label_second,
                             position_bias=True, probabilities=dict(_SURE_TIE) if with_logprobs else None)
    probabilities = None
    if with_logprobs:
        assert first.probabilities is not None and second.probabilities is not None
        probabilities = {
            label: (first.probabilities.get(label, 0.0) + second.probabilities.get(swap_label(label), 0.0)) / 2
            for label in _SWAP
        }
    return JudgeDecision(judge_id=judge_id, label=first.label, label_first=first.label, label_second=label_second,
                         probabilities=probabilities)


def resolve_single(judge_id: str, verdict: Verdict | None, a_first: bool) -> JudgeDecision:
    """A judge's decision on a pair judged in one order: A shown first when `a_first`, else B shown first."""
    order = "A" if a_first else "B"
    problem = _problem(order, verdict)
    if problem:
        return JudgeDecision(judge_id=judge_id, label=None, label_first=None, label_second=None, na_reason=problem)
    assert verdict is not None and verdict.label is not None
    label = verdict.label if a_first else swap_label(verdict.label)
    probabilities = None
    if verdict.probabilities:
        probabilities = {x: verdict.probabilities.get(x if a_first else swap_label(x), 0.0) for x in _SWAP}
    return JudgeDecision(judge_id=judge_id, label=label, label_first=label if a_first else None,
                         label_second=None if a_first else label, probabilities=probabilities)


def _decision(judge_id: str, pair: PairChecks, verdicts: Mapping[str, Verdict]) -> JudgeDecision:
    first = verdicts.get(verdict_key(pair.a_first.id, judge_id)) if pair.a_first else None
    second = verdicts.get(verdict_key(pair.b_first.id, judge_id)) if pair.b_first else None
    if pair.a_first is None or pair.b_first is None:
        return resolve_single(judge_id, first or second, a_first=pair.a_first is not None)
    return resolve_orders(judge_id, first, second)


def jury_probabilities(decisions: Sequence[JudgeDecision]) -> DecisionProbabilities:
    deciding = [d for d in decisions if d.label is not None]
    if deciding and all(d.probabilities for d in deciding):
        mean = {label: math.fsum(d.probabilities[label] for d in deciding) / len(deciding)  # type: ignore[index]
                for label in _SWAP}
        total = math.fsum(mean.values())
        return DecisionProbabilities(p_a=mean[Label.A] / total, p_b=mean[Label.B] / total,
                                     p_tie=mean[Label.TIE] / total, source=ProbabilitySource.LOGPROBS,
                                     n_votes=len(deciding), n_unscored=len(decisions) - len(deciding))
    return vote_probabilities([d.label for d in decisions])


def question_outcome(
    question_id: str, pair: PairChecks, verdicts: Mapping[str, Verdict], judge_ids: Sequence[str],
    scheme: ScoreScheme, jury: PairwiseJury = PairwiseJury.MAJORITY_TIE, tie_margin: float = 0.0,
) -> QuestionOutcome:
    decisions = tuple(_decision(j, pair, verdicts) for j in judge_ids)
    probabilities = jury_probabilities(decisions)
    score = (hard_score_of(jury_label(probabilities, jury, tie_margin), probabilities) if scheme is ScoreScheme.HARD
             else soft_score(probabilities))
    return QuestionOutcome(question_id=question_id, check_ids=tuple(c.id for c in pair.judged()), decisions=decisions,
                           probabilities=probabilities, score_a=score.value, na_reason=score.na_reason)


async def score_match(state: MatchState, runtime: Runtime[MatchContext]) -> MatchState:
    ctx = runtime.context
    judge_ids = [*(j.judge_id for j in ctx.judges), *(m.judge_id for m in ctx.metric_judges)]
    verdicts = state.get("verdicts", {})
    outcomes = tuple(
        question_outcome(question_id, pair, verdicts, judge_ids, ctx.scheme, ctx.jury, ctx.tie_margin)
        for question_id, pair in state.get("checks", {}).items()
    )
    scored = [o.score_a for o in outcomes if o.score_a is not None]
    return {"outcomes": outcomes, "result": MatchResult.from_outcomes(scored)}
