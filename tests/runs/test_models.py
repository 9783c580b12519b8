"""Models: the jury's LLM judges carry their CuBE options (seed 000's score-only protocol, repeated scoring)."""

from __future__ import annotations

from pathlib import Path

from ragcourt.judging import LLMJudge
from ragcourt.runs.models import Models
from ragcourt.schema.config import DimensionProtocol, parse_config
from ragcourt.stores.records import RecordStore

URL = "http://127.0.0.1:9/v1"  # never called: building a client makes no request


def test_judge_options_reach_the_llm_judge(tmp_path: Path) -> None:
    config = parse_config({"judges": [{"model": f"openai:m@{URL}"},
                                      {"model": f"openai:m@{URL}", "protocol": "score_only", "repeats": 3}]})
    with RecordStore(tmp_path / "store.sqlite") as store:
        plain, repeated = Models(config, store).judges()
    assert isinstance(plain, LLMJudge) and isinstance(repeated, LLMJudge)
    assert (plain.judge_id, plain.dimension_protocol, plain.repeats) == (f"openai:m@{URL}",
                                                                          DimensionProtocol.REASONED, 1)
    assert plain.client.params["temperature"] == 0.0
    assert (repeated.judge_id, repeated.dimension_protocol, repeated.repeats) == (
        f"openai:m@{URL}+score_only+x3+t0.7", DimensionProtocol.SCORE_ONLY, 3)
    # the repetitions sample (at 0 they would repeat); the judge's other calls stay at 0
    assert repeated.repeat_client is not None and repeated.repeat_client.params["temperature"] == 0.7
    assert repeated.client.params["temperature"] == 0.0 and plain.repeat_client is None
