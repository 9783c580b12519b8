"""The report over SQL aggregates: the same figures as reading every record, a capped drill-down that keeps
the questions needing attention, and exports that refuse to cover only part of a run."""

from __future__ import annotations

import pandas as pd
import pytest
from typer.testing import CliRunner

from ragcourt.cli import app
from ragcourt.report import html as report_html
from ragcourt.report.data import collect, drill_down_ids, judge_usage
from ragcourt.report.export import export_run, export_tables, report_tables
from ragcourt.report.html import render_report
from ragcourt.report.sections import method_sections
from ragcourt.schema import (
    NORMAL,
    Answer,
    Check,
    CheckKind,
    Label,
    MetricValue,
    Reconciled,
    ReconcileMethod,
    Review,
    ReviewAction,
    RunInfo,
    Sample,
    SampleDiagnostics,
    SampleStatus,
    TokenUsage,
    UnscoredReason,
    Verdict,
    VerdictStatus,
)
from ragcourt.stores.records import RecordStore

IDS = ("s1", "s2", "s3", "s4", "s5")


def _check(sample_id: str, n: int) -> Check:
    return Check(kind=CheckKind.CLAIM_SUPPORTED, sample_id=sample_id, condition=NORMAL, subject_id=f"c{n}",
                 subject_text=f"claim {n} of {sample_id}", target_id="answer", target_text="text")


@pytest.fixture
def store(tmp_path):
    """Five questions with two checks each; s4 failed; one check of s5 is escalated and reviewed."""
    store = RecordStore(tmp_path / "store.sqlite")
    store.put(RunInfo(run_id="r", dataset="d", system="sys", config={"methods": ["qcare"]}))
    store.put_samples("r", [Sample(id=i, question=f"question {i}?") for i in IDS])
    for index, sample_id in enumerate(IDS):
        checks = [_check(sample_id, 0), _check(sample_id, 1)]
        store.put(*checks)
        store.link_checks("r", sample_id, [c.id for c in checks])
        store.put(Answer(run_id="r", sample_id=sample_id, condition=NORMAL, text=f"answer {sample_id}"))
        store.put(
            Verdict(check_id=checks[0].id, judge_id="gpt", model_id="gpt-x", status=VerdictStatus.OK,
                    label=Label.YES, usage=TokenUsage(prompt_tokens=100 + index, completion_tokens=7)),
            Verdict(check_id=checks[1].id, judge_id="gpt", model_id="gpt-x", status=VerdictStatus.UNSCORED,
                    unscored_reason=UnscoredReason.TIMEOUT, usage=TokenUsage(prompt_tokens=33)),
            Verdict(check_id=checks[0].id, judge_id="lex", model_id="lexical", status=VerdictStatus.OK,
                    label=Label.NO),
        )
        escalated = sample_id == "s5"
        store.put(Reconciled(run_id="r", check_id=checks[0].id, kind=checks[0].kind, sample_id=sample_id,
                             label=None if escalated else Label.YES, method=ReconcileMethod.MAJORITY, n_scored=2,
                             n_unscored=0, escalated=escalated))
        if escalated:
            store.add_review(Review(run_id="r", check_id=checks[0].id, reviewer="ann", action=ReviewAction.OVERRIDE,
                                    label=Label.NO))
        failed = sample_id == "s4"
        store.put(SampleDiagnostics(
            run_id="r", sample_id=sample_id, question=f"question {sample_id}?",
            status=SampleStatus.FAILED if failed else SampleStatus.OK, error="boom" if failed else None,
            metrics=() if failed else (MetricValue(name="completeness", value=index / 3, n=2),)))
    yield store
    store.close()


