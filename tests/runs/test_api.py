"""The public Python API (ragcourt.evaluate / aevaluate / astream, EvalResult.to_frame, reference_system)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

import pytest
from fakes.openai_server import FakeOpenAIServer
from fakes.status_server import closed_port
from fixtures import REPO
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_openai import ChatOpenAI

import ragcourt
from ragcourt.llm.probe import EndpointUnavailableError
from ragcourt.runs import background_loop
from ragcourt.runs.runner import SamplesChangedError
from ragcourt.schema import NORMAL, Chunk, Sample, SampleStatus
from ragcourt.schema.config import Batching, JudgeSpec
from ragcourt.systems import BM25Index, Precomputed

SAMPLES = [Sample(id="acme", question="Who founded Acme?", reference_answer="Ada Lovelace founded Acme."),
           Sample(id="kettle", question="How long is the kettle warranty?", reference_answer="Two years.")]
CORPUS = [Chunk(id="acme-doc", text="Ada Lovelace founded Acme.", title="Acme"),
          Chunk(id="kettle-doc", text="The kettle has a two-year warranty.", title="Kettle")]
PRECOMPUTED = [s.model_copy(update={"contexts": tuple(CORPUS), "answer": s.reference_answer}) for s in SAMPLES]
PROMPT = ChatPromptTemplate.from_messages([("human", "Context:\n{context}\n\nQuestion: {question}")])


class Fixed(BaseRetriever):
    k: int = 2

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun):
        return [Document(page_content="Ada Lovelace founded Acme."),
                Document(page_content="The kettle has a two-year warranty.")][: self.k]


async def current_loop() -> asyncio.AbstractEventLoop:
    return asyncio.get_running_loop()


def judge_builders(binary_label: str) -> dict:
    """A judge that says `binary_label` to every yes/no item and links every item to every target."""
    def shown(request) -> list[str]:
        text = "\n".join(str(m.get("content") or "") for m in request.messages)
        return list(dict.fromkeys(re.findall(r"^\[(\w+)\]", text, re.MULTILINE)))

    def links(request) -> dict:
        ids = shown(request)
        chunks = [i for i in ids if i.startswith("ctx_")]
        items, targets = ([i for i in ids if not i.startswith("ctx_")], chunks) if chunks else \
            ([i for i in ids if i.startswith("C")], [i for i in ids if i.startswith("Q")])
        return {"judgements": [{"item_id": i, "reasoning": "scripted", "ids": targets} for i in items]}

    return {"BinaryJudgements": lambda r: {"judgements": [{"item_id": i, "reasoning": "scripted",
                                                           "verdict": binary_label} for i in shown(r)]},
            "LinkJudgements": links}


def langchain_app(base_url: str) -> tuple[BaseRetriever, object]:
    llm = ChatOpenAI(base_url=base_url, model="fake-model", api_key="x", max_retries=0, timeout=10)
    return Fixed(), PROMPT | llm | StrOutputParser()


def test_two_sync_evaluate_calls_share_one_chat_openai(tmp_path, openai_server) -> None:
    """The model's httpx async client pools connections on the loop of the first call; a fresh loop per
    call (asyncio.run) left the second run failing every question with 'Event loop is closed'."""
    openai_server.responder = lambda request: "Ada Lovelace founded Acme."
    retriever, chain = langchain_app(openai_server.base_url)
    for run_id in ("first", "second"):
        result = ragcourt.evaluate(SAMPLES, retriever=retriever, chain=chain, home=tmp_path, run_id=run_id)
        assert [d.status for d in result.diagnostics] == [SampleStatus.OK, SampleStatus.OK], \
            (run_id, [d.error for d in result.diagnostics])
    assert openai_server.count("/v1/chat/completions") == 4


def test_sync_then_async_calls_share_one_chat_openai(tmp_path, openai_server) -> None:
    """evaluate() then `await aevaluate()` / astream() with the same ChatOpenAI: every run is on ragcourt's
    loop, whichever API started it (both samples failed with 'bound to a different event loop')."""
    openai_server.responder = lambda request: "Ada Lovelace founded Acme."
    retriever, chain = langchain_app(openai_server.base_url)
    first = ragcourt.evaluate(SAMPLES, retriever=retriever, chain=chain, home=tmp_path, run_id="sync")

    async def then_async() -> tuple[list, list]:
        awaited = await ragcourt.aevaluate(SAMPLES, retriever=retriever, chain=chain, home=tmp_path, run_id="async")
        streamed = [d async for d in ragcourt.astream(SAMPLES, retriever=retriever, chain=chain, home=tmp_path,
                                                       run_id="stream")]
        return awaited.diagnostics, streamed

    awaited, streamed = asyncio.run(then_async())
    for diagnostics in (first.diagnostics, awaited, streamed):
        assert sorted((d.sample_id, d.status) for d in diagnostics) == [
            ("acme", SampleStatus.OK), ("kettle", SampleStatus.OK)], [d.error for d in diagnostics]


async def test_a_stream_left_early_releases_its_run(tmp_path) -> None:
    """Closing astream early cancels the run on ragcourt's loop and waits until its lock and store are
    released: the same run resumes at once (what finished is kept)."""
    async with contextlib.aclosing(ragcourt.astream(PRECOMPUTED, Precomputed(), home=tmp_path,
                                                    run_id="early")) as stream:
        async for _ in stream:
            break
    result = await asyncio.wait_for(ragcourt.aevaluate(PRECOMPUTED, Precomputed(), home=tmp_path, run_id="early"),
                                    timeout=30)
    assert [d.status for d in result.diagnostics] == [SampleStatus.OK, SampleStatus.OK]


def test_repeated_sync_calls_share_one_loop_started_on_first_use(tmp_path) -> None:
    seen = [background_loop.run(current_loop()) for _ in range(2)]
    assert seen[0] is seen[1] is background_loop.get_loop() and seen[0].is_running()
    ragcourt.evaluate(PRECOMPUTED, ragcourt.Precomputed(), home=tmp_path, run_id="one")
    assert background_loop.run(current_loop()) is seen[0]


def test_nothing_is_started_at_import() -> None:
    code = ("import threading, ragcourt, ragcourt.runs.api, ragcourt.runs.background_loop as b; "
            "assert b._loop is None and b._thread is None; "
            "assert b.THREAD_NAME not in [t.name for t in threading.enumerate()]")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO.parent, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_exceptions_keep_their_type(tmp_path) -> None:
    with pytest.raises(TypeError, match="give system="):
        ragcourt.evaluate(PRECOMPUTED, home=tmp_path)
    with pytest.raises(ValueError, match="not a plain name"):
        ragcourt.evaluate(PRECOMPUTED, ragcourt.Precomputed(), home=tmp_path, run_id="../x")
    with pytest.raises(TypeError, match="unexpected keyword"):
        ragcourt.evaluate(PRECOMPUTED, ragcourt.Precomputed(), hmoe=tmp_path)


def test_an_interrupt_cancels_the_run_and_waits_for_it_to_unwind() -> None:
    events = []

    async def long_run() -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            events.append("cancelled")
            await asyncio.sleep(0.2)  # cleanup that takes a while (closing a store, a run lock)
            events.append("cleaned up")
            raise

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGUSR1, interrupt)  # as Ctrl-C, without touching pytest's SIGINT
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGUSR1))
    try:
        timer.start()
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            background_loop.run(long_run())
    finally:
        timer.cancel()
        signal.signal(signal.SIGUSR1, previous)
    assert events == ["cancelled", "cleaned up"] and time.monotonic() - started < 5
    assert background_loop.run(current_loop()).is_running()  # the loop serves the next call


@pytest.mark.parametrize("raised", [KeyboardInterrupt, SystemExit])
def test_an_interrupt_raised_inside_the_run_reaches_the_caller_and_the_loop_lives_on(raised) -> None:
    """Raised out of a task, KeyboardInterrupt and SystemExit stop the loop's thread before any callback
    runs: the caller waited forever (found in review)."""
    async def interrupted() -> None:
        await asyncio.sleep(0)
        raise raised

    finished = threading.Event()
    outcome: list[BaseException] = []

    def call() -> None:
        try:
            background_loop.run(interrupted())
        except BaseException as error:  # noqa: BLE001 - what the caller got
            outcome.append(error)
        finished.set()

    threading.Thread(target=call, daemon=True).start()
    assert finished.wait(5), "the caller still waits"
    assert isinstance(outcome[0], raised)
    assert background_loop.run(current_loop()).is_running()


def test_a_sync_call_from_the_loop_thread_says_to_await(tmp_path) -> None:
    async def callback_calling_evaluate() -> None:
        ragcourt.evaluate(PRECOMPUTED, ragcourt.Precomputed(), home=tmp_path)

    with pytest.raises(background_loop.LoopReentryError, match=r"await ragcourt\.aevaluate"):
        background_loop.run(callback_calling_evaluate())


async def test_evaluate_works_inside_a_running_event_loop(tmp_path, openai_server) -> None:
    """As in Jupyter or async code: the caller's loop is running; evaluate runs on ragcourt's loop."""
    openai_server.responder = lambda request: "Ada Lovelace founded Acme."
    retriever, chain = langchain_app(openai_server.base_url)
    result = ragcourt.evaluate(SAMPLES, retriever=retriever, chain=chain, home=tmp_path, run_id="in-loop")
    assert [d.status for d in result.diagnostics] == [SampleStatus.OK, SampleStatus.OK]
    awaited = await ragcourt.aevaluate(PRECOMPUTED, ragcourt.Precomputed(), home=tmp_path, run_id="awaited")
    assert [d.sample_id for d in awaited.diagnostics] == ["acme", "kettle"]


def test_home_and_dataset_paths_may_be_str_or_pathlike(tmp_path) -> None:
    class Where(os.PathLike):
        def __init__(self, path) -> None:
            self.path = path

        def __fspath__(self) -> str:
            return str(self.path)

    dataset = tmp_path / "questions.jsonl"
    dataset.write_text("".join(json.dumps(s.model_dump(mode="json", exclude_none=True)) + "\n" for s in PRECOMPUTED))
    by_str = ragcourt.evaluate(PRECOMPUTED, ragcourt.Precomputed(), home=str(tmp_path / "a"), run_id="r")
    assert by_str.run_dir == tmp_path / "a" / "runs" / "r" and by_str.run_dir.is_dir()
    by_pathlike = ragcourt.evaluate(system=ragcourt.Precomputed(), dataset=Where(dataset), home=Where(tmp_path / "b"))
    assert [d.status for d in by_pathlike.diagnostics] == [SampleStatus.OK, SampleStatus.OK]
    assert ragcourt.Workspace(str(tmp_path)).store_path == tmp_path / "store.sqlite"


def test_an_empty_dataset_is_refused_with_a_clear_error(tmp_path) -> None:
    with pytest.raises(ValueError, match="the dataset has no samples"):
        ragcourt.evaluate([], ragcourt.Precomputed(), home=tmp_path)
    with pytest.raises(ValueError, match="the dataset has no samples"):
        ragcourt.evaluate(system=ragcourt.Precomputed(), dataset=[], home=tmp_path)
    assert not (tmp_path / "store.sqlite").exists()  # refused before anything is opened


@dataclass
class SlowFirst(Precomputed):
    """Answers the first question last."""

    name: str = "slow-first"

    async def generate(self, sample, chunks, condition):
        await asyncio.sleep(0.5 if sample.id == "acme" else 0.0)
        return await super().generate(sample, chunks, condition)


async def test_results_come_in_dataset_order(tmp_path) -> None:
    streamed = [d.sample_id async for d in ragcourt.astream(PRECOMPUTED, SlowFirst(), home=tmp_path, run_id="s")]
    assert streamed == ["kettle", "acme"]  # completion order
    result = await ragcourt.aevaluate(PRECOMPUTED, SlowFirst(), home=tmp_path, run_id="e")
    assert [d.sample_id for d in result.diagnostics] == ["acme", "kettle"]
    assert list(result.to_frame()["sample_id"]) == ["acme", "kettle"]


def test_frame_has_each_metrics_unscored_and_escalated_counts(tmp_path) -> None:
    """One LLM judge (per-kind batches) whose yes/no batches are garbage: those checks are unscored (and
    escalated), and the metrics built on them count them; the frame carries each metric's own counts."""
    builders = judge_builders("no")
    builders["BinaryJudgements"] = lambda request: "Sure! {not json"
    with FakeOpenAIServer(builders=builders) as judge:
        config = ragcourt.EvalConfig(judges=(JudgeSpec(model=f"openai:j@{judge.base_url}", id="j"),),
                                     batching=Batching.PER_KIND)
        result = ragcourt.evaluate(PRECOMPUTED[:1], ragcourt.Precomputed(), config=config, home=tmp_path)
    (diagnostics,) = result.diagnostics
    (row,) = result.to_frame().to_dict("records")
    for metric in diagnostics.metrics:
        assert row[metric.name] == metric.value or (row[metric.name] is None and metric.value is None)
        assert row[f"{metric.name}_na_reason"] == metric.na_reason
        assert row[f"{metric.name}_n_unscored"] == metric.n_unscored
        assert row[f"{metric.name}_n_escalated"] == metric.n_escalated
    assert sum(m.n_unscored for m in diagnostics.metrics) > 0 and sum(m.n_escalated for m in diagnostics.metrics) > 0
    assert row["n_unscored"] == diagnostics.n_unscored and row["n_escalated"] == len(diagnostics.escalations)


