"""Bad dimension-score replies through LLMJudge with a scripted chat model: a score outside 0-10, a
non-integer or text instead of a number is `unscored` with its reason (after the one repair attempt for
replies that do not fit the schema), never a score."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fakes.scripted_model import ScriptedChatModel

from ragcourt.judging import LLMJudge
from ragcourt.llm.client import LLMClient
from ragcourt.llm.spec import StructuredMethod
from ragcourt.schema import CLOSED_BOOK, Check, CheckKind, UnscoredReason, VerdictStatus

MakeModel = Callable[..., ScriptedChatModel]
CHECK = Check(kind=CheckKind.DIMENSION_SCORE, sample_id="s1", condition=CLOSED_BOOK, subject_id="answer",
              subject_text="Paris.", target_id="rubric:relevance", target_text="0-10 rubric", question="Capital?",
              dimension="relevance", reference="Paris is the capital of France.")


async def verdict_for(scripted_model: MakeModel, *replies: object):
    model = scripted_model(script=list(replies))
    judge = LLMJudge(LLMClient(model, model_id="scripted:judge", method=StructuredMethod.FUNCTION_CALLING), "j")
    (verdict,) = await judge.judge(CheckKind.DIMENSION_SCORE, [CHECK])
    return verdict, model.calls


@pytest.mark.parametrize("score", [11, -1, 100])
async def test_a_score_outside_0_to_10_is_unscored_out_of_range(scripted_model: MakeModel, score: int) -> None:
    verdict, calls = await verdict_for(scripted_model, {"reasoning": "great", "score": score})
    assert (verdict.status, verdict.unscored_reason, verdict.score) == (
        VerdictStatus.UNSCORED, UnscoredReason.OUT_OF_RANGE, None)
    assert verdict.detail == f"score {score} is outside 0-10"
    assert calls == 1  # a valid integer out of range is not a schema error: no repair call
    assert verdict.raw_output is not None and str(score) in verdict.raw_output


@pytest.mark.parametrize("bad", [
    {"reasoning": "fine", "score": 7.5},  # not an integer
    {"reasoning": "fine", "score": "seven"},  # text instead of a number
    "I would give this answer a seven out of ten.",  # no JSON at all
])
async def test_a_non_integer_or_text_is_unscored_after_one_repair(scripted_model: MakeModel, bad: object) -> None:
    verdict, calls = await verdict_for(scripted_model, bad, bad)
    assert (verdict.status, verdict.unscored_reason, verdict.score) == (
        VerdictStatus.UNSCORED, UnscoredReason.PARSE_FAILURE, None)
    assert verdict.detail  # the validation error, in words
    assert calls == 2


async def test_a_repaired_reply_and_the_bounds_0_and_10_are_scored(scripted_model: MakeModel) -> None:
    verdict, calls = await verdict_for(scripted_model, {"reasoning": "x", "score": 7.5}, {"reasoning": "ok", "score": 7})
    assert (verdict.status, verdict.score, verdict.rationale, calls) == (VerdictStatus.OK, 7.0, "ok", 2)
    for edge in (0, 10):
        verdict, _ = await verdict_for(scripted_model, {"reasoning": "edge", "score": edge})
        assert (verdict.status, verdict.score) == (VerdictStatus.OK, float(edge))
