"""The report's trust figures: what each judge is worth per check kind (the jury's Dawid-Skene estimates, as
`summary --jury` prints them) and the calibration profile a run applied, with its held-out figures.

The hand-made jury: two judges on 30 claim_supported checks, agreeing yes on 14 and no on 10 and split on 6
(`lex` yes, the other no). The majority leaves the 6 splits undecided; the one-coin estimates lean to yes (more
of the agreed checks are yes), so the weighting decides all 6: 6 decisions changed, all of them splits, and
`lex` (right on the splits under the estimates) is the more accurate judge. Three element checks are too few
to estimate (MIN_CHECKS): the majority decides them.
"""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import pandas as pd
import pytest
from fakes.scripted_jury import ACCURACY, SAMPLES, runner_for

from ragcourt.report.data import collect
from ragcourt.report.export import export_tables, report_tables
from ragcourt.report.html import render_report
from ragcourt.report.sections import method_sections
from ragcourt.schema import (
    NORMAL,
    Check,
    CheckKind,
    Label,
    Review,
    ReviewAction,
    RunInfo,
    Sample,
    Verdict,
    VerdictStatus,
)
from ragcourt.schema.calibration import CalibrationProfile, LearnedThreshold, ThresholdObjective
from ragcourt.schema.config import Reconcile
from ragcourt.stores.records import RecordStore
from ragcourt.validity.jury_weights import estimate_text, fit_jury
from ragcourt.validity.profile import profile_tag

PAYLOAD = '<script>window.pwned=1</script>'
OTHER = f"j2 {PAYLOAD}"  # a judge id is text from the configuration: escaped like the rest


@pytest.fixture
def store(tmp_path: Path):
    with RecordStore(tmp_path / "store.sqlite") as opened:
        yield opened


def _check(kind: CheckKind, i: int) -> Check:
    return Check(kind=kind, sample_id="s1", condition=NORMAL, subject_id=f"x{i}", subject_text=f"claim {i}",
                 target_id="c1", target_text="chunk")


def _verdict(check: Check, judge: str, label: Label) -> Verdict:
    return Verdict(check_id=check.id, judge_id=judge, status=VerdictStatus.OK, label=label)


def jury_store(store: RecordStore, reconcile: str = "majority") -> None:
    store.put(RunInfo(run_id="r", dataset="d", system="sys", config={
        "judges": [{"model": "lexical", "id": "lex"}, {"model": "semantic", "id": OTHER}], "reconcile": reconcile}))
    store.put_samples("r", [Sample(id="s1", question="q")])
    claims = [_check(CheckKind.CLAIM_SUPPORTED, i) for i in range(30)]
    elements = [_check(CheckKind.ELEMENT_IN_ANSWER, i) for i in range(3)]
    store.put(*claims, *elements)
    store.link_checks("r", "s1", [c.id for c in (*claims, *elements)])
    for i, check in enumerate(claims):
        lex = Label.YES if i < 20 else Label.NO
        other = Label.NO if i < 6 else lex  # split on the first 6
        store.put(_verdict(check, "lex", lex), _verdict(check, OTHER, other))
    for check in elements:
        store.put(_verdict(check, "lex", Label.YES), _verdict(check, OTHER, Label.YES))
    store.add_review(Review(run_id="r", check_id=claims[10].id, reviewer="ann", action=ReviewAction.OVERRIDE,
                            label=Label.YES))


def _rows(html: str, table_id: str) -> list[list[str]]:
    body = re.search(rf'<table class="sortable" id="{re.escape(table_id)}">(.*?)</table>', html, re.S).group(1)
    return [[unescape(re.sub(r"<[^>]+>", "", cell)).strip() for cell in re.findall(r"<t[dh]>(.*?)</t[dh]>", row, re.S)]
            for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)]


def test_the_report_shows_each_judges_worth_and_the_decisions_the_weighting_would_change(store):
    jury_store(store)
    data = collect(store, "r")
    html = render_report(data, method_sections(store, data), nonce="N")
    assert "<script>window" not in html and html.count("<script") == 1
    header, claims, elements = _rows(html, "summary-jury")
    assert header == ["check_kind", "checks", "reviewed", "lex", OTHER, "would change vs majority"]
    assert claims[:3] == ["claim_supported", "30", "1"] and claims[5] == "6 (6 splits)"
    assert elements == ["element_in_answer", "3", "0", "-", "-", "not estimated (< 20 checks): majority"]
    lex, other = (float(cell.split()[0]) for cell in claims[3:5])
    assert lex > other and claims[3].endswith("n=30") and claims[4].endswith("n=30")
    # the same figures as the summary's table: one fit, one formatting
    kind = next(k for k in fit_jury(store, "r").kinds if k.kind is CheckKind.CLAIM_SUPPORTED)
    assert claims[3:5] == [estimate_text(kind, "lex"), estimate_text(kind, OTHER)]
    assert "the weighting would change 6 binary decisions against the majority rule" in html
    assert "reconcile: weighted would decide by these estimates" in html and '<a href="#jury">Jury</a>' in html
    assert "Calibration profile applied" not in html  # the run applied none


