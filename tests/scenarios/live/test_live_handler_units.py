"""The live handler and evaluator in small: capture, failures that never reach the app, streaming, config.

The jury here is the lexical baseline (no LLM), so these run offline and fast.
"""

from __future__ import annotations

import asyncio
import os
import time

import pytest
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda, RunnableParallel, RunnablePassthrough

from ragcourt.live.evaluator import LiveEvaluator, check_live_config, live_config
from ragcourt.schema.config import EvalConfig, Method
from ragcourt.stores.records import RecordStore

# each LiveEvaluator starts its worker process (a fresh interpreter importing the evaluation): 10 s or more a test
pytestmark = pytest.mark.slow

DOCS = [Document(id="d1", page_content="The warranty lasts two years."),
        Document(id="d2", page_content="Returns are accepted within 30 days.")]


def make_app(answer=lambda x: {"answer": x["context"][0].page_content, "context": x["context"]}):
    retriever = RunnableLambda(lambda question: DOCS).with_config(run_name="retriever")
    return RunnableParallel(context=retriever, question=RunnablePassthrough()) | RunnableLambda(answer)


class ListRetrieverApp:
    """A real BaseRetriever inside the app, so on_retriever_end delivers the documents."""

    @staticmethod
    def build():
        from langchain_core.callbacks import CallbackManagerForRetrieverRun
        from langchain_core.retrievers import BaseRetriever

        class Fixed(BaseRetriever):
            def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun):
                return DOCS

        answer = RunnableLambda(lambda x: f"{x['context'][0].page_content}")
        return RunnableParallel(context=Fixed(), question=RunnablePassthrough()) | answer


def test_captured_request_is_question_retrieved_documents_and_answer(tmp_path) -> None:
    app = ListRetrieverApp.build()
    with LiveEvaluator(home=tmp_path, run_id="r", sample_rate=1.0) as live:
        assert app.invoke("How long is the warranty?", config={"callbacks": [live.handler]}) == \
            "The warranty lasts two years."
        assert live.flush(timeout=30)
    counts = live.counts()
    assert (counts.requests, counts.evaluated, counts.failed) == (1, 1, 0)
    with RecordStore(tmp_path / "store.sqlite") as store:
        (sample,) = store.get_samples("r")
        (diagnostics,) = store.get_diagnostics("r")
    assert sample.question == "How long is the warranty?"
    assert [c.id for c in sample.contexts] == ["d1", "d2"] and sample.answer == "The warranty lasts two years."
    assert diagnostics.sample_id == sample.id
    assert {m.name for m in diagnostics.metrics} >= {"completeness", "verifiableness"}


def test_app_errors_and_unreadable_outputs_are_counted_and_never_changed(tmp_path) -> None:
    def broken(_: object) -> dict:
        raise KeyError("the app's own bug")

    with LiveEvaluator(home=tmp_path, run_id="r", sample_rate=1.0) as live:
        with pytest.raises(KeyError, match="the app's own bug"):  # the app's exception, untouched
            make_app(broken).invoke("q", config={"callbacks": [live.handler]})
        assert make_app(lambda x: {"something": 1}).invoke("q", config={"callbacks": [live.handler]}) == \
            {"something": 1}
        live.flush(timeout=30)
    counts = live.counts()
    assert (counts.requests, counts.app_errors, counts.uncapturable, counts.evaluated) == (2, 1, 1, 0)
    assert counts.accounted


def test_a_raising_result_callback_is_counted_and_the_evaluation_goes_on(tmp_path) -> None:
    def explode(_: object) -> None:
        raise RuntimeError("consumer bug")

    with LiveEvaluator(home=tmp_path, run_id="r", sample_rate=1.0, on_result=explode) as live:
        for _ in range(2):
            make_app().invoke("How long is the warranty?", config={"callbacks": [live.handler]})
        live.flush(timeout=30)
    counts = live.counts()
    assert (counts.evaluated, counts.result_callback_errors, counts.handler_errors) == (2, 2, 0)


def test_sampling_share_zero_evaluates_nothing(tmp_path) -> None:
    with LiveEvaluator(home=tmp_path, run_id="r", sample_rate=0.0) as live:
        for _ in range(5):
            make_app().invoke("q", config={"callbacks": [live.handler]})
    counts = live.counts()
    assert (counts.requests, counts.not_sampled, counts.evaluated) == (5, 5, 0)


