"""`ragcourt calibrate --ragchecker` with the lexical judge (issue 7's worked example): the RAGChecker
human-labelled pairs judged in both orders and compared with each annotator, with the pairs both annotators
agree on, and annotator against annotator.

The figures are read off the confusion matrices the command prints (rows: the annotator, columns: lexical):
annotator 1 [[4, 3, 4], [2, 8, 3], [5, 3, 8]] -> accuracy (4 + 8 + 8) / 40 = 0.500; annotator 2
[[8, 2, 7], [0, 5, 4], [3, 7, 4]] -> (8 + 5 + 4) / 40 = 0.425. The annotators agree on 6 of the 40 pairs, so
the agreeing-annotators reference has 6 labels and 34 items without one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures import REPO
from typer.testing import CliRunner

from ragcourt.cli import app
from ragcourt.commands.output import console
from ragcourt.data.loaders import DatasetError
from ragcourt.runs.workspace import Workspace
from ragcourt.schema import (
    NORMAL,
    Check,
    CheckKind,
    Label,
    Reconciled,
    ReconcileMethod,
    Review,
    ReviewAction,
    RunInfo,
    Verdict,
    VerdictStatus,
)
from ragcourt.validity.calibration import HumanLabel, load_labels


def test_calibrate_on_the_ragchecker_pairs_prints_agreement_per_annotator_and_for_their_consensus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(console, "width", 200)  # one line per table row
    result = CliRunner().invoke(app, ["calibrate", "--ragchecker", "--bootstrap", "50", "--home", str(tmp_path)])
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "40 pairs, 80 annotations" in said and "position-bias Ties per judge: {'lexical': 0}" in said
    rows = {}
    for line in result.output.splitlines():
        cells = [c.strip() for c in line.strip().strip("│").split("│")]
        if line.startswith("│") and len(cells) == 7:  # rater, reference, n, undecided, no label, accuracy, kappa
            rows[cells[0], cells[1]] = [cells[2], cells[3], cells[4], cells[5].split(" [")[0], cells[6].split(" [")[0]]
    assert rows["lexical", "annotator 1"] == ["40", "0", "0", "0.500", "0.243"]
    assert rows["lexical", "annotator 2"][:4] == ["40", "0", "0", "0.425"]
    assert rows["lexical", "agreeing annotators"][:3] == ["6", "0", "34"]
    assert rows["annotator 1", "annotator 2"][:4] == ["40", "0", "0", "0.150"]


def _said(result) -> str:
    return " ".join(result.output.split())


HINT = "the check_id column of decisions.csv, written by `ragcourt report RUN --export DIR`"


def _check(name: str, kind: CheckKind) -> Check:
    return Check(kind=kind, sample_id="s", condition=NORMAL, subject_id=name, subject_text=f"subject {name}",
                 target_id="t", target_text="target", dimension="relevance" if kind is CheckKind.DIMENSION_SCORE
                 else None)


def _verdict(check: Check, judge: str, value: Label | float) -> Verdict:
    if isinstance(value, Label):
        return Verdict(check_id=check.id, judge_id=judge, status=VerdictStatus.OK, label=value)
    return Verdict(check_id=check.id, judge_id=judge, status=VerdictStatus.OK, score=value)


def _stored_run(home: Path) -> dict[str, Check]:
    """Run 'r' with two judges: binary checks b0, b1 where they disagree (escalated, reviewed by ann: yes, no),
    b2, b3 where they agree (yes; not escalated, not reviewed), a dimension score d and a pairwise check p."""
    checks = {name: _check(name, CheckKind.CLAIM_SUPPORTED) for name in ("b0", "b1", "b2", "b3")}
    checks["d"] = _check("d", CheckKind.DIMENSION_SCORE)
    checks["p"] = _check("p", CheckKind.PAIRWISE)
    votes: dict[str, tuple[Label | float, Label | float]] = {
        "b0": (Label.YES, Label.NO), "b1": (Label.YES, Label.NO), "b2": (Label.YES, Label.YES),
        "b3": (Label.YES, Label.YES), "d": (3.0, 7.0), "p": (Label.A, Label.A),
    }
    with Workspace(home).open_store() as store:
        store.put(RunInfo(run_id="r", dataset="d.jsonl", system="precomputed", config={}))
        store.put(*checks.values())
        store.link_checks("r", "s", [c.id for c in checks.values()])
        store.put(*(_verdict(checks[name], judge, vote) for name, pair in votes.items()
                    for judge, vote in zip(("j1", "j2"), pair, strict=True)))
        for name, decided in (("b0", Label.YES), ("b1", Label.NO)):  # a review replaces the jury's decision
            check = checks[name]
            store.put(Reconciled(run_id="r", check_id=check.id, kind=check.kind, sample_id="s", label=decided,
                                 method=ReconcileMethod.HUMAN, n_scored=2, n_unscored=0, escalated=True,
                                 escalation_reason="decided by a person"))
            store.add_review(Review(run_id="r", check_id=check.id, reviewer="ann", action=ReviewAction.OVERRIDE,
                                    label=decided))
        for name in ("b2", "b3"):
            check = checks[name]
            store.put(Reconciled(run_id="r", check_id=check.id, kind=check.kind, sample_id="s", label=Label.YES,
                                 method=ReconcileMethod.MAJORITY, agreement=1.0, n_scored=2, n_unscored=0))
    return checks


def _rows(output: str) -> dict[tuple[str, str], list[str]]:
    """Agreement rows (rater, reference) -> [n, undecided, no label, accuracy, kappa], without intervals."""
    rows = {}
    for line in output.splitlines():
        cells = [c.strip() for c in line.strip().strip("│").split("│")]
        if line.startswith("│") and len(cells) == 7:
            rows[cells[0], cells[1]] = [cells[2], cells[3], cells[4], cells[5].split(" [")[0], cells[6].split(" [")[0]]
    return rows


def test_calibrate_on_review_decisions_warns_that_they_cover_only_escalated_checks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(console, "width", 400)  # one line per table row and per sentence
    _stored_run(tmp_path)
    result = CliRunner().invoke(app, ["calibrate", "--run", "r", "--bootstrap", "20", "--home", str(tmp_path)])
    assert result.exit_code == 0, result.output
    split = ("n/a (the judges split on all 2 labelled items: a split jury has no label (a run's label there is "
             "the first judge's, provisional until reviewed))")
    assert _rows(result.output) == {
        ("j1", "ann"): ["2", "0", "0", "0.500", "0.000"],
        ("j2", "ann"): ["2", "0", "0", "0.500", "0.000"],
        ("jury", "ann"): ["0", "2", "0", split, split],
    }
    lines = [" ".join(line.split()) for line in result.output.splitlines()]
    assert "Fleiss' kappa among the judges: -1.000 (items every judge decided: 2)" in lines
    caveat = lines[lines.index(next(line for line in lines if line.startswith("caveat:"))):]
    assert caveat == [
        "caveat: review labels cover only escalated checks (where the judges disagreed or no judge scored): "
        "these are 2 of the run's 2 escalated checks (of its 6 checks), so agreement on them is not the judges' "
        "agreement on all checks. On these checks:",
        "- claim_supported (2 checks): accuracy j1 0.500, j2 0.500, jury n/a; Fleiss' kappa among the judges -1.000",
        "(the jury is n/a where the judges split: a split jury has no label of its own.) For an unbiased estimate, "
        f"label a random sample of the run's checks and give them with --labels FILE (check ids: {HINT}).",
    ]


def test_a_labels_file_is_checked_against_the_store_and_every_problem_reported_in_one_pass(tmp_path: Path) -> None:
    checks = _stored_run(tmp_path)
    b0, b1, d, p = (checks[name].id for name in ("b0", "b1", "d", "p"))
    labels = tmp_path / "labels.jsonl"
    labels.write_text("\n".join(json.dumps(line) for line in [
        {"check_id": b0, "label": "yes", "annotator": "ann"},
        {"check_id": b0, "label": "yes", "annotator": "ann"},  # the same again: allowed, counted once
        {"check_id": b0, "label": "no", "annotator": "ann"},
        {"check_id": "ffffffffffffffff", "label": "yes"},
        {"check_id": b1, "score": 7},
        {"check_id": b1, "label": "A", "annotator": "bob"},
        {"check_id": d, "label": "yes"},
        {"check_id": d, "score": 42, "annotator": "bob"},
        {"check_id": p, "label": "yes"},
        {"check_id": p, "label": "maybe", "annotator": "bob"},
        {"check_id": d, "score": 10.5, "label": "no", "annotator": "carol"},
        {"check_id": d, "score": 5, "annotator": "bob"},
    ]) + "\n")
    result = CliRunner().invoke(app, ["calibrate", "--labels", str(labels), "--home", str(tmp_path)])
    assert result.exit_code == 2
    said = [" ".join(line.split()) for line in _said(result).split("error: ")[1:]]
    assert said == [
        f"{labels}:3: field 'check_id': labelled again by annotator 'ann' with label 'no', after label 'yes' on "
        "line 1: keep one label per check and annotator",
        f"{labels}:4: field 'check_id': no check 'ffffffffffffffff' in the store (check ids: {HINT})",
        f"{labels}:5: field 'score': claim_supported checks take a 'label' (yes, no), not a 'score'",
        f"{labels}:6: field 'label': must be one of yes, no for claim_supported checks, got 'A'",
        f"{labels}:7: field 'label': dimension_score checks take a 0-10 'score', not a 'label'",
        f"{labels}:8: field 'score': must be between 0 and 10 for dimension_score checks, got 42",
        f"{labels}:9: field 'label': must be one of A, B, Tie for pairwise checks, got 'yes'",
        f"{labels}:10: field 'label': must be one of yes, no, A, B, Tie, got 'maybe'",
        f"{labels}:11: field 'label': dimension_score checks take a 0-10 'score', not a 'label'",
        f"{labels}:11: field 'score': must be between 0 and 10 for dimension_score checks, got 10.5",
        f"{labels}:12: field 'check_id': labelled again by annotator 'bob' with score 5, after score 42 on line 8: "
        "keep one label per check and annotator",
        f"10 bad lines in {labels}; fix them and calibrate again",
    ]
    assert "items; annotators" not in result.output and "Pearson" not in result.output  # nothing computed


def test_a_good_labels_file_counts_an_identical_repeat_once_and_gives_no_review_caveat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(console, "width", 400)
    checks = _stored_run(tmp_path)
    labels = tmp_path / "labels.jsonl"
    labels.write_text("\n".join(json.dumps(line) for line in [
        {"check_id": checks["b0"].id, "label": "yes"},
        {"check_id": checks["b0"].id, "label": "yes"},
        {"check_id": checks["b2"].id, "label": "yes"},
        {"check_id": checks["b3"].id, "label": "no"},
        {"check_id": checks["d"].id, "score": 6},
    ]) + "\n")
    result = CliRunner().invoke(app, ["calibrate", "--labels", str(labels), "--bootstrap", "20",
                                      "--home", str(tmp_path)])
    assert result.exit_code == 0, result.output
    rows = _rows(result.output)
    assert rows[("j1", "human")] == ["3", "0", "0", "0.667", "0.000"]  # b0 yes, b2 yes, b3 no: j1 said yes
    assert rows[("jury", "human")][:4] == ["2", "1", "0", "0.500"]  # split on b0
    said = _said(result)
    assert "claim_supported: 3 items" in said and "caveat" not in said
    correlations = [line.replace("│", " ").split() for line in result.output.splitlines()
                    if line.startswith("│") and line.count("│") == 6]
    assert [row[:3] for row in correlations] == [["j1", "human", "1"], ["j2", "human", "1"], ["jury", "human", "1"]]


def test_calibrate_help_says_where_check_ids_come_from() -> None:
    result = CliRunner().invoke(app, ["calibrate", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    said = " ".join(result.output.replace("│", " ").split())
    assert f"Check ids (and kinds): {HINT}" in said
    assert "these cover only escalated checks, the ones the judges disagreed on" in said


def test_calibrate_on_a_run_that_does_not_exist_says_so(tmp_path: Path) -> None:
    with Workspace(tmp_path).open_store():
        pass  # an empty store: the workspace exists, the run does not
    result = CliRunner().invoke(app, ["calibrate", "--run", "nope", "--home", str(tmp_path)])
    assert result.exit_code == 2
    assert _said(result) == f"error: no run 'nope' in {tmp_path / 'store.sqlite'}"


def test_calibrate_without_a_store_says_so_and_creates_none(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    for source in (["--run", "nope"], ["--labels", str(tmp_path / "labels.jsonl")]):
        result = CliRunner().invoke(app, ["calibrate", *source, "--home", str(home)])
        assert result.exit_code == 2
        assert _said(result) == f"error: no record store at {home / 'store.sqlite'}"
    assert not home.exists()


def test_calibrate_on_a_run_without_reviews_says_what_to_do(tmp_path: Path) -> None:
    data = tmp_path / "samples.jsonl"
    data.write_text(json.dumps({"id": "a", "question": "Where is Acme?", "reference_answer": "In Springfield.",
                                "contexts": ["Acme is in Springfield."], "answer": "In Springfield."}) + "\n")
    runner = CliRunner()
    ran = runner.invoke(app, ["run", str(data), "--system", "precomputed", "--run-id", "base",
                              "--home", str(tmp_path)])
    assert ran.exit_code == 0, ran.output
    result = runner.invoke(app, ["calibrate", "--run", "base", "--home", str(tmp_path)])
    assert result.exit_code == 2
    assert _said(result) == ("error: run 'base' has no review decisions to use as human labels: review its "
                             "escalated checks first (`ragcourt review base`), or give --labels FILE")


def test_a_bad_labels_file_is_refused_with_every_bad_line(tmp_path: Path) -> None:
    with Workspace(tmp_path).open_store():
        pass
    labels = tmp_path / "labels.jsonl"
    labels.write_text("\n".join([
        json.dumps({"check_id": "c1", "label": "yes"}),
        json.dumps({"check_id": "c2", "label": "maybe"}),
        json.dumps({"check_id": 3, "score": "high"}),
        "{not json",
        json.dumps({"check_id": "c4", "annotator": "ann"}),
        json.dumps({"check_id": "c5", "label": "no", "by": "me"}),
    ]) + "\n")
    result = CliRunner().invoke(app, ["calibrate", "--labels", str(labels), "--home", str(tmp_path)])
    assert result.exit_code == 2
    said = [" ".join(line.split()) for line in _said(result).split("error: ")[1:]]
    assert said == [
        f"{labels}:1: field 'check_id': no check 'c1' in the store (check ids: {HINT})",
        f"{labels}:2: field 'label': must be one of yes, no, A, B, Tie, got 'maybe'",
        f"{labels}:3: field 'check_id': must be a string, got number",
        f"{labels}:3: field 'score': must be a number, got string",
        f"{labels}:4: not valid JSON: Expecting property name enclosed in double quotes (column 2)",
        f"{labels}:5: field 'label': is missing: give a 'label' (yes, no, A, B, Tie) or a 0-10 'score'",
        f"{labels}:6: field 'by': unknown field (allowed: check_id, label, score, annotator)",
        f"6 bad lines in {labels}; fix them and calibrate again",
    ]


def test_load_labels_reads_a_good_file(tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"check_id": "c1", "label": "Tie", "annotator": "ann"}\n\n{"check_id": "c2", "score": 7}\n')
    assert load_labels(labels) == [HumanLabel(check_id="c1", label=Label.TIE, annotator="ann"),
                                   HumanLabel(check_id="c2", score=7.0)]
    labels.write_text('{"check_id": "c1", "label": ["yes"]}\n')
    with pytest.raises(DatasetError) as caught:
        load_labels(labels)
    assert str(caught.value) == f"{labels}:1: field 'label': must be one of yes, no, A, B, Tie, got list"


def test_label_compares_the_judges_with_each_chosen_human_label(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(console, "width", 200)
    result = CliRunner().invoke(app, ["calibrate", "--ragchecker", "--label", "correctness", "--label", "completeness",
                                      "--bootstrap", "20", "--home", str(tmp_path)])
    assert result.exit_code == 0, result.output
    # The annotators' own agreement per aspect, straight from the file (two rows per instance, in order; the
    # sign of a label: negative A better, positive B better, 0 Tie): the ceiling rows must show these.
    rows = json.loads((REPO / "data" / "ragchecker_pairs" / "human_labeled_sample.json").read_text(encoding="utf-8"))
    sign = lambda score: (score > 0) - (score < 0)  # noqa: E731
    sections = result.output.split("human label: ")[1:]
    assert [s.split()[0] for s in sections] == ["correctness", "completeness"]
    for aspect, section in zip(("correctness", "completeness"), sections, strict=True):
        first, second = rows[0::2], rows[1::2]
        agree = sum(sign(a[f"{aspect}_label"]) == sign(b[f"{aspect}_label"]) for a, b in zip(first, second, strict=True))
        ceiling = next(line for line in section.splitlines() if line.startswith("│ annotator 1") and "annotator 2" in line)
        assert f"{agree / 40:.3f}" in ceiling
    assert "0.150" not in sections[0]  # the overall labels' agreement (6 of 40) is not what these rows compare


def test_label_needs_the_ragchecker_pairs(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["calibrate", "--run", "r", "--label", "correctness", "--home", str(tmp_path)])
    assert result.exit_code == 2
    assert "--label chooses among the RAGChecker annotators' labels" in _said(result)


# --------------------------------------------------------------------------- the validity suite


SHARED = Path("/work/shared/data")


@pytest.mark.skipif(not (SHARED / "wice").is_dir(), reason="the shared data slices are not on this machine")
def test_the_suite_on_wice_reports_auroc_against_sklearn_and_writes_json(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    from sklearn.metrics import roc_auc_score

    from ragcourt.data.validity_sets import load_wice
    from ragcourt.judging import BaselineJudge, BaselineRule
    from ragcourt.validity.measure import wice_checks

    monkeypatch.setattr(console, "width", 300)
    source = SHARED / "wice/claim_dev_sample_60.jsonl"
    out = tmp_path / "wice.json"
    result = CliRunner().invoke(app, ["calibrate", "--suite", "wice", "--file", str(source), "--judge", "lexical",
                                      "--limit", "30", "--bootstrap", "50", "--json", str(out), "--home",
                                      str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "30 of 60 items; judges: lexical" in _said(result)
    report = json.loads(out.read_text())
    rows = {(r["rater"], r["reference"]): r for r in report["kinds"][0]["rows"]}
    # the same checks judged here: the AUROC of their P(yes) against the strict and lenient labels
    claims = load_wice(source)[:30]
    verdicts = asyncio.run(BaselineJudge(BaselineRule.LEXICAL).judge(
        CheckKind.CLAIM_SUPPORTED, [c.check for c in wice_checks(claims)]))
    p_yes = [v.probabilities[Label.YES] for v in verdicts]
    strict = [c.claim.label.strict for c in claims]
    lenient = [c.claim.label.lenient for c in claims]
    assert rows["lexical", "wice strict"]["auroc"]["value"] == pytest.approx(roc_auc_score(strict, p_yes))
    assert rows["lexical", "wice lenient"]["auroc"]["value"] == pytest.approx(roc_auc_score(lenient, p_yes))
    assert rows["lexical", "wice strict"]["n"] == 30 and rows["lexical", "wice strict"]["unscored"] == 0


def test_the_suite_refuses_a_bad_file_and_options_that_do_not_go_together(tmp_path: Path) -> None:
    bad = tmp_path / "claims.jsonl"
    bad.write_text('{"label": "supported", "claim": "x", "evidence": ["y"], "supporting_sentences": [[4]], '
                   '"meta": {"id": "c1"}}\n{"label": "maybe"}\n')
    runner = CliRunner()
    result = runner.invoke(app, ["calibrate", "--suite", "wice", "--file", str(bad), "--home", str(tmp_path)])
    assert result.exit_code != 0
    said = _said(result)
    assert f"{bad}:1: field 'supporting_sentences[0]': index 4 is outside the 1 evidence sentences" in said
    assert f"{bad}:2: field 'label'" in said
    no_file = runner.invoke(app, ["calibrate", "--suite", "hotpotqa", "--home", str(tmp_path)])
    assert no_file.exit_code != 0 and "needs --file PATH" in _said(no_file)
    no_fit = runner.invoke(app, ["calibrate", "--suite", "wice", "--file", str(bad), "--save-profile", "p.json",
                                 "--home", str(tmp_path)])
    assert no_fit.exit_code != 0 and "give --fit-threshold" in _said(no_fit)
    stray = runner.invoke(app, ["calibrate", "--ragchecker", "--file", str(bad), "--home", str(tmp_path)])
    assert stray.exit_code != 0 and "go with --suite NAME" in _said(stray)
