"""The run level: Runner (resume, lock, failures), deferred review + rescore, inline review across processes.

The three-sample fixture and its hand-computed figures are in tests/graphs/test_sample_graph.py; here s1's one
escalation is claim_supported("Acme sells rockets.", "Bananas are yellow."): judge A says no, judge B yes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from fixtures import FIXTURES

DATA = FIXTURES / "graph"
sys.path.insert(0, str(DATA))

import run_many
from graph_fixtures import (
    JUDGE_A,
    JUDGE_B,
    NEEDLES_A,
    NEEDLES_B,
    S1,
    S3,
    SAMPLES,
    InstrumentedJudge,
    NeedleJudge,
    fixture_config,
    fixture_judges,
    fixture_system,
    make_context,
    many_samples,
)

from ragcourt.analysis.summary import summarize
from ragcourt.judging import BaselineJudge, BaselineRule
from ragcourt.runs.rescore import ReplaySystem, arescore_run
from ragcourt.runs.runner import (
    DIAGNOSTICS_FILE,
    ResumePlan,
    RunLockedError,
    Runner,
    SamplesChangedError,
    StoredSamples,
)
from ragcourt.schema import (
    CheckKind,
    DecompositionKind,
    Label,
    ReconcileMethod,
    Review,
    ReviewAction,
    SampleStatus,
    UnscoredReason,
    Verdict,
    VerdictStatus,
)
from ragcourt.schema.config import ReviewMode
from ragcourt.stores.records import RecordStore
from ragcourt.systems import ConditionUnavailable

N_CHECKS = {"s1": 27, "s2": 15, "s3": 19}


def values(diagnostics) -> dict[str, float | None]:
    return {m.name: m.value for m in diagnostics.metrics}


async def collect(runner: Runner, samples) -> list:
    return [d async for d in runner.astream(list(samples))]


@pytest.fixture
def store(tmp_path: Path) -> RecordStore:
    with RecordStore(tmp_path / "store.sqlite") as opened:
        yield opened


def escalated_check(store: RecordStore, run_id: str) -> str:
    (pending,) = store.pending_escalations(run_id)
    (check,) = store.get_checks([pending.check_id])
    assert (check.kind, check.subject_text, check.target_id) == (
        CheckKind.CLAIM_SUPPORTED, "Acme sells rockets.", "s1c1")
    return check.id


# --------------------------------------------------------------------------- resume and stream


async def test_a_finished_run_resumes_from_the_store_without_any_call(store: RecordStore, tmp_path: Path) -> None:
    system, judges = fixture_system(), fixture_judges()
    runner = Runner(make_context(store, fixture_config(), judges, system), "run-a", tmp_path / "run-a")
    first = await collect(runner, SAMPLES.values())
    assert sorted(d.sample_id for d in first) == ["s1", "s2", "s3"]
    calls = (len(system.calls), len(judges[0].calls), len(judges[1].calls))
    lines = (tmp_path / "run-a" / DIAGNOSTICS_FILE).read_text().splitlines()
    assert sorted(json.loads(line)["sample_id"] for line in lines) == ["s1", "s2", "s3"]

    again = await collect(runner, SAMPLES.values())
    assert (len(system.calls), len(judges[0].calls), len(judges[1].calls)) == calls
    assert [d.sample_id for d in again] == ["s1", "s2", "s3"]  # finished ones first, from the store
    assert {d.sample_id: values(d) for d in again} == {d.sample_id: values(d) for d in first}

    summary = summarize(store, "run-a")
    assert (summary.n_samples, summary.n_failed, summary.n_checks, summary.n_verdicts) == (3, 0, 61, 122)
    assert (summary.n_unscored, summary.n_escalated, summary.n_pending) == (0, 1, 1)
    # element statuses over the run: answered 1+1+2, generation 1+0+2, retrieval 1, document 1, undecided 1;
    # gap shares over the 5 decided missing elements
    assert summary.element_shares == pytest.approx({"generation_gap": 3 / 5, "retrieval_gap": 1 / 5,
                                                    "document_gap": 1 / 5})
    coverage = next(m for m in summary.metrics if m.name == "element_coverage")
    assert coverage.mean == pytest.approx((1 + 1 / 3 + 0.6) / 3)


async def test_a_resume_reads_finished_samples_in_batches_and_shows_them_whole(
    store: RecordStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A resumed run reads the ids of finished samples, then their records a batch at a time (never every record
    with its alignment graph at once); what it yields is the stored record, graph included."""
    import ragcourt.runs.runner as runner_module

    runner = Runner(make_context(store, fixture_config(), fixture_judges(), fixture_system()), "run-b",
                    tmp_path / "run-b")
    await collect(runner, SAMPLES.values())
    stored = {d.sample_id: d for d in store.get_diagnostics("run-b")}
    assert all(d.alignment_graph for d in stored.values())
    monkeypatch.setattr(runner_module, "RESUME_BATCH", 2)
    batches: list[list[str]] = []
    read_batch = store.diagnostics_of_samples

    def spy(run_id: str, sample_ids):
        batches.append(list(sample_ids))
        return read_batch(run_id, sample_ids)

    def whole_run(*args, **kwargs):
        raise AssertionError("a resume must not read every finished record at once")

    monkeypatch.setattr(store, "diagnostics_of_samples", spy)
    monkeypatch.setattr(store, "get_diagnostics", whole_run)
    again = await collect(runner, SAMPLES.values())
    assert batches == [["s1", "s2"], ["s3"]]
    assert again == [stored["s1"], stored["s2"], stored["s3"]]