def test_a_weighted_run_says_the_decisions_changed_and_exports_the_table(store, tmp_path):
    jury_store(store, reconcile="weighted")
    data = collect(store, "r", drill_down=None)
    html = render_report(data, method_sections(store, data))
    assert _rows(html, "summary-jury")[0][-1] == "changed vs majority"
    assert "the weighting changed 6 binary decisions" in html and "the run decided by these estimates" in html
    export_tables(report_tables(data, method_sections(store, data)), tmp_path / "out")
    exported = pd.read_csv(tmp_path / "out" / "jury.csv")
    assert exported["changed vs majority"].tolist() == ["6 (6 splits)", "not estimated (< 20 checks): majority"]


def test_a_run_of_one_judge_has_no_jury_to_weigh(store):
    store.put(RunInfo(run_id="r", dataset="d", system="sys", config={"judges": [{"model": "lexical"}]}))
    store.put_samples("r", [Sample(id="s1", question="q")])
    data = collect(store, "r")
    assert data.jury is None and "What each judge is worth" not in render_report(data, [])


async def test_a_scripted_run_of_known_accuracies_ranks_its_judges_in_the_report(store, tmp_path):
    """A real weighted run (fakes.scripted_jury: judges right 95 %, 70 %, 60 % of the time)."""
    runner = runner_for(store, tmp_path, "w", Reconcile.WEIGHTED)
    _ = [d async for d in runner.astream(SAMPLES)]
    data = collect(store, "w")
    html = render_report(data, method_sections(store, data))
    rows = {row[0]: row for row in _rows(html, "summary-jury")[1:]}
    cells = rows["claim_supported"][3:6]
    assert [float(c.split()[0]) for c in cells] == sorted((float(c.split()[0]) for c in cells), reverse=True)
    assert list(ACCURACY) == ["strong", "middling", "weak"]


def _profile(labels: str = f"wice strict {PAYLOAD}", cv: float | None = 0.71) -> CalibrationProfile:
    return CalibrationProfile(suite="wice", data_file="claims.jsonl", data_sha256="a" * 64, thresholds=(
        LearnedThreshold(judge_id="lexical", judge_model="lexical", kind=CheckKind.CLAIM_SUPPORTED, threshold=0.625,
                         objective=ThresholdObjective.BALANCED_ACCURACY, labels=labels, in_sample=0.8,
                         cross_validated=cv, cross_validated_na=None if cv is not None else "one class in a fold",
                         folds=3, n=6, n_positive=3, n_without_probability=0),
        LearnedThreshold(judge_id="gpt", judge_model="openai:gpt-x", kind=CheckKind.CLAIM_SUPPORTED, threshold=0.5,
                         objective=ThresholdObjective.BALANCED_ACCURACY, labels=labels, in_sample=0.7,
                         cross_validated=0.6, folds=3, n=6, n_positive=3, n_without_probability=0)))


def profile_store(store: RecordStore, path: Path, stored_tag: str) -> None:
    store.put(RunInfo(run_id="r", dataset="d", system="sys", config={
        "judges": [{"model": "lexical"}], "calibration_profile": str(path)}))
    store.put_samples("r", [Sample(id="s1", question="q")])
    check = _check(CheckKind.CLAIM_SUPPORTED, 0)
    store.put(check, _verdict(check, f"lexical+cal-{stored_tag}", Label.NO))
    store.link_checks("r", "s1", [check.id])


def test_the_report_shows_the_profile_a_run_applied_with_its_held_out_figures(store, tmp_path):
    profile = _profile()
    profile.save(tmp_path / "profile.json")
    profile_store(store, tmp_path / "profile.json", profile_tag(profile))
    data = collect(store, "r")
    html = render_report(data, method_sections(store, data))
    assert "<script>window" not in html and "wice strict &lt;script&gt;" in html
    header, lexical, gpt = _rows(html, "summary-calibration_profile")
    assert header[:9] == ["judge", "model", "check_kind", "threshold", "objective", "labels", "in_sample",
                          "cross_validated", "folds"]
    assert "cross_validated_na_reason" not in header  # every threshold has its cross-validated figure
    assert lexical[:5] == ["lexical", "lexical", "claim_supported", "0.625", "balanced_accuracy"]
    assert lexical[6:8] == ["0.800", "0.710"] and lexical[-1] == "yes"
    assert gpt[-1] == "no: not a judge of this run"
    assert f"calibrated judges are stored as &#39;&lt;judge&gt;+cal-{profile_tag(profile)}&#39;" in html
    assert 'class="warning"' not in html.split('id="calibration"')[1].split("</section>")[0]


