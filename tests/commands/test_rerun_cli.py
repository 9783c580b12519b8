"""`rerun --changed`: only changed rows are evaluated (counted at a fake system and a fake judge), every
other row is copied from the base run, and the new run records its base and the re-run ids."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragcourt.analysis.summary import summarize
from ragcourt.cli import app
from ragcourt.commands.rerun import reviews_line
from ragcourt.judging import BaselineJudge, BaselineRule
from ragcourt.judging.decomposers import SentenceDecomposer
from ragcourt.nodes.state import EvalContext
from ragcourt.runs.element_lists import export_lines, import_lines
from ragcourt.runs.rerun import NEW_SAMPLE, CarriedReviews, arerun_changed, plan_changes
from ragcourt.runs.runner import Runner
from ragcourt.schema import Check, CheckKind, Chunk, Condition, Sample, SampleStatus, Verdict
from ragcourt.schema.config import EvalConfig, Method
from ragcourt.stores.records import RecordStore
from ragcourt.systems import Generation

CONFIG = EvalConfig(methods=(Method.ELEMENTS, Method.QCARE), top_k=2)


def sample(sid: str, reference: str) -> Sample:
    return Sample(id=sid, question=f"What about {sid}?", reference_answer=reference,
                  metadata={"chunk": f"{sid} fact one. {sid} fact two.", "answer": f"{sid} fact one."})


SAMPLES = [sample("s1", "s1 fact one. s1 fact two."), sample("s2", "s2 fact one."), sample("s3", "s3 fact two.")]


@dataclass
class CountingSystem:
    """In-process RAGSystem: one chunk and one answer per sample, taken from its metadata; counts calls."""

    name: str = "counting"
    calls: Counter[tuple[str, str]] = field(default_factory=Counter)

    async def retrieve(self, sample: Sample, k: int, score_threshold: float | None) -> list[Chunk]:
        self.calls[("retrieve", sample.id)] += 1
        return [Chunk(id=f"{sample.id}-c", text=sample.metadata["chunk"], rank=1)]

    async def generate(self, sample: Sample, chunks: Sequence[Chunk], condition: Condition) -> Generation:
        self.calls[("generate", sample.id)] += 1
        return Generation(text=sample.metadata["answer"], used_chunk_ids=tuple(c.id for c in chunks))


@dataclass
class CountingJudge:
    """The lexical baseline judge, counting the checks it is asked per sample."""

    judge_id: str = "lexical"
    checks: Counter[str] = field(default_factory=Counter)

    async def judge(self, kind: CheckKind, checks: Sequence[Check]) -> list[Verdict]:
        self.checks.update(c.sample_id for c in checks)
        return await BaselineJudge(BaselineRule.LEXICAL).judge(kind, checks)


def context(store: RecordStore) -> tuple[EvalContext, CountingSystem, CountingJudge]:
    system, judge = CountingSystem(), CountingJudge()
    return EvalContext(config=CONFIG, system=system, judges=[judge], decomposer=SentenceDecomposer(),
                       store=store), system, judge


@pytest.fixture
async def base(tmp_path: Path):
    with RecordStore(tmp_path / "store.sqlite") as store:
        ctx, _, judge = context(store)
        finished = [d async for d in Runner(ctx, "base", tmp_path / "runs" / "base").astream(SAMPLES)]
        assert len(finished) == 3 and set(judge.checks) == {"s1", "s2", "s3"}
        yield store


async def test_editing_one_reference_re_evaluates_exactly_that_sample(base, tmp_path):
    edited = [SAMPLES[0], sample("s2", "s2 fact one. s2 fact two."), SAMPLES[2]]
    ctx, system, judge = context(base)
    result = await arerun_changed(ctx, "base", edited, runs_home=tmp_path / "runs")

    assert [(c.sample_id, c.reasons) for c in result.plan.changed] == [("s2", ("reference_answer changed",))]
    assert system.calls == Counter({("retrieve", "s2"): 1, ("generate", "s2"): 1})
    # only s2's new element "s2 fact two." needs verdicts: in the context, in the answer (the rest is stored)
    assert judge.checks == Counter({"s2": 2})
    run = base.get_run(result.run.run_id)
    assert run.base_run == "base" and run.rerun_sample_ids == ("s2",)
    assert [d.sample_id for d in result.rerun] == ["s2"]
    assert sorted(d.sample_id for d in result.copied) == ["s1", "s3"]

    new = result.run.run_id
    assert [len(e) for e in (base.get_diagnostics(new), base.get_samples(new))] == [3, 3]
    for sid in ("s1", "s3"):  # copied rows: everything the report reads
        assert base.get_diagnostics(new, sid)[0].model_copy(update={"run_id": "base"}) == \
            base.get_diagnostics("base", sid)[0]
        assert len(base.get_retrievals(new, sid)) == 1 and len(base.get_answers(new, sid)) == 1
        assert {c.id for c in base.checks_for(new, sid)} == {c.id for c in base.checks_for("base", sid)}
        assert {r.check_id for r in base.get_reconciled(new, sid)} == {c.id for c in base.checks_for("base", sid)}
    s2 = base.get_diagnostics(new, "s2")[0]
    assert [e.text for e in s2.elements] == ["s2 fact one.", "s2 fact two."]
    assert base.get_samples(new)[1].reference_answer == "s2 fact one. s2 fact two."
    assert summarize(base, new).n_samples == 3

    ctx, system, judge = context(base)  # the same command again resumes the same run: no call at all
    again = await arerun_changed(ctx, "base", edited, runs_home=tmp_path / "runs")
    assert again.run.run_id == new and not system.calls and not judge.checks


async def test_an_imported_element_list_edit_re_runs_that_sample_only(base, tmp_path):
    lines = export_lines(base, SentenceDecomposer(), SAMPLES)
    import_lines(base, [lines[0].model_copy(update={"elements": ("s1 fact one.",)})])
    ctx, system, judge = context(base)
    plan = plan_changes(base, "base", SAMPLES, ctx)
    assert [(c.sample_id, c.reasons) for c in plan.changed] == [
        ("s1", ("element list changed (edited by a person): 2 -> 1 elements",))]
    result = await arerun_changed(ctx, "base", [*SAMPLES, sample("s4", "s4 fact one.")], runs_home=tmp_path / "r")
    assert [(c.sample_id, c.reasons) for c in result.plan.changed] == [
        ("s1", ("element list changed (edited by a person): 2 -> 1 elements",)), ("s4", (NEW_SAMPLE,))]
    assert {sid for _, sid in system.calls} == {"s1", "s4"}
    assert judge.checks["s1"] == 0  # s1's remaining element and Q-CARE checks are all stored verdicts
    assert [e.text for e in base.get_diagnostics(result.run.run_id, "s1")[0].elements] == ["s1 fact one."]


def test_cli_rerun_prints_the_rows_and_when(tmp_path):
    home, data = tmp_path / "ws", tmp_path / "samples.jsonl"
    rows = [{"id": s.id, "question": s.question, "reference_answer": s.reference_answer,
             "contexts": [s.metadata["chunk"]], "answer": s.metadata["answer"]} for s in SAMPLES]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    runner = CliRunner()
    ran = runner.invoke(app, ["run", str(data), "--system", "precomputed", "--run-id", "base", "--home", str(home)])
    assert ran.exit_code == 0, ran.output
    rows[2]["reference_answer"] = "s3 fact one."
    edited = tmp_path / "edited.jsonl"
    edited.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = runner.invoke(app, ["rerun", "--changed", "base", "--dataset", str(edited), "--home", str(home)])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "1 rows re-run, 2 rows copied from the base run" in text
    assert "s3" in text and "reference_answer changed" in text and "evaluated at (UTC)" in text
    missing = runner.invoke(app, ["rerun", "--changed", "nope", "--home", str(home)])
    assert missing.exit_code == 2 and "no run 'nope'" in missing.output
    # the re-test's history stays visible in its summary and report (seed 003)
    with RecordStore(home / "store.sqlite") as store:
        (rerun,) = [r.run_id for r in store.list_runs() if r.base_run == "base"]
    shown = runner.invoke(app, ["summary", rerun, "--home", str(home)])
    assert "re-test of run base: 1 rows evaluated again (s3), every other row copied from it" in " ".join(
        shown.output.split())
    report = runner.invoke(app, ["report", rerun, "--home", str(home)])
    assert report.exit_code == 0, report.output
    html = (home / "runs" / rerun / "report.html").read_text(encoding="utf-8")
    assert "re-test of run <b>base</b>:" in html and "1 rows evaluated again (s3)" in " ".join(html.split())


async def test_a_sample_that_failed_in_the_base_run_is_evaluated_again_not_copied(tmp_path):
    with RecordStore(tmp_path / "store.sqlite") as store:
        ctx, _, _ = context(store)
        broken = CountingSystem()

        async def crash(sample, chunks, condition):
            raise RuntimeError(f"generator down for {sample.id}")

        broken.generate = crash  # type: ignore[method-assign]
        ctx.system = broken
        base_rows = [d async for d in Runner(ctx, "base", tmp_path / "runs" / "base").astream(SAMPLES[:1])]
        assert base_rows[0].error == "RuntimeError: generator down for s1"

        ctx, system, _ = context(store)
        result = await arerun_changed(ctx, "base", SAMPLES[:1], runs_home=tmp_path / "runs")
    assert [(c.sample_id, c.reasons) for c in result.plan.changed] == [
        ("s1", ("failed in the base run: RuntimeError: generator down for s1",))]
    assert system.calls[("generate", "s1")] == 1 and result.copied == ()
    assert [d.status for d in result.rerun] == [SampleStatus.OK]


def test_cli_rerun_of_a_reference_run_retrieves_from_the_base_runs_collection(tmp_path):
    """`elements import` suggests `ragcourt rerun --changed RUN`: with the reference system it must find the
    collection the base run retrieved from (it failed with "no chromadb collection 'None'")."""
    home, corpus, data = tmp_path / "ws", tmp_path / "corpus.jsonl", tmp_path / "samples.jsonl"
    corpus.write_text("".join(json.dumps({"id": s.id, "title": s.id, "text": s.metadata["chunk"]}) + "\n"
                              for s in SAMPLES))
    rows = [{"id": s.id, "question": s.question, "reference_answer": s.reference_answer} for s in SAMPLES]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    runner = CliRunner()
    for args in (["index", str(corpus), "--collection", "docs"],
                 ["run", str(data), "--collection", "docs", "--run-id", "base"]):
        done = runner.invoke(app, [*args, "--home", str(home)])
        assert done.exit_code == 0, done.output
    rows[2]["reference_answer"] = "s3 fact one."
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = runner.invoke(app, ["rerun", "--changed", "base", "--dataset", str(data), "--home", str(home)])
    assert result.exit_code == 0, result.output
    assert "1 rows re-run, 2 rows copied from the base run" in " ".join(result.output.split())
    with RecordStore(home / "store.sqlite") as store:
        (rerun,) = [r for r in store.list_runs() if r.base_run == "base"]
        assert (store.get_run("base").collection, rerun.collection) == ("docs", "docs")


def test_the_reviews_line_counts_carried_and_gone_decisions_and_is_absent_without_any():
    assert reviews_line(CarriedReviews(carried=(), gone=())) is None
    assert reviews_line(CarriedReviews(carried=("a",), gone=("b", "c"))) == (
        "review decisions: 1 carried from the base run (their checks are unchanged: nobody is asked again), "
        "2 no longer apply (the check is not in the new run)")
    assert reviews_line(CarriedReviews(carried=(), gone=(), waiting=("d",))) == (
        "review decisions: 0 carried from the base run (their checks are unchanged: nobody is asked again), "
        "0 no longer apply (the check is not in the new run), 1 wait on samples that did not finish (the same "
        "command again settles them)")