async def test_async_app_streams_results_to_an_async_reader_until_close(tmp_path) -> None:
    live = LiveEvaluator(home=tmp_path, run_id="r", sample_rate=1.0).start()
    received = []

    async def read() -> None:
        async for diagnostics in live.stream():
            received.append(diagnostics.sample_id)

    reader = asyncio.create_task(read())
    await asyncio.sleep(0)  # the reader subscribes before the first request
    app = make_app()
    outputs = await asyncio.gather(*(app.ainvoke(f"question {i}?", config={"callbacks": [live.handler]})
                                     for i in range(3)))
    assert [o["answer"] for o in outputs] == ["The warranty lasts two years."] * 3
    await asyncio.to_thread(live.flush, 30)
    await asyncio.to_thread(live.close)
    await asyncio.wait_for(reader, 10)  # the stream ends when the evaluator closes
    assert len(received) == 3 and len(set(received)) == 3
    with RecordStore(tmp_path / "store.sqlite") as store:
        assert sorted(d.sample_id for d in store.get_diagnostics("r")) == sorted(received)


def test_submit_without_langchain_and_drops_after_close(tmp_path) -> None:
    live = LiveEvaluator(home=tmp_path, run_id="r").start()
    assert live.submit("How long is the warranty?", DOCS, "Two years.")
    live.close()
    assert not live.submit("late question", DOCS, "late answer")  # closed: dropped and counted, not raised
    counts = live.counts()
    assert (counts.requests, counts.evaluated, counts.dropped_closed) == (2, 1, 1) and counts.accounted


@pytest.mark.parametrize("worker", ["process", "thread"])
def test_both_workers_evaluate_the_same_and_account_for_each_request(tmp_path, worker) -> None:
    results = []
    with LiveEvaluator(home=tmp_path, run_id="r", sample_rate=1.0, worker=worker, on_result=results.append) as live:
        for _ in range(3):
            make_app().invoke("How long is the warranty?", config={"callbacks": [live.handler]})
        assert live.flush(timeout=60)
        if worker == "process":  # the app's process only counts: the evaluation ran elsewhere
            assert live._process is not None and live._process.process.pid != os.getpid()
    counts = live.counts()
    assert (counts.requests, counts.evaluated, counts.failed, counts.queued, counts.evaluating) == (3, 3, 0, 0, 0)
    assert counts.accounted and live.worker == worker
    with RecordStore(tmp_path / "store.sqlite") as store:
        assert sorted(d.sample_id for d in store.get_diagnostics("r")) == sorted(d.sample_id for d in results)
    assert all(d.metric("completeness") is not None for d in results)


def test_the_next_model_call_of_the_app_is_when_the_worker_process_takes_up_a_finished_request(
        tmp_path, monkeypatch) -> None:
    """A finished request waits in the app's process and wakes nobody; the app's next chat model call half a second
    later sends it and rings the worker's bell (live.process.HandOff): the evaluation runs while the app waits
    on its model."""
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.output_parsers import StrOutputParser

    from ragcourt.live import process as live_process

    monkeypatch.setattr(live_process, "INTAKE_POLL_S", 3600.0)  # no timer: only the model call
    model = FakeListChatModel(responses=["The warranty lasts two years."] * 2)
    app = RunnableParallel(context=RunnableLambda(lambda question: DOCS), question=RunnablePassthrough()).assign(
        answer=RunnableLambda(lambda x: x["question"]) | model | StrOutputParser())
    with LiveEvaluator(home=tmp_path, run_id="r", sample_rate=1.0, worker="process") as live:
        app.invoke("How long is the warranty?", config={"callbacks": [live.handler]})
        time.sleep(2.0)  # the worker would have said it started (its events wait 0.5 s while nobody waits on them)
        assert (live.counts().queued, live.counts().evaluated) == (1, 0)
        app.invoke("Can I return it?", config={"callbacks": [live.handler]})  # its model call sends the first
        deadline = time.monotonic() + 60
        while live.counts().evaluated < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert live.counts().evaluated >= 1
        assert live.flush(timeout=60)  # the flush sends the second
    counts = live.counts()
    assert (counts.requests, counts.evaluated, counts.queued) == (2, 2, 0) and counts.accounted


def test_a_worker_process_cannot_take_objects_of_this_process(tmp_path) -> None:
    from ragcourt.observability.telemetry import Telemetry

    with pytest.raises(ValueError, match="worker='process' cannot take a Telemetry"):
        LiveEvaluator(home=tmp_path, worker="process", telemetry=Telemetry.configured(None))
    assert LiveEvaluator(home=tmp_path, telemetry=Telemetry.configured(None)).worker == "thread"  # auto
    assert LiveEvaluator(home=tmp_path).worker == "process"


def test_live_config_refuses_what_live_traffic_cannot_have() -> None:
    assert live_config().methods == (Method.QCARE,)
    with pytest.raises(ValueError, match="methods must be \\[qcare\\]"):
        check_live_config(EvalConfig())  # the default diagnosis includes elements: needs references
    with pytest.raises(ValueError, match="sample_rate"):
        LiveEvaluator(sample_rate=1.5)