def test_reference_system_opens_the_workspace_collection(tmp_path) -> None:
    with pytest.raises(ValueError, match="no chromadb collection 'kb-docs'.*ragcourt index"):
        ragcourt.reference_system("kb-docs", home=str(tmp_path))
    assert not (tmp_path / "chroma").exists()  # looking did not create a chromadb folder
    ragcourt.Workspace(tmp_path).open_vectors().index("kb-docs", CORPUS)
    system = ragcourt.reference_system("kb-docs", home=str(tmp_path))
    result = ragcourt.evaluate(SAMPLES, system, home=tmp_path, config=ragcourt.EvalConfig(top_k=1))
    assert [d.status for d in result.diagnostics] == [SampleStatus.OK, SampleStatus.OK]
    records = ragcourt.Workspace(tmp_path).open_store()
    try:
        answers = {a.sample_id: a.text for a in records.get_answers(result.run_id)}
        assert records.get_run(result.run_id).collection == "kb-docs"  # as the CLI records it
    finally:
        records.close()
    assert answers == {"acme": "Ada Lovelace founded Acme.", "kettle": "The kettle has a two-year warranty."}


def test_the_reference_system_retrieves_by_bm25_in_a_cuer_run(tmp_path) -> None:
    """reference_system() leaves retrieval to the run's configuration, which for the cuer method is BM25 (seed 004):
    the normal retrievals are the BM25 index's ranking and scores, not cosine similarities."""
    ragcourt.Workspace(tmp_path).open_vectors().index("kb-docs", CORPUS)
    system = ragcourt.reference_system("kb-docs", home=str(tmp_path))
    config = ragcourt.EvalConfig(methods=("cuer",), top_k=2)
    result = ragcourt.evaluate(SAMPLES, system, home=tmp_path, config=config)
    assert [d.status for d in result.diagnostics] == [SampleStatus.OK, SampleStatus.OK]
    records = ragcourt.Workspace(tmp_path).open_store()
    try:
        normal = {r.sample_id: r.chunks for r in records.get_retrievals(result.run_id) if r.condition == NORMAL}
    finally:
        records.close()
    index = BM25Index(CORPUS)
    for sample in SAMPLES:
        assert [(c.id, c.score) for c in normal[sample.id]] == [(c.id, c.score) for c in index.top_k(sample.question, 2)]
    assert normal["acme"][0].id == "acme-doc" and normal["acme"][1].score == 0.0
    assert system.retriever is None  # the caller's system is left as it was


