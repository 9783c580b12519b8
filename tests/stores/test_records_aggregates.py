"""The record store's SQL aggregates equal the same figures computed over the records its listings return.

The store holds two runs sharing one check (checks are global), ok and unscored verdicts of two judges
(one without a model id), escalations with and without reviews, a failed sample, n/a metrics, and a check
linked to the run that is not stored (left out by `checks_for`, so by the counts too). Each test runs on
SQLite and on PostgreSQL (part of the store contract, with test_store_contract.py).
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from ragcourt.analysis.summary import metric_totals, summarize
from ragcourt.metrics.elements import element_outcome, split_attribution
from ragcourt.report.data import tally_verdicts
from ragcourt.schema import (
    NORMAL,
    Check,
    CheckKind,
    Element,
    ElementOutcome,
    ElementStatus,
    Label,
    MetricValue,
    Reconciled,
    ReconcileMethod,
    Review,
    ReviewAction,
    Sample,
    SampleDiagnostics,
    SampleStatus,
    TokenUsage,
    UnscoredReason,
    Verdict,
    VerdictStatus,
)
from ragcourt.stores import MetricTotals, RecordStore, SampleCheckCounts, VerdictTally

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
RUN, OTHER = "run", "other"


def _check(sample_id: str, n: int) -> Check:
    return Check(kind=CheckKind.CLAIM_SUPPORTED, sample_id=sample_id, condition=NORMAL, subject_id=f"c{n}",
                 subject_text=f"claim {n} of {sample_id}", target_id="chunk", target_text="text")


def _ok(check: Check, judge: str, model: str | None, prompt: int, completion: int) -> Verdict:
    return Verdict(check_id=check.id, judge_id=judge, model_id=model, status=VerdictStatus.OK, label=Label.YES,
                   usage=TokenUsage(prompt_tokens=prompt, completion_tokens=completion))


def _unscored(check: Check, judge: str, model: str | None, prompt: int) -> Verdict:
    return Verdict(check_id=check.id, judge_id=judge, model_id=model, status=VerdictStatus.UNSCORED,
                   unscored_reason=UnscoredReason.TIMEOUT, usage=TokenUsage(prompt_tokens=prompt))


def _reconciled(run_id: str, check: Check, escalated: bool) -> Reconciled:
    return Reconciled(run_id=run_id, check_id=check.id, kind=check.kind, sample_id=check.sample_id,
                      label=None if escalated else Label.YES, method=ReconcileMethod.MAJORITY, n_scored=1,
                      n_unscored=1, escalated=escalated, escalation_reason="judges disagree" if escalated else None)


def _review(check: Check, action: ReviewAction, minutes: int, run_id: str = RUN) -> Review:
    return Review(run_id=run_id, check_id=check.id, reviewer="ann", action=action,
                  label=None if action is ReviewAction.SKIP else Label.NO, created_at=T0 + timedelta(minutes=minutes))


def _metric(name: str, value: float | None, unscored: int = 0, escalated: int = 0) -> MetricValue:
    return MetricValue(name=name, value=value, na_reason=None if value is not None else "no claims",
                       n=3, n_unscored=unscored, n_escalated=escalated)


def _element(n: int, status: ElementStatus) -> ElementOutcome:
    return ElementOutcome(element_id=f"e{n}", text=f"element {n}", in_context=True, in_loose_context=None,
                          in_answer=status is ElementStatus.ANSWERED, status=status)


S1 = [_check("s1", n) for n in range(3)]
S2 = [_check("s2", n) for n in range(2)]
S3 = [_check("s3", 0)]
NOT_STORED = _check("s3", 9)  # linked but never written


@pytest.fixture
def store(store_location):  # every backend (tests/stores/conftest.py)
    store = RecordStore(store_location)
    store.put_samples(RUN, [Sample(id=i, question=f"question {i}?") for i in ("s1", "s2", "s3")])
    store.put_samples(OTHER, [Sample(id="s1", question="question s1?")])
    store.put(*S1, *S2, *S3)
    store.link_checks(RUN, "s1", [c.id for c in S1])
    store.link_checks(RUN, "s2", [c.id for c in S2])
    store.link_checks(RUN, "s3", [S3[0].id, NOT_STORED.id])
    store.link_checks(OTHER, "s1", [S1[0].id])  # the other run shares one check
    store.put(
        _ok(S1[0], "gpt", "gpt-x", 100, 10), _ok(S1[0], "lex", "lexical", 0, 0),
        _unscored(S1[1], "gpt", "gpt-x", 80), _ok(S1[1], "lex", "lexical", 0, 0),
        _ok(S1[2], "gpt", "gpt-x", 120, 12), _unscored(S1[2], "lex", None, 0),
        _ok(S2[0], "gpt", "gpt-y", 50, 5), _ok(S2[0], "lex", "lexical", 0, 0),
        _unscored(S2[1], "gpt", "gpt-y", 70),
        _ok(S3[0], "gpt", "gpt-x", 30, 3),
    )
    store.put(
        _reconciled(RUN, S1[0], False), _reconciled(RUN, S1[1], True), _reconciled(RUN, S1[2], True),
        _reconciled(RUN, S2[0], True), _reconciled(RUN, S2[1], False), _reconciled(RUN, S3[0], True),
        _reconciled(OTHER, S1[0], True),
    )
    # S1[1]: decided (override, then a later skip: still decided); S1[2]: only skipped (pending);
    # S2[0]: accepted; S3[0]: no review (pending); the other run's escalation is reviewed in its own run
    store.add_review(_review(S1[1], ReviewAction.OVERRIDE, 1))
    store.add_review(_review(S1[1], ReviewAction.SKIP, 2))
    store.add_review(_review(S1[2], ReviewAction.SKIP, 3))
    store.add_review(_review(S2[0], ReviewAction.ACCEPT, 4))
    store.add_review(_review(S1[0], ReviewAction.ACCEPT, 5, run_id=OTHER))
    store.put(
        SampleDiagnostics(run_id=RUN, sample_id="s1", question="question s1?",
                          metrics=(_metric("completeness", 1 / 3, unscored=1), _metric("verifiableness", None, 0, 2)),
                          elements=(_element(1, ElementStatus.ANSWERED), _element(2, ElementStatus.RETRIEVAL_GAP),
                                    _element(3, ElementStatus.UNDECIDED))),
        SampleDiagnostics(run_id=RUN, sample_id="s2", question="question s2?", status=SampleStatus.FAILED,
                          error="generator crashed"),
        SampleDiagnostics(run_id=RUN, sample_id="s3", question="question s3?",
                          metrics=(_metric("verifiableness", 0.1), _metric("completeness", 0.7, escalated=1)),
                          elements=(_element(4, ElementStatus.GENERATION_GAP),
                                    _element(5, ElementStatus.RETRIEVAL_GAP))),
        SampleDiagnostics(run_id=OTHER, sample_id="s1", question="question s1?",
                          metrics=(_metric("completeness", 0.0),)),
    )
    yield store
    store.close()


def test_count_checks_is_the_number_checks_for_lists(store):
    assert store.count_checks(RUN) == len(store.checks_for(RUN)) == 6  # the unstored link is left out
    assert store.count_checks(OTHER) == len(store.checks_for(OTHER)) == 1
    assert store.count_checks("missing") == 0


def test_verdict_tallies_group_the_run_verdicts_by_judge_model_and_status(store):
    tallies = store.verdict_tallies(RUN)
    verdicts = store.get_verdicts([c.id for c in store.checks_for(RUN)])
    assert sorted(tallies, key=repr) == sorted(tally_verdicts(verdicts), key=repr)
    assert set(tallies) == {
        VerdictTally("gpt", "gpt-x", VerdictStatus.OK, 3, 250, 25),
        VerdictTally("gpt", "gpt-x", VerdictStatus.UNSCORED, 1, 80, 0),
        VerdictTally("gpt", "gpt-y", VerdictStatus.OK, 1, 50, 5),
        VerdictTally("gpt", "gpt-y", VerdictStatus.UNSCORED, 1, 70, 0),
        VerdictTally("lex", "lexical", VerdictStatus.OK, 3, 0, 0),
        VerdictTally("lex", None, VerdictStatus.UNSCORED, 1, 0, 0),
    }
    # the other run sees only its one check's two verdicts
    assert {(t.judge_id, t.n_verdicts) for t in store.verdict_tallies(OTHER)} == {("gpt", 1), ("lex", 1)}


def test_escalation_counts_equal_the_reconciled_records(store):
    assert store.count_escalated(RUN) == sum(r.escalated for r in store.get_reconciled(RUN)) == 4
    # pending: S1[2] (only skipped) and S3[0] (no review); S1[1] and S2[0] have a person's decision
    pending = store.pending_escalations(RUN)
    assert store.count_pending_escalations(RUN) == len(pending) == 2
    assert {r.check_id for r in pending} == {S1[2].id, S3[0].id}
    assert store.count_escalated(OTHER) == 1 and store.count_pending_escalations(OTHER) == 0


def test_check_counts_by_sample_equal_grouping_the_records(store):
    checks = store.checks_for(RUN)
    reconciled = {r.check_id: r for r in store.get_reconciled(RUN)}
    reviews = store.latest_reviews(RUN)
    expected: dict[str, list[int]] = {}
    for c in checks:
        counts = expected.setdefault(c.sample_id, [0, 0, 0])
        counts[0] += 1
        counts[1] += c.id in reconciled and reconciled[c.id].escalated
        counts[2] += c.id in reviews
    found = store.check_counts_by_sample(RUN)
    assert {k: [v.n_checks, v.n_escalated, v.n_reviewed] for k, v in found.items()} == expected
    assert found == {"s1": SampleCheckCounts(3, 2, 2), "s2": SampleCheckCounts(2, 1, 1),
                     "s3": SampleCheckCounts(1, 1, 0)}
    assert store.check_counts_by_sample(OTHER) == {"s1": SampleCheckCounts(1, 1, 1)}


def test_diagnostics_aggregates_equal_reading_the_diagnostics(store):
    diagnostics = store.get_diagnostics(RUN)
    assert store.count_diagnostics(RUN) == len(diagnostics) == 3
    assert store.failed_samples(RUN) == [(d.sample_id, d.error) for d in diagnostics
                                         if d.status is SampleStatus.FAILED] == [("s2", "generator crashed")]
    totals = {t.name: t for t in store.metric_totals(RUN)}
    for name, total in totals.items():
        metrics = [m for d in diagnostics for m in d.metrics if m.name == name]
        assert total.values == tuple(m.value for m in metrics if m.value is not None)
        assert (total.n_na, total.n_unscored, total.n_escalated) == (
            sum(m.value is None for m in metrics), sum(m.n_unscored for m in metrics),
            sum(m.n_escalated for m in metrics))
    assert store.metric_totals(RUN) == metric_totals(diagnostics)  # the summary's own, over records
    # the very floats, in diagnostics order
    assert totals == {"completeness": MetricTotals("completeness", (1 / 3, 0.7), 0, 1, 1),
                      "verifiableness": MetricTotals("verifiableness", (0.1,), 1, 0, 2)}
    statuses = store.element_status_counts(RUN)
    assert statuses == Counter(e.status for d in diagnostics for e in d.elements)
    assert statuses == {ElementStatus.ANSWERED: 1, ElementStatus.RETRIEVAL_GAP: 2, ElementStatus.UNDECIDED: 1,
                        ElementStatus.GENERATION_GAP: 1}
    graph = {"nodes": [{"id": "claim:c1", "kind": "claim", "item_id": "c1", "text": "x"}], "edges": []}
    store.put(diagnostics[0].model_copy(update={"alignment_graph": graph}))
    assert store.get_diagnostics(RUN)[0].alignment_graph == graph
    assert store.get_diagnostics_without_graphs(RUN) == [d.model_copy(update={"alignment_graph": None})
                                                         for d in store.get_diagnostics(RUN)]
    assert store.metric_totals(OTHER) == [MetricTotals("completeness", (0.0,), 0, 0, 0)]


def test_drill_down_reads_select_by_sample_and_check(store):
    assert store.sample_questions(RUN) == [("s1", "question s1?"), ("s2", "question s2?"), ("s3", "question s3?")]
    assert [s.id for s in store.get_samples(RUN, ["s3", "s1"])] == ["s1", "s3"]  # stored order
    every = store.checks_for(RUN)
    assert store.checks_of_samples(RUN, ["s1", "s2", "s3"]) == every
    assert store.checks_of_samples(RUN, ["s3", "s1"]) == [c for c in every if c.sample_id in {"s1", "s3"}]
    assert store.checks_of_samples(OTHER, ["s1"]) == [S1[0]]
    ids = [S2[0].id, S1[2].id, "unknown"]
    assert store.reconciled_of_checks(RUN, ids) == [r for r in store.get_reconciled(RUN) if r.check_id in ids]
    assert [r.run_id for r in store.reconciled_of_checks(OTHER, [S1[0].id])] == [OTHER]


def test_opening_a_store_written_before_the_tally_columns_fills_them_in(tmp_path):
    """A store of the same schema version whose verdicts table lacks the tally columns and indexes (as
    written before they existed) is brought up to date on open, and tallies its old verdicts."""
    import sqlite3

    path = tmp_path / "old.sqlite"
    checks = [_check("s1", 0), _check("s1", 1)]
    with RecordStore(path) as store:
        store.put(*checks)
        store.link_checks(RUN, "s1", [c.id for c in checks])
    with sqlite3.connect(path) as conn:  # the layout before: key columns, status and the payload
        conn.execute("DROP TABLE verdicts")
        conn.execute("CREATE TABLE verdicts (check_id NOT NULL, judge_id NOT NULL, status, payload, "
                     "PRIMARY KEY (check_id, judge_id))")
        conn.execute("DROP INDEX checks_by_sample_id")
        conn.execute("DROP INDEX reconciled_by_run_id_escalated")
        for verdict in (_ok(checks[0], "gpt", "gpt-x", 100, 10), _unscored(checks[1], "gpt", None, 80)):
            conn.execute("INSERT INTO verdicts VALUES (?, ?, ?, ?)",
                         (verdict.check_id, verdict.judge_id, str(verdict.status), verdict.model_dump_json()))
    with RecordStore(path) as store:
        assert set(store.verdict_tallies(RUN)) == {VerdictTally("gpt", "gpt-x", VerdictStatus.OK, 1, 100, 10),
                                                   VerdictTally("gpt", None, VerdictStatus.UNSCORED, 1, 80, 0)}
        store.put(_ok(checks[1], "lex", "lexical", 0, 0))  # new writes fill the columns themselves
        assert VerdictTally("lex", "lexical", VerdictStatus.OK, 1, 0, 0) in store.verdict_tallies(RUN)
    with sqlite3.connect(path) as conn:
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert {"checks_by_sample_id", "checks_by_id_sample_id", "reconciled_by_run_id_escalated",
            "verdicts_by_check_id_judge_id_status_model_id_prompt_tokens_completion_tokens"} <= names


def test_summary_from_sql_equals_the_summary_over_read_diagnostics(store):
    from_sql = summarize(store, RUN)
    assert from_sql == summarize(store, RUN, store.verdict_tallies(RUN), store.get_diagnostics_without_graphs(RUN))
    assert (from_sql.n_samples, from_sql.n_failed, from_sql.n_checks, from_sql.n_verdicts) == (3, 1, 6, 10)
    assert (from_sql.n_unscored, from_sql.n_escalated, from_sql.n_pending) == (3, 4, 2)
    # gpt: S1[1] and S2[1] of its 6 verdicts; lex: S1[2] of its 4
    assert from_sql.unscored_by_judge == (("gpt", 2, 6), ("lex", 1, 4))
    assert from_sql.failures == (("s2", "generator crashed"),)
    completeness, verifiableness = from_sql.metrics
    assert completeness.mean == (1 / 3 + 0.7) / 2 and (completeness.n_unscored, completeness.n_escalated) == (1, 1)
    assert verifiableness.mean == 0.1 and verifiableness.n_na == 1 and verifiableness.n_escalated == 2
    # decided missing elements: retrieval 2, generation 1 (the undecided one is left out)
    assert from_sql.element_shares == {"retrieval_gap": 2 / 3, "generation_gap": 1 / 3, "document_gap": 0.0}


def test_split_elements_attribution_sums_in_sql_as_over_the_records(tmp_path) -> None:
    """Judges-split elements are shared out in fractions: the summary read from SQL aggregates gives the gap
    shares the diagnostics give. Split parts: answered 0.5 + 0.5, generation 0.5 + 0.5 + 0.25, retrieval
    0.5 + 0.25; gaps 1.25 + 0.75 = 2."""
    element = Element(id="e", text="e", index=0)
    outcomes = (element_outcome(element, True, None, True), element_outcome(element, True, None, 0.5),
                element_outcome(element, 0.5, True, False), element_outcome(element, 0.5, True, 0.5))
    assert [o.status for o in outcomes] == [ElementStatus.ANSWERED] + [ElementStatus.JUDGES_SPLIT] * 3
    with RecordStore(tmp_path / "store.sqlite") as store:
        store.put(SampleDiagnostics(run_id=RUN, sample_id="s1", question="q?", elements=outcomes[:2]),
                  SampleDiagnostics(run_id=RUN, sample_id="s2", question="q?", elements=outcomes[2:]))
        assert store.element_split_attribution(RUN) == split_attribution(outcomes) == {
            ElementStatus.ANSWERED: 1.0, ElementStatus.GENERATION_GAP: 1.25, ElementStatus.RETRIEVAL_GAP: 0.75}
        from_sql = summarize(store, RUN)
        from_records = summarize(store, RUN, diagnostics=store.get_diagnostics(RUN))
    assert from_sql.element_shares == from_records.element_shares == pytest.approx(
        {"generation_gap": 1.25 / 2, "retrieval_gap": 0.75 / 2, "document_gap": 0.0})


def test_flagged_figures_and_failed_splits_count_in_sql_as_over_the_records(store):
    """A run whose s1 lost its claim split (two figures flagged: one judged without it, one n/a) and whose s2
    lost its question and claim splits; the fixture's runs, stored without any flag field, count none."""
    from ragcourt.schema import DecompositionKind, FigureFlag, InputFlag

    kinds = DecompositionKind
    without = InputFlag(cause=FigureFlag.JUDGED_WITHOUT_SPLIT, splits=(kinds.CLAIMS,))
    store.put(
        SampleDiagnostics(run_id="flagged", sample_id="s1", question="q1", failed_splits=(kinds.CLAIMS,),
                          metrics=(MetricValue(name="c_prec", value=0.5, n=2, flag=without),
                                   MetricValue(name="completeness", value=None, na_reason="no claims",
                                               flag=InputFlag(cause=FigureFlag.SPLIT_FAILED, splits=(kinds.CLAIMS,))))),
        SampleDiagnostics(run_id="flagged", sample_id="s2", question="q2",
                          failed_splits=(kinds.SUBQUERIES, kinds.CLAIMS),
                          metrics=(MetricValue(name="element_coverage", value=1.0, n=1, flag=without),)),
        SampleDiagnostics(run_id="flagged", sample_id="s3", question="q3",
                          metrics=(MetricValue(name="c_prec", value=0.25, n=2),)),
    )
    assert (store.count_failed_splits("flagged"), store.count_flagged_samples("flagged")) == (3, 2)
    assert (store.count_failed_splits(RUN), store.count_flagged_samples(RUN)) == (0, 0)
    totals = {t.name: t for t in store.metric_totals("flagged")}
    assert totals["c_prec"] == MetricTotals("c_prec", (0.5, 0.25), 0, 0, 0, flagged=(True, False))
    assert totals["completeness"].flagged == ()  # an n/a figure has no value to leave out
    assert store.metric_totals("flagged") == metric_totals(store.get_diagnostics("flagged"))
    from_sql = summarize(store, "flagged")
    assert from_sql == summarize(store, "flagged", store.verdict_tallies("flagged"),
                                 store.get_diagnostics_without_graphs("flagged"))
    c_prec = next(row for row in from_sql.metrics if row.name == "c_prec")
    assert (c_prec.mean, c_prec.n_flagged, c_prec.gated_mean(), c_prec.gated_mean(count_flagged=True)) == (
        0.375, 1, 0.25, 0.375)
    assert "0 unscored verdicts, 3 failed splits, 0 escalated" in from_sql.header()
    assert from_sql.flagged_line().startswith("flagged: 2 figures of 2 samples were judged in a call without")