async def test_a_resume_neither_parses_nor_rewrites_the_samples_the_run_holds(
    store: RecordStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The samples are compared with the store as text, a batch at a time: an unchanged one is neither built
    again from the store nor written again; one stored in an older serialisation of the same contents is
    rewritten; one with other contents is refused, as before."""
    runner = Runner(make_context(store, fixture_config(), fixture_judges(), fixture_system()), "run-h",
                    tmp_path / "run-h")
    samples = list(SAMPLES.values())
    await collect(runner, samples)
    assert runner.compare_with_store(samples) == StoredSamples(changed=(), kept=frozenset(SAMPLES))

    older = json.dumps(json.loads(samples[1].model_dump_json()), indent=1)  # same contents, other bytes
    with contextlib.closing(sqlite3.connect(tmp_path / "store.sqlite")) as db, db:
        db.execute("UPDATE samples SET payload = ? WHERE run_id = ? AND sample_id = ?", (older, "run-h", samples[1].id))
    edited = samples[2].model_copy(update={"question": samples[2].question + " (edited)"})
    held = runner.compare_with_store([samples[0], samples[1], edited])
    assert held == StoredSamples(changed=(edited.id,), kept=frozenset({samples[0].id}))  # [1] is written again

    written: list[list[str]] = []
    monkeypatch.setattr(store, "get_samples", lambda *a, **k: pytest.fail("a resume parses no stored sample"))
    put = store.put_samples
    monkeypatch.setattr(store, "put_samples", lambda run_id, given: (written.append([s.id for s in given]),
                                                                     put(run_id, given))[1])
    await collect(runner, samples)
    assert written == [[samples[1].id]]
    assert runner.compare_with_store(samples) == StoredSamples(changed=(), kept=frozenset(SAMPLES))


async def test_samples_start_in_the_order_given(store: RecordStore, tmp_path: Path) -> None:
    """One sample at a time: the retrievals come in the dataset's order, whatever order the ids hash in."""
    system = fixture_system()
    for order in (["s3", "s1", "s2"], ["s2", "s3", "s1"]):
        runner = Runner(make_context(store, fixture_config(concurrency=1), fixture_judges(), system),
                        f"run-o-{order[0]}", tmp_path / f"run-o-{order[0]}")
        system.calls.clear()
        await collect(runner, [SAMPLES[i] for i in order])
        assert list(dict.fromkeys(c[1] for c in system.calls if c[0] == "retrieve")) == order


async def test_a_resume_cuts_a_torn_last_line_longer_than_a_read_block(store: RecordStore, tmp_path: Path) -> None:
    runner = Runner(make_context(store, fixture_config(), fixture_judges(), fixture_system()), "run-t",
                    tmp_path / "run-t")
    await collect(runner, SAMPLES.values())
    stream = tmp_path / "run-t" / DIAGNOSTICS_FILE
    first = stream.read_text().splitlines(keepends=True)[0]
    stream.write_text(first + '{"sample_id": "s2", "alignment_graph": "' + "x" * 200_000)  # torn, 3 blocks long
    await collect(runner, SAMPLES.values())
    lines = stream.read_text().splitlines(keepends=True)
    assert lines[0] == first and all(line.endswith("\n") for line in lines)
    assert sorted(json.loads(line)["sample_id"] for line in lines) == ["s1", "s2", "s3"]


async def test_a_resume_repairs_the_stream_file_a_kill_left_short_or_torn(store: RecordStore, tmp_path: Path) -> None:
    """kill -9 between a sample's commit and its line leaves the line out; in the middle of the write it leaves
    a torn line. The next run of the same id lists every finished sample once again, without asking anyone."""
    system, judges = fixture_system(), fixture_judges()
    runner = Runner(make_context(store, fixture_config(), judges, system), "run-k", tmp_path / "run-k")
    await collect(runner, SAMPLES.values())
    stream = tmp_path / "run-k" / DIAGNOSTICS_FILE
    lines = stream.read_text().splitlines(keepends=True)
    stream.write_text(lines[0] + lines[1][: len(lines[1]) // 2])  # the third line lost, the second torn
    calls = len(system.calls)

    await collect(runner, SAMPLES.values())
    repaired = stream.read_text()
    assert repaired.endswith("\n") and len(system.calls) == calls
    assert sorted(json.loads(line)["sample_id"] for line in repaired.splitlines()) == ["s1", "s2", "s3"]


# --------------------------------------------------------------------------- deferred review, rescore


async def test_deferred_review_then_rescore_makes_no_judge_or_system_call(
    store: RecordStore, tmp_path: Path, openai_server
) -> None:
    # The stored config names LLM judges at the fake server: rescore rebuilds them from it, and any call
    # they made would reach the server. The run itself uses scripted judges with the same ids.
    judge_ids = (f"openai:judge-a@{openai_server.base_url}", f"openai:judge-b@{openai_server.base_url}")
    system, judges = fixture_system(), fixture_judges(judge_ids)
    run_dir = tmp_path / "runs" / "run-d"
    runner = Runner(make_context(store, fixture_config(judge_ids), judges, system), "run-d", run_dir)
    first = {d.sample_id: d for d in await collect(runner, SAMPLES.values())}
    # the judges split on A3's one check: A3 waits for a person (it was unsupported, 2/3, on the first judge's no)
    assert first["s1"].unsupported_claims == ()
    assert values(first["s1"])["verifiableness"] == 1.0 and first["s1"].metric("verifiableness").n_unscored == 1

    check_id = escalated_check(store, "run-d")
    assert first["s1"].escalations == (check_id,)
    store.add_review(Review(run_id="run-d", check_id=check_id, reviewer="ann", action=ReviewAction.OVERRIDE,
                            label=Label.YES))
    calls = (len(system.calls), len(judges[0].calls), len(judges[1].calls))

    rescored = {d.sample_id: d for d in await arescore_run(store, "run-d", run_dir)}

    assert (len(system.calls), len(judges[0].calls), len(judges[1].calls)) == calls
    assert openai_server.count() == 0
    s1 = rescored["s1"]
    # the person's "yes" wins: all three claims are supported, none is left unsupported or pending
    assert values(s1)["verifiableness"] == 1.0
    assert s1.unsupported_claims == ()
    assert s1.escalations == ()
    assert s1.metric("verifiableness").n_escalated == 1  # it was escalated, and a person decided it
    assert {k: v for k, v in values(s1).items() if k != "verifiableness"} == {
        k: v for k, v in values(first["s1"]).items() if k != "verifiableness"}
    assert values(rescored["s2"]) == values(first["s2"]) and values(rescored["s3"]) == values(first["s3"])
    assert [e.status for e in rescored["s2"].elements] == [e.status for e in first["s2"].elements]
    decided = {r.check_id: r for r in store.get_reconciled("run-d")}[check_id]
    assert (decided.label, decided.method, decided.provisional) == (Label.YES, ReconcileMethod.HUMAN, False)
    assert store.pending_escalations("run-d") == []
    assert store.get_diagnostics("run-d", "s1") == [s1]
    assert summarize(store, "run-d").n_pending == 0
    with pytest.raises(ConditionUnavailable, match="replay"):  # what stood in for the system refuses any call
        await ReplaySystem("scripted-rag").retrieve(S1, 3, None)


# --------------------------------------------------------------------------- inline review


async def test_inline_review_interrupts_and_a_new_process_resumes(store: RecordStore, tmp_path: Path) -> None:
    run_dir = tmp_path / "runs" / "run-i"
    system, judges = fixture_system(), fixture_judges()
    runner = Runner(make_context(store, fixture_config(review_mode=ReviewMode.INLINE), judges, system),
                    "run-i", run_dir)
    streamed = await collect(runner, [S1, S3])
    assert [d.sample_id for d in streamed] == ["s3"]  # s3 has no escalation; s1 waits for a person
    assert store.get_diagnostics("run-i", "s1") == []

    (payload,) = await runner.pending_interrupts(S1)
    (item,) = payload
    check_id = escalated_check(store, "run-i")
    assert item["check"]["id"] == check_id
    assert item["provisional_label"] is None  # a 1-1 split has no label (it was the first judge's "no")
    assert {v["judge_id"]: v["label"] for v in item["verdicts"]} == {JUDGE_A: "no", JUDGE_B: "yes"}
    assert "judges split" in item["reason"]
    assert await runner.pending_interrupts(S3) == []

    script = DATA / "resume_inline.py"
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, str(script), str(store.path), str(run_dir), "run-i", "s1", check_id, "yes"],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert (out["judge_calls"], out["system_calls"]) == (0, 0)  # resumed at the review: nothing asked again
    assert out["diagnostics"]["sample_id"] == "s1"

    (review,) = store.latest_reviews("run-i").values()
    assert (review.check_id, review.reviewer, review.action, review.label) == (
        check_id, "ann", ReviewAction.OVERRIDE, Label.YES)
    (s1,) = store.get_diagnostics("run-i", "s1")
    assert values(s1)["verifiableness"] == 1.0
    assert s1.unsupported_claims == () and s1.escalations == ()
    assert store.pending_escalations("run-i") == []
    assert await runner.pending_interrupts(S1) == []


# --------------------------------------------------------------------------- kill -9, resume, lock


def judge_log(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def lost_calls(store: RecordStore, calls: list[dict]) -> int:
    """Calls whose verdicts did not all reach the store: the work in flight when the process died."""
    lost = 0
    for call in calls:
        stored = {v.check_id for v in store.get_verdicts(call["checks"], judge_id=call["judge"])}
        lost += not set(call["checks"]) <= stored
    return lost


async def test_resume_after_kill_repeats_only_work_in_flight_and_the_lock_refuses_a_second_process(
    tmp_path: Path,
) -> None:
    n = 8
    clean_log = tmp_path / "clean" / "calls.jsonl"
    clean_log.parent.mkdir()
    finished = await run_many.main(str(tmp_path / "clean" / "store.sqlite"), str(tmp_path / "clean" / "run"),
                                   "run-k", n, 0.0, clean_log)
    assert len(finished) == n
    uninterrupted = len(judge_log(clean_log))
    assert uninterrupted > 0

    home = tmp_path / "killed"
    home.mkdir()
    store_path, run_dir, log = home / "store.sqlite", home / "run", home / "calls.jsonl"
    process = await asyncio.to_thread(
        subprocess.Popen,
        [sys.executable, str(DATA / "run_many.py"), str(store_path), str(run_dir), "run-k", str(n), "0.2", str(log)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 90
        diagnostics_file = run_dir / DIAGNOSTICS_FILE
        while not (diagnostics_file.exists() and len(diagnostics_file.read_text().splitlines()) >= 3):
            assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
            assert time.monotonic() < deadline, "the run did not finish 3 samples in time"
            await asyncio.sleep(0.05)

        # While it is alive, a second process on the same run directory is refused.
        samples, system = many_samples(n)
        with RecordStore(store_path) as other_store:
            intruder = Runner(make_context(other_store, run_many.config(), [], system), "run-k", run_dir)
            with pytest.raises(RunLockedError, match=f"in use by process {process.pid}"):
                await collect(intruder, samples)
        os.kill(process.pid, signal.SIGKILL)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL

    killed_calls = judge_log(log)
    with RecordStore(store_path) as store:
        done_before = store.finished_sample_ids("run-k")
        in_flight = lost_calls(store, killed_calls)
    assert 3 <= len(done_before) < n
    assert (run_dir / "run.lock").exists()  # left behind by the killed process; its pid is dead

    finished = await run_many.main(str(store_path), str(run_dir), "run-k", n, 0.0, log)
    assert sorted(finished) == sorted(s.id for s in samples)
    total = len(judge_log(log))
    with RecordStore(store_path) as store:
        diagnostics = store.get_diagnostics("run-k")
    assert sorted(d.sample_id for d in diagnostics) == sorted(s.id for s in samples)
    assert all(d.status is SampleStatus.OK for d in diagnostics)
    assert uninterrupted <= total <= uninterrupted + in_flight
    assert not (run_dir / "run.lock").exists()


# --------------------------------------------------------------------------- bad inputs


async def test_a_failing_system_fails_only_its_sample_and_a_rerun_asks_it_again(
    store: RecordStore, tmp_path: Path
) -> None:
    broken = fixture_system(fail_retrieve=frozenset({"s2"}), fail_generate=frozenset({"s3"}))
    runner = Runner(make_context(store, fixture_config(), fixture_judges(), broken), "run-f", tmp_path / "run-f")
    by_id = {d.sample_id: d for d in await collect(runner, SAMPLES.values())}
    assert {k: d.status for k, d in by_id.items()} == {
        "s1": SampleStatus.OK, "s2": SampleStatus.FAILED, "s3": SampleStatus.FAILED}
    assert by_id["s2"].error == "retrieval failed: RuntimeError: index offline for s2"
    assert by_id["s3"].error == "RuntimeError: generator crashed on s3"
    assert values(by_id["s1"])["verifiableness"] == 1.0  # A3 split and left out (it was 2/3 on the first judge)
    summary = summarize(store, "run-f")
    assert (summary.n_samples, summary.n_failed) == (3, 2)
    assert dict(summary.failures) == {"s2": by_id["s2"].error, "s3": by_id["s3"].error}

    # The same run id with the system repaired: failed samples are evaluated again, finished ones are not.
    repaired = fixture_system()
    runner = Runner(make_context(store, fixture_config(), fixture_judges(), repaired), "run-f", tmp_path / "run-f")
    again = {d.sample_id: d for d in await collect(runner, SAMPLES.values())}
    assert {k: d.status for k, d in again.items()} == {k: SampleStatus.OK for k in ("s1", "s2", "s3")}
    assert {c[1] for c in repaired.calls} == {"s2", "s3"}
    assert values(again["s3"])["conciseness"] == 0.5
    assert values(again["s2"])["element_coverage"] == pytest.approx(1 / 3)
    # the run's checks are the successful attempts' checks, not also those the failed attempts planned
    assert store.count_checks("run-f") == sum(d.n_checks for d in again.values())


@pytest.mark.parametrize(("error", "reason"), [
    (RuntimeError("judge-b is down"), UnscoredReason.ERROR),
    (TimeoutError("judge-b did not answer in time"), UnscoredReason.TIMEOUT),
])
async def test_a_judge_failing_every_call_leaves_its_verdicts_unscored_and_the_run_finishes(
    store: RecordStore, tmp_path: Path, error: Exception, reason: UnscoredReason
) -> None:
    judges = [NeedleJudge(JUDGE_A, NEEDLES_A), InstrumentedJudge(JUDGE_B, error=error)]
    runner = Runner(make_context(store, fixture_config(), judges, fixture_system()), "run-j", tmp_path / "run-j")
    by_id = {d.sample_id: d for d in await collect(runner, SAMPLES.values())}

    assert {k: d.status for k, d in by_id.items()} == {k: SampleStatus.OK for k in N_CHECKS}
    assert {k: d.n_unscored for k, d in by_id.items()} == N_CHECKS  # every check: judge B's verdict
    # Judge A alone decides (1 of 1 scored agrees): the figures of the hand-computed fixture, no escalation.
    assert values(by_id["s1"]) == pytest.approx({
        "c_prec@3": 1 / 3, "c_ndcg@3": 0.6934264, "completeness": 1.0, "conciseness": 2 / 3,
        "verifiableness": 2 / 3, "element_answer_coverage": 0.5, "element_coverage": 1.0,
    })
    assert all(d.escalations == () for d in by_id.values())
    assert [e.status for e in by_id["s2"].elements][1:] == ["retrieval_gap", "document_gap"]

    checks = store.checks_for("run-j")
    b_verdicts = store.get_verdicts([c.id for c in checks], judge_id=JUDGE_B)
    assert len(b_verdicts) == len(checks) == sum(N_CHECKS.values())
    assert {(v.status, v.unscored_reason) for v in b_verdicts} == {(VerdictStatus.UNSCORED, reason)}
    assert {v.detail for v in b_verdicts} == {f"{type(error).__name__}: {error}"}
    assert all(v.label is None and v.score is None for v in b_verdicts)

    summary = summarize(store, "run-j")
    ok = summary.n_verdicts - summary.n_unscored
    assert (summary.n_checks, summary.n_verdicts, summary.n_unscored, ok) == (61, 122, 61, 61)
    assert (summary.n_escalated, summary.n_pending, summary.n_failed) == (0, 0, 0)
    reconciled = store.get_reconciled("run-j")
    assert {(r.n_scored, r.n_unscored) for r in reconciled} == {(1, 1)}


# --------------------------------------------------------------------------- transient failures, edited samples


@dataclass
class FlakyJudge:
    """Judge B (NEEDLES_B), but raising `error` for every batch of a sample in `failing`; logs the checks it
    was asked about."""

    error: BaseException
    failing: set[str]
    inner: NeedleJudge = field(default_factory=lambda: NeedleJudge(JUDGE_B, NEEDLES_B))
    asked: list[str] = field(default_factory=list)
    judge_id: str = JUDGE_B

    async def judge(self, kind: CheckKind, checks) -> list:
        self.asked.extend(c.id for c in checks)
        if {c.sample_id for c in checks} & self.failing:
            raise self.error
        return await self.inner.judge(kind, checks)


@dataclass
class UnparsedJudge:
    """Judge B giving up on s2 for a lasting reason (its output never validated): unscored, parse_failure."""

    inner: NeedleJudge = field(default_factory=lambda: NeedleJudge(JUDGE_B, NEEDLES_B))
    asked: list[str] = field(default_factory=list)
    judge_id: str = JUDGE_B

    async def judge(self, kind: CheckKind, checks) -> list:
        self.asked.extend(c.id for c in checks)
        if any(c.sample_id == "s2" for c in checks):
            return [Verdict.unscored(c.id, JUDGE_B, UnscoredReason.PARSE_FAILURE, "no JSON") for c in checks]
        return await self.inner.judge(kind, checks)


async def plan_and_collect(runner: Runner, samples) -> tuple[list[ResumePlan], list]:
    plans: list[ResumePlan] = []
    streamed = [d async for d in runner.astream(list(samples), on_start=plans.append)]
    return plans, streamed


@pytest.mark.parametrize(("error", "reason"), [
    (RuntimeError("judge-b is down"), UnscoredReason.ERROR),
    (TimeoutError("judge-b did not answer in time"), UnscoredReason.TIMEOUT),
])
async def test_the_same_run_again_asks_only_the_transient_unscored_verdicts_again(
    store: RecordStore, tmp_path: Path, error: Exception, reason: UnscoredReason
) -> None:
    """docs/RELIABILITY.md: a run with the same id asks transient ones again. s2's batches failed at judge B
    (every one of its 15 checks unscored); the same run again re-opens s2 alone, asks judge B exactly those 15
    checks, asks judge A and the system nothing, and ends with the figures of a run that never failed."""
    flaky = FlakyJudge(error, failing={"s2"})
    judge_a, system = NeedleJudge(JUDGE_A, NEEDLES_A), fixture_system()
    runner = Runner(make_context(store, fixture_config(), [judge_a, flaky], system), "run-t", tmp_path / "run-t")
    plans, first = await plan_and_collect(runner, SAMPLES.values())
    assert plans == [ResumePlan()]
    assert {d.sample_id: d.n_unscored for d in first} == {"s1": 0, "s2": N_CHECKS["s2"], "s3": 0}
    unscored = {v.check_id for v in store.get_verdicts([c.id for c in store.checks_for("run-t", "s2")], JUDGE_B)
                if (v.status, v.unscored_reason) == (VerdictStatus.UNSCORED, reason)}
    assert len(unscored) == N_CHECKS["s2"]

    flaky.failing.clear()  # the endpoint is back
    flaky.asked.clear()
    calls = (len(system.calls), len(judge_a.calls))
    plans, again = await plan_and_collect(runner, SAMPLES.values())
    assert plans == [ResumePlan(stored=("s1", "s3"), reopened=("s2",))]
    assert [d.sample_id for d in again] == ["s1", "s3", "s2"]  # the stored ones first, then the re-opened one
    assert sorted(flaky.asked) == sorted(unscored)  # only those verdicts were asked again, each once
    assert (len(system.calls), len(judge_a.calls)) == calls

    with RecordStore(tmp_path / "clean.sqlite") as clean_store:
        clean = Runner(make_context(clean_store, fixture_config(), fixture_judges(), fixture_system()), "run-t",
                       tmp_path / "clean")
        expected = {d.sample_id: d for d in await collect(clean, SAMPLES.values())}
    assert {d.sample_id: (values(d), d.n_unscored, d.escalations) for d in again} == {
        k: (values(d), d.n_unscored, d.escalations) for k, d in expected.items()}
    summary = summarize(store, "run-t")
    assert (summary.n_samples, summary.n_checks, summary.n_verdicts, summary.n_unscored, summary.n_escalated) == (
        3, 61, 122, 0, 1)
    lines = (tmp_path / "run-t" / DIAGNOSTICS_FILE).read_text().splitlines()
    assert sorted(json.loads(line)["sample_id"] for line in lines) == ["s1", "s2", "s3"]  # each once, as it is now
    assert json.loads(lines[-1])["n_unscored"] == 0

    flaky.asked.clear()  # nothing transient is left: a third run asks nobody anything
    plans, third = await plan_and_collect(runner, SAMPLES.values())
    assert plans == [ResumePlan(stored=("s1", "s2", "s3"))] and flaky.asked == []


async def test_lasting_unscored_verdicts_are_kept_and_not_asked_again(store: RecordStore, tmp_path: Path) -> None:
    judge_b = UnparsedJudge()
    judges = [NeedleJudge(JUDGE_A, NEEDLES_A), judge_b]
    runner = Runner(make_context(store, fixture_config(), judges, fixture_system()), "run-p", tmp_path / "run-p")
    await collect(runner, SAMPLES.values())
    asked = len(judge_b.asked)
    plans, again = await plan_and_collect(runner, SAMPLES.values())
    assert plans == [ResumePlan(stored=("s1", "s2", "s3"))]
    assert len(judge_b.asked) == asked
    assert {d.sample_id: d.n_unscored for d in again} == {"s1": 0, "s2": N_CHECKS["s2"], "s3": 0}


async def test_a_finished_sample_whose_split_failed_is_reopened(store: RecordStore, tmp_path: Path) -> None:
    """A split is pinned to the run when it is scored; a failed one leaves no record but the missing pin."""
    runner = Runner(make_context(store, fixture_config(), fixture_judges(), fixture_system()), "run-s",
                    tmp_path / "run-s")
    await collect(runner, SAMPLES.values())
    with contextlib.closing(sqlite3.connect(store.path)) as conn, conn:  # as if s3's element split had failed
        conn.execute("DELETE FROM run_splits WHERE run_id = 'run-s' AND sample_id = 's3' AND kind = 'elements'")
    plans, again = await plan_and_collect(runner, SAMPLES.values())
    assert plans == [ResumePlan(stored=("s1", "s2"), reopened=("s3",))]
    assert {p.kind for p in store.pinned_splits("run-s", "s3")} == {
        DecompositionKind.SUBQUERIES, DecompositionKind.CLAIMS, DecompositionKind.ELEMENTS}


async def test_a_run_over_edited_samples_is_refused_naming_them_and_nothing_is_written(
    store: RecordStore, tmp_path: Path
) -> None:
    system, judges = fixture_system(), fixture_judges()
    runner = Runner(make_context(store, fixture_config(), judges, system), "run-e", tmp_path / "run-e")
    first = {d.sample_id: d for d in await collect(runner, SAMPLES.values())}
    calls = (len(system.calls), len(judges[0].calls), len(judges[1].calls))
    edited = [S1.model_copy(update={"reference_answer": "Acme was founded by Grace Hopper."}), SAMPLES["s2"],
              S3.model_copy(update={"question": "Who runs Acme now?"})]
    plans: list[ResumePlan] = []
    with pytest.raises(SamplesChangedError) as refused:
        [d async for d in runner.astream(edited, dataset="data.jsonl", on_start=plans.append)]
    assert refused.value.sample_ids == ("s1", "s3")
    assert str(refused.value) == (
        "run run-e evaluated other contents of 2 of these samples (s1, s3): its figures are not theirs. Evaluate "
        "the changed samples in a new run with `ragcourt rerun --changed run-e --dataset data.jsonl` (the others "
        "are copied), or give another run id")
    assert plans == []  # nothing announced, nothing asked, nothing written
    assert (len(system.calls), len(judges[0].calls), len(judges[1].calls)) == calls
    assert {s.id: s for s in store.get_samples("run-e")} == SAMPLES
    assert {d.sample_id: d for d in store.get_diagnostics("run-e")} == first
    assert not (tmp_path / "run-e" / "run.lock").exists()


async def test_a_stream_file_listing_a_sample_twice_is_written_again_once_each(
    store: RecordStore, tmp_path: Path
) -> None:
    """A kill between a re-opened sample's new line and the rewrite at the end leaves it listed twice."""
    runner = Runner(make_context(store, fixture_config(), fixture_judges(), fixture_system()), "run-w",
                    tmp_path / "run-w")
    await collect(runner, SAMPLES.values())
    stream = tmp_path / "run-w" / DIAGNOSTICS_FILE
    lines = stream.read_text().splitlines(keepends=True)
    stream.write_text("".join([*lines, lines[0]]))
    await collect(runner, SAMPLES.values())
    listed = [json.loads(line) for line in stream.read_text().splitlines()]
    assert sorted(d["sample_id"] for d in listed) == ["s1", "s2", "s3"]
    stored = {d.sample_id: json.loads(d.stream_line()) for d in store.get_diagnostics("run-w")}
    assert all(d == stored[d["sample_id"]] for d in listed)  # each line as the store holds the sample


async def test_re_opening_part_of_a_run_keeps_the_other_samples_in_the_stream_file(
    store: RecordStore, tmp_path: Path
) -> None:
    flaky = FlakyJudge(RuntimeError("judge-b is down"), failing={"s2"})
    context = make_context(store, fixture_config(), [NeedleJudge(JUDGE_A, NEEDLES_A), flaky], fixture_system())
    runner = Runner(context, "run-u", tmp_path / "run-u")
    await collect(runner, SAMPLES.values())
    flaky.failing.clear()
    plans, again = await plan_and_collect(runner, [SAMPLES["s2"]])  # only s2 given this time (as with --limit)
    assert plans == [ResumePlan(reopened=("s2",))] and [d.n_unscored for d in again] == [0]
    listed = [json.loads(line) for line in (tmp_path / "run-u" / DIAGNOSTICS_FILE).read_text().splitlines()]
    assert sorted(d["sample_id"] for d in listed) == ["s1", "s2", "s3"]
    assert next(d for d in listed if d["sample_id"] == "s2")["n_unscored"] == 0


# --------------------------------------------------------------------------- samples as a stream


class DrawnSamples:
    """Samples made as they are iterated, afresh on each iteration (as data.reading.SampleStream reads a file),
    counting how many the current iteration has handed out."""

    def __init__(self, samples: list) -> None:
        self.samples, self.drawn, self.iterations = samples, 0, 0

    def __iter__(self):
        self.iterations += 1
        self.drawn = 0
        for sample in self.samples:
            self.drawn += 1
            yield sample.model_copy()


async def test_a_run_over_a_stream_draws_only_a_window_of_samples_ahead_of_the_finished_ones(
        store: RecordStore, tmp_path: Path) -> None:
    samples, system = many_samples(12)
    config = run_many.config().model_copy(update={"concurrency": 2})
    judges = [InstrumentedJudge(j, BaselineJudge(BaselineRule.LEXICAL)) for j in run_many.JUDGE_IDS]
    runner = Runner(make_context(store, config, judges, system), "run-w", tmp_path / "run-w")
    stream = DrawnSamples(samples)
    ahead, finished = [], []
    async for diagnostics in runner.astream(stream):
        finished.append(diagnostics.sample_id)
        ahead.append(stream.drawn - len(finished))
    assert sorted(finished) == sorted(s.id for s in samples)
    # 2 slots x 2 in flight each: never more than 4 samples drawn beyond those finished (all 12 were, before)
    assert max(ahead) <= 4
    assert store.finished_sample_ids("run-w") == {s.id for s in samples}

    again = [d.sample_id async for d in runner.astream(stream)]  # a resume reads the stream again, in order
    assert again == [s.id for s in samples]