def test_an_edited_sample_is_evaluated_afresh_and_an_explicit_run_id_over_it_is_refused(tmp_path) -> None:
    """Issue 20, item 1, through the Python API: after an edit of a sample's answer and contexts the same call is
    a new run (the derived run id covers the contents) whose figures are the new text's; the old run keeps its own;
    run_id= of the old run over the edited sample raises SamplesChangedError naming it, and writes nothing."""
    first = ragcourt.evaluate(PRECOMPUTED, Precomputed(), home=tmp_path)
    # acme: sub-query "Who founded Acme?" -> chunk acme-doc only: r = [1, 0], C-Prec@2 = 1/2; claim = element =
    # "Ada Lovelace founded Acme.", in the answer and in acme-doc: Verifiableness 1, coverage 1
    acme = next(d for d in first.diagnostics if d.sample_id == "acme")
    assert (acme.metric("c_prec").value, acme.metric("verifiableness").value) == (0.5, 1.0)
    old_figures = {d.sample_id: d.metrics for d in first.diagnostics}

    edited = [PRECOMPUTED[0].model_copy(update={"contexts": (CORPUS[1],), "answer": "Bananas are yellow."}),
              PRECOMPUTED[1]]
    again = ragcourt.evaluate(edited, Precomputed(), home=tmp_path)
    assert again.run_id != first.run_id
    acme_now = next(d for d in again.diagnostics if d.sample_id == "acme")
    # the only chunk (the kettle's) covers no sub-query and holds neither the claim "Bananas are yellow." nor the
    # element: C-Prec = 0, Verifiableness 0, element coverage 0
    assert [acme_now.metric(name).value for name in ("c_prec", "verifiableness", "element_coverage")] == [0, 0, 0]
    records = ragcourt.Workspace(tmp_path).open_store()
    try:
        assert {d.sample_id: d.metrics for d in records.get_diagnostics(first.run_id)} == old_figures
        assert {s.id: s.answer for s in records.get_samples(first.run_id)}["acme"] == "Ada Lovelace founded Acme."
    finally:
        records.close()

    with pytest.raises(SamplesChangedError, match=r"of 1 of these samples \(acme\)") as refused:
        ragcourt.evaluate(edited, Precomputed(), home=tmp_path, run_id=first.run_id)
    assert refused.value.sample_ids == ("acme",) and f"rerun --changed {first.run_id}" in str(refused.value)
    records = ragcourt.Workspace(tmp_path).open_store()
    try:
        assert {d.sample_id: d.metrics for d in records.get_diagnostics(first.run_id)} == old_figures
        assert {s.id: s.answer for s in records.get_samples(first.run_id)}["acme"] == "Ada Lovelace founded Acme."
    finally:
        records.close()