def test_drill_down_keeps_questions_needing_attention_then_the_first_others(store):
    data = collect(store, "r", drill_down=3)
    assert [r.sample_id for r in data.rows] == list(IDS)
    assert [v.sample.id for v in data.samples] == ["s1", "s4", "s5"] and data.omitted == 2
    assert drill_down_ids(data.rows, 1) == ["s4"] and drill_down_ids(data.rows, None) == list(IDS)
    # run-level figures cover every question, whatever the drill-down shows
    everything = collect(store, "r", drill_down=None)
    assert everything.omitted == 0 and len(everything.samples) == 5
    assert (data.summary, data.judges, data.rows, data.reviewed) == \
        (everything.summary, everything.judges, everything.rows, everything.reviewed)
    assert data.reviewed == 1 and data.summary.n_checks == 10 and data.summary.n_verdicts == 15
    assert (data.summary.n_unscored, data.summary.n_escalated, data.summary.n_pending) == (5, 1, 0)
    assert data.summary.failures == (("s4", "boom"),)
    # the mean over the four finished samples, n/a for none: (0 + 1/3 + 2/3 + 4/3) / 4
    assert data.summary.metrics[0].mean == pytest.approx(7 / 12) and data.summary.metrics[0].n_samples == 4
    # the judges' table equals pricing every verdict: (100+101+102+103+104 + 5 * 33) * 1.0 + 35 * 2.0 = 745
    verdicts = [v for view in everything.samples for c in view.checks for v in c.verdicts]
    assert list(data.judges) == judge_usage(verdicts)
    priced = {j.judge_id: j for j in collect(store, "r", {"gpt-x": (1.0, 2.0)}).judges}
    assert priced["gpt"].cost_usd == pytest.approx(0.745) and priced["gpt"].n_unscored == 5
    # the views of the chosen questions are the same records as when every question is read
    full = {v.sample.id: v for v in everything.samples}
    assert all(v == full[v.sample.id] for v in data.samples)


def test_page_shows_the_cut_and_how_to_export_everything(store, monkeypatch):
    data = collect(store, "r", drill_down=None)
    page = render_report(data, method_sections(store, data), drill_down=2)
    assert "2 of 5 questions are shown" in page and "The other 3 are in the" in page
    assert "ragcourt report r --export DIR" in page
    assert page.count('class="sample"') == 2 and "<span class=\"qid\">s4</span>" in page
    assert "questions are shown" not in render_report(data, method_sections(store, data), drill_down=None)
    monkeypatch.setattr(report_html, "PAGE_ROWS", 3)  # the per-sample table has 5 rows
    page = render_report(data, method_sections(store, data))
    assert "(the first 3 of 5 rows; all of them: qcare_per_sample.csv of the export)" in page


def test_exports_refuse_a_cut_drill_down_and_cover_every_question_otherwise(store):
    data = collect(store, "r", drill_down=2)
    with pytest.raises(ValueError, match="leaves out 3 questions"):
        report_tables(data, method_sections(store, data))
    data = collect(store, "r", drill_down=None)
    tables = {t.name: t.frame for t in report_tables(data, method_sections(store, data))}
    assert len(tables["decisions"]) == 10 and len(tables["verdicts"]) == 15
    assert tables["samples"]["escalated"].tolist() == [0, 0, 0, 0, 1]
    assert tables["samples"]["checks"].tolist() == [2] * 5


@pytest.mark.parametrize("slice_size", [1, 2, 500])
def test_a_run_exported_a_slice_at_a_time_gives_the_files_of_the_whole_run(store, tmp_path, slice_size):
    """export_run reads and writes the per-check tables a slice of questions at a time (memory of a slice,
    whatever the run's size) from data with a cut drill-down; its files are those of the whole run."""
    whole = collect(store, "r", drill_down=None)
    expected = export_tables(report_tables(whole, method_sections(store, whole)), tmp_path / "whole")
    cut = collect(store, "r", drill_down=2)
    written = export_run(store, cut, method_sections(store, cut), tmp_path / "sliced", slice_size=slice_size)
    assert sorted(p.name for p in written) == sorted(p.name for p in expected)
    for path in expected:
        if path.suffix == ".csv":
            assert (tmp_path / "sliced" / path.name).read_text() == path.read_text(), path.name
        else:
            sliced, full = pd.read_parquet(tmp_path / "sliced" / path.name), pd.read_parquet(path)
            assert sliced.astype(object).where(sliced.notna(), None).values.tolist() == \
                full.astype(object).where(full.notna(), None).values.tolist(), path.name
    decisions = pd.read_csv(tmp_path / "sliced" / "decisions.csv")
    assert len(decisions) == 10 and decisions["reviewer"].notna().sum() == 1


def test_the_report_command_exports_every_question(store, tmp_path):
    result = CliRunner().invoke(app, ["report", "r", "--export", str(tmp_path / "out"), "--home", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "exported" in result.output
    assert len(pd.read_csv(tmp_path / "out" / "decisions.csv")) == 10
    assert len(pd.read_parquet(tmp_path / "out" / "verdicts.parquet")) == 15
