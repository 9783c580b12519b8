"""The live handler attached while the example app serves 200 requests, with faults in the judge endpoint.

The app answers every request exactly as it does without the handler; the handler's counts add up:
requests = not sampled + dropped (queue full) + evaluated + failed, and what it evaluated is in the store,
in diagnostics.jsonl and in the on_result stream, one entry per evaluated request.
"""

from __future__ import annotations

import json
import logging
import random
from concurrent.futures import ThreadPoolExecutor

import pytest
from fakes.openai_server import (
    FakeOpenAIServer,
    FaultPlan,
    StatusFault,
    malformed_json,
    status_500,
    truncated,
)
from live_helpers import example_app, example_store, first_context_sentence, judge_builders

from ragcourt.live.evaluator import LiveEvaluator, live_config
from ragcourt.schema import SampleDiagnostics, SampleStatus
from ragcourt.schema.config import JudgeSpec

QUESTIONS = [json.loads(line) for line in example_app.QUESTIONS.read_text().splitlines() if line.strip()]
EXPECTED_ANSWERS = {  # first sentence of the top chunk (hashing embeddings; see test_live_example_batch)
    "warranty": "The Acme kettle has a two-year warranty.",
    "capacity": "The Acme kettle has a two-year warranty.",
    "descaling": "The kettle draws 2200 watts.",
    "returns": "Unused kettles can be returned within 30 days.",
}


@pytest.mark.slow
def test_app_answers_all_200_requests_and_the_handler_accounts_for_each(tmp_path, openai_server, caplog) -> None:
    openai_server.responder = first_context_sentence
    app = example_app.build_app(example_app.build_retriever(example_store()),
                                example_app.build_llm(openai_server.base_url, "fake-model"))
    faults = FaultPlan(seed=11, probability=0.3,
                       mix=[status_500(), malformed_json(), truncated(), StatusFault(status=400)])
    results: list[SampleDiagnostics] = []
    with FakeOpenAIServer(builders=judge_builders("yes"), faults=faults) as judge:
        config = live_config(judges=(JudgeSpec(model=f"openai:fake-model@{judge.base_url}", id="judge"),),
                             concurrency=2)
        live = LiveEvaluator(home=tmp_path, run_id="live", config=config, sample_rate=0.5, max_queue=5, seed=3,
                             on_result=results.append)

        def serve(number: int) -> tuple[str, str]:
            row = QUESTIONS[number % len(QUESTIONS)]
            return row["id"], app.invoke(row["question"], config={"callbacks": [live.handler]})["answer"]

        with caplog.at_level(logging.WARNING, logger="ragcourt.live"), live:
            with ThreadPoolExecutor(max_workers=8) as server_threads:  # the app serves requests concurrently
                answers = list(server_threads.map(serve, range(200)))
            assert live.flush(timeout=120)
        counts = live.counts()
        judge_faults = sum(1 for r in judge.requests if r.fault is not None)

    assert [answer for _, answer in answers] == [EXPECTED_ANSWERS[qid] for qid, _ in answers]
    assert openai_server.count("/v1/chat/completions") == 200  # the handler never called the app's model

    draw = random.Random(3)  # the seeded draw the evaluator makes, one per request
    sampled = sum(draw.random() < 0.5 for _ in range(200))
    assert counts.requests == 200 and counts.not_sampled == 200 - sampled
    assert counts.dropped_queue_full > 0  # the app outran the bounded queue
    assert counts.evaluated + counts.failed + counts.dropped_queue_full == sampled
    assert (counts.app_running, counts.app_errors, counts.uncapturable, counts.queued, counts.evaluating,
            counts.dropped_at_close, counts.dropped_closed, counts.handler_errors) == (0,) * 8
    assert counts.accounted
    assert any("dropped" in r.getMessage() for r in caplog.records)  # it says so

    assert judge_faults > 0
    assert len(results) == counts.evaluated + counts.failed
    assert sum(d.n_unscored for d in results) > 0  # HTTP 400 from the judge: unscored verdicts, not zeros
    lines = (tmp_path / "runs" / "live" / "diagnostics.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["sample_id"] for line in lines) == sorted(d.sample_id for d in results)
    assert all(d.status is SampleStatus.OK for d in results) == (counts.failed == 0)
    assert not (tmp_path / "runs" / "live" / "run.lock").exists()  # released at close