def test_a_judge_that_cannot_answer_stops_the_run_before_the_first_sample(tmp_path) -> None:
    """Issue 20, item 9: a judge on a closed loopback port raises EndpointUnavailableError naming it, its URL and
    the cause, and nothing is evaluated or stored. check_endpoints=False runs anyway (for servers that reject
    the probe): every verdict is unscored, and its detail says why."""
    url = f"http://127.0.0.1:{closed_port()}/v1"
    config = ragcourt.EvalConfig(judges=(JudgeSpec(model=f"openai:j@{url}", id="j"),))
    with pytest.raises(EndpointUnavailableError) as raised:
        ragcourt.evaluate(PRECOMPUTED[:1], Precomputed(), config=config, home=tmp_path)
    assert str(raised.value) == f"judge 'j' cannot use {url}/models: connection refused"
    with ragcourt.Workspace(tmp_path).open_store() as store:
        assert store.list_runs() == []

    result = ragcourt.evaluate(PRECOMPUTED[:1], Precomputed(), config=config, home=tmp_path, check_endpoints=False)
    with ragcourt.Workspace(tmp_path).open_store() as store:
        verdicts = store.get_verdicts([c.id for c in store.checks_for(result.run_id)])
    assert verdicts and {(v.status, v.unscored_reason) for v in verdicts} == {("unscored", "error")}
    assert all(v.detail is not None and v.detail.startswith("connection refused: APIConnectionError")
               for v in verdicts)