def test_a_missing_cross_validated_figure_says_why(store, tmp_path):
    profile = _profile(cv=None)
    profile.save(tmp_path / "profile.json")
    profile_store(store, tmp_path / "profile.json", profile_tag(profile))
    data = collect(store, "r")
    header, lexical, _ = _rows(render_report(data, []), "summary-calibration_profile")
    column = header.index("cross_validated")
    assert lexical[column] == "n/a" and lexical[header.index("cross_validated_na_reason")] == "one class in a fold"


def test_a_changed_or_missing_profile_file_is_said_not_shown_as_the_runs(store, tmp_path):
    profile_store(store, tmp_path / "profile.json", "0ld7ag")
    _profile().save(tmp_path / "profile.json")
    html = render_report(collect(store, "r"), [])
    assert "is not the profile this run applied" in html and "calibrated verdicts tag 0ld7ag" in html
    (tmp_path / "profile.json").unlink()
    data = collect(store, "r")
    html = render_report(data, [])
    assert data.profile is not None and data.profile.frame is None
    assert "the profile cannot be read now" in html and "carry tag 0ld7ag" in html
    assert "Learned thresholds" not in html


CLAIM = "Curie discovered radium in Paris."
WICE_ROWS = [  # the lexical judge's P(yes) is the claim's content-word overlap: 1, 0.75, 0.5, 0.25, 0.25, 0
    ("Curie discovered radium in Paris.", "supported"), ("Curie discovered radium.", "supported"),
    ("Curie lived in Paris.", "not_supported"), ("Paris is large. Warsaw is old.", "supported"),
    ("Paris is large.", "partially_supported"), ("Nothing here at all.", "not_supported"),
]


def test_a_calibrated_run_reports_its_calibrated_judges_verdicts_and_its_profile(tmp_path, monkeypatch):
    """End to end: `calibrate --fit-threshold --save-profile`, `run --calibration-profile`, the report. The
    calibrated judge's verdicts (stored as lexical+cal-<tag>) are the run's: counted in the judges table."""
    import json

    from typer.testing import CliRunner

    from ragcourt.cli import app
    from ragcourt.runs.workspace import Workspace

    monkeypatch.chdir(tmp_path)
    Path("claims.jsonl").write_text("".join(
        json.dumps({"label": label, "supporting_sentences": [[0]], "claim": CLAIM, "evidence": [evidence],
                    "meta": {"id": f"c{i}", "claim_title": "Marie Curie"}}) + "\n"
        for i, (evidence, label) in enumerate(WICE_ROWS)), encoding="utf-8")
    runner = CliRunner()
    fitted = runner.invoke(app, ["calibrate", "--suite", "wice", "--file", "claims.jsonl", "--judge", "lexical",
                                 "--fit-threshold", "balanced_accuracy", "--folds", "3", "--bootstrap", "50",
                                 "--save-profile", "profile.json", "--home", "home"])
    assert fitted.exit_code == 0, fitted.output
    Path("data.jsonl").write_text(json.dumps({
        "id": "q1", "question": "Where did Curie work?", "reference_answer": CLAIM, "answer": CLAIM,
        "contexts": [{"id": "c1", "text": "Curie lived in Paris."}, {"id": "c2", "text": "Bananas are yellow."}],
    }) + "\n", encoding="utf-8")
    ran = runner.invoke(app, ["run", "data.jsonl", "--system", "precomputed", "--judge", "lexical", "--home", "home",
                              "--run-id", "cal", "--calibration-profile", "profile.json"])
    assert ran.exit_code == 0, ran.output
    tag = profile_tag(CalibrationProfile.load(Path("profile.json")))
    with Workspace(tmp_path / "home").open_store() as opened:
        data = collect(opened, "cal")
        html = render_report(data, method_sections(opened, data))
    (judge,) = data.judges
    assert judge.judge_id == f"lexical+cal-{tag}" and judge.n_verdicts == data.summary.n_verdicts > 0
    header, lexical = _rows(html, "summary-calibration_profile")
    assert lexical[:4] == ["lexical", "lexical", "claim_supported", "0.625"] and lexical[-1] == "yes"
    assert 'class="warning"' not in html.split('id="calibration"')[1].split("</section>")[0]


def test_a_drill_down_metric_says_its_reason_and_its_escalations_apart(store):
    """An n/a figure with escalated checks: "every claim is undecided · 1 escalated", not run together."""
    from ragcourt.schema import MetricValue, SampleDiagnostics

    jury_store(store)
    store.put(SampleDiagnostics(run_id="r", sample_id="s1", question="q", n_checks=33, metrics=(
        MetricValue(name="conciseness", value=None, na_reason="every claim is undecided", n_escalated=1),)))
    html = render_report(collect(store, "r"), [])
    assert "<small>every claim is undecided</small><small> · 1 escalated</small>" in html
