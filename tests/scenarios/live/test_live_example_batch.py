"""The example LangChain app evaluated in batch, as it is: ragcourt.aevaluate(retriever=, chain=, dataset=).

The app's model is a FakeOpenAIServer answering with the first sentence of the context it was shown; the
judge is another FakeOpenAIServer that links every item to every target and answers "no" to yes/no items.
So (worked out by hand): every chunk covers every sub-query -> C-Prec@3 = 1; every claim is supported by a
chunk -> verifiableness = 1; no sub-query is answered -> completeness = 0; no element is in the normal
context -> element coverage 0 < 0.6 -> the loose condition retrieves with k = 2 x 3 = 6 through the
retriever's search_kwargs, and no element is there either -> document_gap.
"""

from __future__ import annotations

from fakes.openai_server import FakeOpenAIServer
from live_helpers import example_app, example_store, first_context_sentence, judge_builders

import ragcourt
from ragcourt.runs.workspace import Workspace
from ragcourt.schema import LOOSE, NORMAL, ElementStatus, SampleStatus
from ragcourt.schema.config import Batching, EvalConfig, JudgeSpec, Method


async def test_example_app_evaluated_in_batch_with_its_own_retriever_settings(tmp_path, openai_server) -> None:
    openai_server.responder = first_context_sentence
    store = example_store()
    retriever = example_app.build_retriever(store)  # k = 3, as the app has it
    llm = example_app.build_llm(openai_server.base_url, "fake-model")
    with FakeOpenAIServer(builders=judge_builders(binary_label="no")) as judge:
        config = EvalConfig(judges=(JudgeSpec(model=f"openai:fake-model@{judge.base_url}", id="judge"),),
                            methods=(Method.QCARE, Method.ELEMENTS), top_k=3,
                            batching=Batching.PER_KIND)  # its fake judge answers the per-kind schemas
        result = await ragcourt.aevaluate(retriever=retriever, chain=example_app.build_answer_chain(llm),
                                          dataset=example_app.QUESTIONS, config=config, home=tmp_path,
                                          run_id="batch")
    by_id = {d.sample_id: d for d in result.diagnostics}
    assert sorted(by_id) == ["capacity", "descaling", "returns", "warranty"]
    assert all(d.status is SampleStatus.OK for d in by_id.values())
    assert openai_server.count("/v1/chat/completions") == 4  # one answer per question: only normal is answered
    for d in by_id.values():
        values = {m.name: m.value for m in d.metrics}
        assert d.n_unscored == 0, [(m.name, m.na_reason) for m in d.metrics]
        assert values["c_prec@3"] == 1.0 and values["verifiableness"] == 1.0
        assert values["completeness"] == 0.0 and values["element_coverage"] == 0.0
        assert {e.status for e in d.elements} == {ElementStatus.DOCUMENT_GAP}

    records = Workspace(tmp_path).open_store()
    try:
        retrievals = {(r.sample_id, r.condition): r for r in records.get_retrievals("batch")}
        answers = {a.sample_id: a.text for a in records.get_answers("batch")}
    finally:
        records.close()
    normal, loose = retrievals[("warranty", NORMAL)], retrievals[("warranty", LOOSE)]
    assert [c.id for c in normal.chunks] == ["warranty", "capacity", "filter"]  # the app's own top 3
    assert len(loose.chunks) == 6 and loose.k == 6 and [c.id for c in loose.chunks[:3]] == ["warranty", "capacity",
                                                                                          "filter"]
    assert answers["warranty"] == "The Acme kettle has a two-year warranty."


async def test_one_chain_returning_context_and_answer_is_evaluated_without_a_second_call(tmp_path,
                                                                                        openai_server) -> None:
    openai_server.responder = first_context_sentence
    app = example_app.build_app(example_app.build_retriever(example_store()),
                                example_app.build_llm(openai_server.base_url, "fake-model"))
    result = await ragcourt.aevaluate(chain=app, dataset=example_app.QUESTIONS, home=tmp_path, run_id="one-chain",
                                      config=EvalConfig(methods=(Method.QCARE,), top_k=3))
    assert len(result.diagnostics) == 4 and all(d.status is SampleStatus.OK for d in result.diagnostics)
    assert openai_server.count("/v1/chat/completions") == 4  # the chain ran once per question
    records = Workspace(tmp_path).open_store()
    try:
        (answer,) = records.get_answers("one-chain", "warranty")
        (retrieval,) = records.get_retrievals("one-chain", "warranty")
    finally:
        records.close()
    assert answer.text == "The Acme kettle has a two-year warranty."
    assert [c.id for c in retrieval.chunks] == ["warranty", "capacity", "filter"]
