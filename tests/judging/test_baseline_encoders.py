"""The semantic judge per encoder: its id names the encoder, so one encoder's verdicts never serve another's,
and on the shared HotpotQA questions e5 decides relevance where MiniLM misses it."""

from __future__ import annotations

import pytest

from ragcourt.data.loaders import BundledDataset, bundled
from ragcourt.data.validity_sets import load_hotpotqa_paragraphs
from ragcourt.judging import BaselineJudge, BaselineRule
from ragcourt.schema import CheckKind, Label
from ragcourt.schema.config import ConfigError, EvalConfig, JudgeSpec, parse_config
from ragcourt.stores.encoders import EncoderChoice
from ragcourt.validity.measure import HOTPOTQA_SUPPORTING, hotpotqa_checks


@pytest.mark.parametrize(("encoder", "judge_id"), [
    (None, "semantic+e5+minilm"), ("minilm", "semantic"), ("e5", "semantic+e5"),
    ("openai:my-model@http://127.0.0.1:8000/v1", "semantic+openai:my-model@http://127.0.0.1:8000/v1"),
])
def test_a_semantic_judge_id_names_its_encoder(encoder: str | None, judge_id: str) -> None:
    spec = JudgeSpec(model="semantic", **({} if encoder is None else {"encoder": encoder}))
    assert spec.judge_id == judge_id
    assert BaselineJudge(BaselineRule.SEMANTIC, encoder=EncoderChoice.parse(spec.encoder or "")).judge_id == judge_id


def test_the_config_encoder_goes_to_semantic_judges_that_name_none_and_only_they_take_one() -> None:
    config = parse_config({"encoder": "e5", "judges": [{"model": "lexical"}, {"model": "semantic"},
                                                        {"model": "semantic", "encoder": "minilm", "id": "mini"}]})
    assert [j.judge_id for j in config.judges] == ["lexical", "semantic+e5", "mini"]
    assert config.with_overrides(top_k=3).judges[1].encoder == "e5"
    with pytest.raises(ConfigError, match="only the semantic judge embeds with a chosen encoder"):
        parse_config({"judges": [{"model": "lexical", "encoder": "e5"}]})
    with pytest.raises(ConfigError, match="encoder"):
        parse_config({"judges": [{"model": "semantic", "encoder": "word2vec"}]})


def test_a_judge_option_names_the_encoder_as_the_id_reads() -> None:
    assert JudgeSpec(model="semantic+e5").encoder == "e5" and JudgeSpec(model="semantic+e5").judge_id == "semantic+e5"
    assert JudgeSpec(model="semantic+minilm").judge_id == "semantic"
    assert JudgeSpec(model="semantic+e5+minilm").encoder == "e5+minilm"


def test_a_stored_run_without_an_encoder_is_read_as_the_minilm_it_ran_with() -> None:
    stored = EvalConfig.of_stored_run({"judges": [{"model": "semantic"}]})
    assert stored.judges[0].encoder == "minilm" and stored.judges[0].judge_id == "semantic"


# "The arena where the Lewiston Maineiacs played their home games can seat how many people?" against its supporting
# paragraph "Lewiston Maineiacs: The Lewiston Maineiacs were a junior ice hockey team ... The team played its home
# games at the Androscoggin Bank Colisée. ...": no single sentence says enough for MiniLM (best 0.521, under its
# 0.55), e5 reads the paragraph as a passage (0.887, over its 0.86). One of 176 of the 1,000 paragraphs that e5
# decides right and MiniLM wrong (34 the other way round).
SUPPORTING_TARGET = "5a87ab905542996e4f3088c1-p7"


async def test_e5_finds_a_supporting_paragraph_that_minilm_calls_irrelevant() -> None:
    questions = load_hotpotqa_paragraphs(bundled(BundledDataset.HOTPOTQA_DEV_100))
    labelled = {e.check.target_id: e for e in hotpotqa_checks(questions)}
    entry = labelled[SUPPORTING_TARGET]
    assert entry.labels[HOTPOTQA_SUPPORTING] is Label.YES
    minilm = BaselineJudge(BaselineRule.SEMANTIC, encoder=EncoderChoice.parse("minilm"))
    default = BaselineJudge(BaselineRule.SEMANTIC, encoder=EncoderChoice.parse("e5+minilm"))
    (by_minilm,) = await minilm.judge(CheckKind.SUBQUERY_IN_CHUNK, [entry.check])
    (by_e5,) = await default.judge(CheckKind.SUBQUERY_IN_CHUNK, [entry.check])
    assert (by_minilm.label, by_e5.label) == (Label.NO, Label.YES)
    assert (by_minilm.judge_id, by_e5.judge_id) == ("semantic", "semantic+e5+minilm")
