"""LLMJudge's CuBE dimension scores: seed 000's score-only protocol beside the reasoned one, and seed 000's
single-model jury (5.8: one model scores several times, the scores are averaged)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from fakes.scripted_model import ScriptedChatModel

from ragcourt.judging import LLMJudge
from ragcourt.llm.client import LLMClient
from ragcourt.prompts.library import PromptId, load_prompt
from ragcourt.schema import NORMAL, Check, CheckKind, UnscoredReason, VerdictStatus
from ragcourt.schema.config import DimensionProtocol
from ragcourt.stores.records import RecordStore

MakeModel = Callable[..., ScriptedChatModel]
CHECK = Check(kind=CheckKind.DIMENSION_SCORE, sample_id="s1", condition=NORMAL, subject_id="answer",
              subject_text="Paris.", target_id="rubric", target_text="Score relevance.", question="Capital of France?",
              dimension="relevance", reference="Paris is the capital of France.")


def judge(model: ScriptedChatModel, protocol: DimensionProtocol = DimensionProtocol.REASONED, repeats: int = 1,
          cache: RecordStore | None = None) -> LLMJudge:
    client = LLMClient(model, model_id="scripted:judge", cache=cache)
    sampling = LLMClient(model, model_id="scripted:judge", cache=cache, params={"temperature": 0.7})
    return LLMJudge(client, judge_id="mini", dimension_protocol=protocol, repeats=repeats, repeat_client=sampling)


async def test_score_only_asks_for_the_score_alone(scripted_model: MakeModel) -> None:
    model = scripted_model(script=[{"score": 8}])
    (verdict,) = await judge(model, DimensionProtocol.SCORE_ONLY).judge(CheckKind.DIMENSION_SCORE, [CHECK])
    assert verdict.status is VerdictStatus.OK and verdict.score == 8.0 and verdict.rationale == ""
    assert (verdict.prompt_id, verdict.prompt_hash) == ("dimension_score_only",
                                                        load_prompt(PromptId.DIMENSION_SCORE_ONLY).hash)
    assert model.requests[0].tool_name == "ScoreOnly"
    assert "Only output the final score; do not include any additional content" in str(model.requests[0].messages[-1]
                                                                                         .content)
    # the reply is the score alone: `{"score": 8}` is 12 characters, 3 tokens by the fake's count (chars // 4)
    assert verdict.usage.completion_tokens == 3


async def test_score_only_out_of_range_is_unscored(scripted_model: MakeModel) -> None:
    model = scripted_model(script=[{"score": 12}])
    (verdict,) = await judge(model, DimensionProtocol.SCORE_ONLY).judge(CheckKind.DIMENSION_SCORE, [CHECK])
    assert verdict.status is VerdictStatus.UNSCORED and verdict.unscored_reason is UnscoredReason.OUT_OF_RANGE
    assert verdict.detail == "score 12 is outside 0-10" and verdict.judge_id == "mini"


async def test_repeats_average_the_scored_repetitions(scripted_model: MakeModel, tmp_path: Path) -> None:
    """Three repetitions 7, 8, 9 -> 8; each its own call (the system line names the repetition), so a cache holds
    all three and the same judge again makes no call."""
    replies = [{"reasoning": "close", "score": 7}, {"reasoning": "good", "score": 8}, {"reasoning": "best", "score": 9}]
    model = scripted_model(script=list(replies))
    with RecordStore(tmp_path / "store.sqlite") as store:
        (verdict,) = await judge(model, repeats=3, cache=store).judge(CheckKind.DIMENSION_SCORE, [CHECK])
        assert verdict.status is VerdictStatus.OK and verdict.score == 8.0
        assert verdict.rationale.splitlines() == ["mean of 3 scored repetitions of 3: 7, 8, 9",
                                                  "repetition 1 (7): close", "repetition 2 (8): good",
                                                  "repetition 3 (9): best"]
        assert [str(r.messages[0].content).rsplit(".", 2)[-2] for r in model.requests] == [
            " Scoring repetition 1", " Scoring repetition 2", " Scoring repetition 3"]
        # the tokens of all three calls (the fake counts characters // 4): replies of 34, 33, 33 characters
        assert verdict.usage.completion_tokens == 8 + 8 + 8
        assert verdict.usage.prompt_tokens == sum(sum(len(str(m.content)) for m in r.messages) // 4
                                                  for r in model.requests)
        again = scripted_model()  # no script, no builder: a call would fail
        (cached,) = await judge(again, repeats=3, cache=store).judge(CheckKind.DIMENSION_SCORE, [CHECK])
        assert again.calls == 0 and cached.score == 8.0


async def test_an_unscored_repetition_is_left_out_and_said(scripted_model: MakeModel) -> None:
    model = scripted_model(script=[{"score": 6}, {"score": 11}, {"score": 9}])
    (verdict,) = await judge(model, DimensionProtocol.SCORE_ONLY, repeats=3).judge(CheckKind.DIMENSION_SCORE, [CHECK])
    assert verdict.score == pytest.approx(7.5)
    assert verdict.rationale.splitlines() == [
        "mean of 2 scored repetitions of 3: 6, 9",
        "repetition 2 unscored (out_of_range: score 11 is outside 0-10)"]
    none = scripted_model(script=[{"score": 11}, {"score": -1}])
    (unscored,) = await judge(none, DimensionProtocol.SCORE_ONLY, repeats=2).judge(CheckKind.DIMENSION_SCORE, [CHECK])
    assert unscored.status is VerdictStatus.UNSCORED and unscored.score is None
    assert unscored.unscored_reason is UnscoredReason.OUT_OF_RANGE
    assert unscored.detail == ("all 2 repetitions unscored: repetition 1 unscored (out_of_range: score 11 is outside "
                               "0-10); repetition 2 unscored (out_of_range: score -1 is outside 0-10)")
