"""Run-to-run noise and comparisons, with hand-computed figures, through the functions and the CLI.

Coverage per question (q1..q4; team x: q1 q2, team y: q3 q4):
  run a: .5 1 0 .5     run b: .5 .5 .5 .5     b - a: 0 -.5 .5 0
  all:  mean 0, sd = sqrt((0 + .25 + .25 + 0) / 3) = sqrt(1/6) = 0.408248, band = 1.96 * 0.408248 / 2 = 0.400083
  x:    mean -.25, sd = sqrt(2 * .0625 / 1) = 0.353553, band = 1.96 * 0.353553 / sqrt(2) = 0.49
  y:    mean +.25, same sd and band
"""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from ragcourt.analysis.noise import (
    ALL,
    PAIRED_BAND,
    compare_frame,
    differing_settings,
    is_known_metric,
    metric_values,
    noise_frame,
    nothing_varied,
    repeat_sds,
    unknown_metrics,
)
from ragcourt.cli import app
from ragcourt.judging.decomposers import SentenceDecomposer
from ragcourt.runs.element_lists import current_elements
from ragcourt.runs.workspace import Workspace
from ragcourt.schema import (
    Decomposition,
    DecompositionKind,
    MetricValue,
    RunInfo,
    Sample,
    SampleDiagnostics,
    SampleStatus,
)
from ragcourt.stores.records import RecordStore

SAMPLES = [Sample(id=q, question=f"{q}?", metadata={"team": t}) for q, t in
           (("q1", "x"), ("q2", "x"), ("q3", "y"), ("q4", "y"))]


def run(run_id: str, coverage: dict[str, float | None], other: float | None = None) -> list[SampleDiagnostics]:
    rows = []
    for q, value in coverage.items():
        metrics = [MetricValue(name="element_coverage", value=value, na_reason=None if value is not None else "none")]
        if other is not None:
            metrics.append(MetricValue(name="completeness", value=other))
        rows.append(SampleDiagnostics(run_id=run_id, sample_id=q, question=f"{q}?", metrics=tuple(metrics)))
    return rows


A = run("a", {"q1": 0.5, "q2": 1.0, "q3": 0.0, "q4": 0.5}, other=1.0)
B = run("b", {"q1": 0.5, "q2": 0.5, "q3": 0.5, "q4": 0.5}, other=0.0)


def test_noise_for_the_run_and_per_subgroup():
    frame = noise_frame(A, B, SAMPLES, "element_coverage", by="team")
    rows = {row["group"]: row for row in frame.to_dict("records")}
    assert list(rows) == [ALL, "team=x", "team=y"]
    assert rows[ALL]["n_questions"] == 4 and rows[ALL]["mean_difference"] == pytest.approx(0.0)
    assert rows[ALL]["per_question_sd"] == pytest.approx(math.sqrt(1 / 6))
    assert rows[ALL]["band"] == pytest.approx(0.400083, abs=1e-6) and rows[ALL]["is_noise"] is True
    assert rows["team=x"]["mean_difference"] == pytest.approx(-0.25)
    assert rows["team=x"]["band"] == pytest.approx(0.49) and rows["team=x"]["is_noise"] is True
    assert rows["team=y"]["mean_difference"] == pytest.approx(0.25)


def test_na_values_and_failed_samples_are_left_out_and_too_few_questions_is_na():
    failed = SampleDiagnostics(run_id="b", sample_id="q2", question="q2?", status=SampleStatus.FAILED, error="x")
    values, n_na = metric_values([*run("b", {"q1": None, "q3": 0.25}), failed], "element_coverage")
    assert values == {"q3": 0.25} and n_na == 1
    frame = noise_frame(A, run("b", {"q1": 0.5}), SAMPLES, "element_coverage")
    row = frame.to_dict("records")[0]
    assert (row["n_questions"], row["n_unpaired"], row["band"], row["is_noise"]) == (1, 3, None, None)
    assert row["na_reason"] == "fewer than two questions are in both runs"


def test_compare_with_the_paired_band_and_with_repeat_runs():
    frame = {row["metric"]: row for row in compare_frame(A, B).to_dict("records")}
    coverage = frame["element_coverage"]
    assert (coverage["mean_a"], coverage["mean_b"], coverage["difference"]) == (0.5, 0.5, 0.0)
    assert coverage["band"] == pytest.approx(0.400083, abs=1e-6) and coverage["verdict"] == "noise"
    assert coverage["band_from"] == PAIRED_BAND
    # completeness drops by 1 on every question: sd of the differences 0, band 0, a real change
    assert frame["completeness"]["difference"] == -1.0 and frame["completeness"]["verdict"] == "change"

    # with repeat runs of one configuration whose per-question sd is 0.1 (differences +.1 -.1 +.1 -.1):
    # band = 1.96 * sd / sqrt(4) with sd = sqrt(4 * .01 / 3) = 0.11547 -> 0.113161
    x = run("x", {"q1": 0.5, "q2": 0.5, "q3": 0.5, "q4": 0.5})
    y = run("y", {"q1": 0.6, "q2": 0.4, "q3": 0.6, "q4": 0.4})
    sds = repeat_sds(x, y, ["element_coverage", "completeness"])
    assert sds == {"element_coverage": pytest.approx(math.sqrt(0.04 / 3)), "completeness": None}
    shifted = run("c", {"q1": 0.7, "q2": 0.7, "q3": 0.7, "q4": 0.7})
    row = compare_frame(B, shifted, sds, "repeat x/y").to_dict("records")[0]
    assert row["difference"] == pytest.approx(0.2) and row["band"] == pytest.approx(0.113161, abs=1e-6)
    assert (row["verdict"], row["band_from"]) == ("change", "repeat x/y")


def test_cli_noise_and_compare(tmp_path):
    with Workspace(tmp_path).open_store() as store:
        for run_id, rows in (("a", A), ("b", B)):
            store.put(RunInfo(run_id=run_id, dataset="d", system="s", config={}))
            store.put_samples(run_id, SAMPLES)
            store.put(*rows)
    runner = CliRunner()
    noise = runner.invoke(app, ["noise", "a", "b", "--by", "team", "--home", str(tmp_path)])
    assert noise.exit_code == 0, noise.output
    assert "0.4001" in noise.output and "team=x" in noise.output and "0.4900" in noise.output
    compared = runner.invoke(app, ["compare", "a", "b", "--home", str(tmp_path)])
    assert compared.exit_code == 0, compared.output
    assert "-1.0000" in compared.output and "change" in compared.output and "noise" in compared.output
    missing = runner.invoke(app, ["compare", "a", "zzz", "--home", str(tmp_path)])
    assert missing.exit_code == 2 and "no run 'zzz'" in missing.output
    assert "warning" not in noise.output  # one configuration (the same empty config and system)


def both_sides(run_id: str, answer: dict[str, float], context: dict[str, float]) -> list[SampleDiagnostics]:
    """A run of the elements method as the scorer reports it: the answer side first, the context side beside it."""
    return [SampleDiagnostics(run_id=run_id, sample_id=q, question=f"{q}?", metrics=(
        MetricValue(name="element_answer_coverage", value=answer[q]),
        MetricValue(name="element_coverage", value=context[q]))) for q in answer]


def test_noise_and_compare_default_to_the_answer_side_with_the_context_side_beside_it(tmp_path):
    """The same retrieval twice (context side unmoved: band 0) and an answerer that varies: answer side
    a .5 1 0 .5, b .5 .5 .5 .5 -> sd sqrt(1/6), band 0.4001, as the module docstring's figures."""
    context = {"q1": 1.0, "q2": 1.0, "q3": 0.5, "q4": 0.5}
    runs = {"a": both_sides("a", {"q1": 0.5, "q2": 1.0, "q3": 0.0, "q4": 0.5}, context),
            "b": both_sides("b", {"q1": 0.5, "q2": 0.5, "q3": 0.5, "q4": 0.5}, context)}
    with Workspace(tmp_path).open_store() as store:
        for run_id, rows in runs.items():
            store.put(RunInfo(run_id=run_id, dataset="d", system="s", config={}))
            store.put_samples(run_id, SAMPLES)
            store.put(*rows)
    noise = CliRunner().invoke(app, ["noise", "a", "b", "--home", str(tmp_path)], env={"COLUMNS": "200"})
    assert noise.exit_code == 0, noise.output
    text = " ".join(noise.output.split())
    answer_side = text.index("run-to-run noise of element_answer_coverage (answer side: share of the reference's "
                             "elements the answer states)")
    context_side = text.index("run-to-run noise of element_coverage (context side: share of the reference's "
                              "elements found in the retrieved chunks)")
    assert answer_side < text.index("│ (all) │ 4 │ 0 │ 0.4082 │ 0.0000 │ 0.4001 │ yes │") < context_side
    assert "warning: the band of element_coverage is 0 because nothing varied" in text[context_side:]
    assert "element_answer_coverage is 0 because" not in text
    kept = json.loads((tmp_path / "noise" / "bands.json").read_text(encoding="utf-8"))
    assert kept["element_answer_coverage"]["per_question_sd"] == pytest.approx(math.sqrt(1 / 6))
    assert kept["element_coverage"]["per_question_sd"] == 0.0

    compared = CliRunner().invoke(app, ["compare", "a", "b", "--home", str(tmp_path)], env={"COLUMNS": "200"})
    assert compared.exit_code == 0, compared.output
    lines = compared.output.splitlines()
    rows = [line.split("│")[1].strip() for line in lines if line.startswith("│ element")]
    assert rows == ["element_answer_coverage", "element_coverage"]
    assert ("element_answer_coverage: answer side: share of the reference's elements the answer states" in lines
            and "element_coverage: context side: share of the reference's elements found in the retrieved chunks"
            in lines)


def test_runs_scored_before_the_answer_side_existed_are_measured_on_the_context_side_with_a_note(tmp_path):
    with Workspace(tmp_path).open_store() as store:
        for run_id, rows in (("a", A), ("b", B)):
            store.put(RunInfo(run_id=run_id, dataset="d", system="s", config={}))
            store.put_samples(run_id, SAMPLES)
            store.put(*rows)
    noise = CliRunner().invoke(app, ["noise", "a", "b", "--home", str(tmp_path)])
    assert noise.exit_code == 0, noise.output
    text = " ".join(noise.output.split())
    assert ("note: element_answer_coverage is in neither run (scored before ragcourt reported it); measuring "
            "element_coverage only") in text
    assert "run-to-run noise of element_coverage" in text and "0.4001" in text
    asked = CliRunner().invoke(app, ["noise", "a", "b", "--metric", "element_answer_coverage", "--home", str(tmp_path)])
    assert asked.exit_code == 2 and "metric 'element_answer_coverage' is in neither run" in " ".join(asked.output.split())


def test_runs_without_either_coverage_need_a_metric_named(tmp_path):
    rows = {"a": run("a", {"q1": 0.5}, other=1.0), "b": run("b", {"q1": 0.5}, other=0.0)}
    with Workspace(tmp_path).open_store() as store:
        for run_id in rows:
            store.put(RunInfo(run_id=run_id, dataset="d", system="s", config={}))
            store.put_samples(run_id, SAMPLES)
            store.put(*(d.model_copy(update={"metrics": d.metrics[1:]}) for d in rows[run_id]))  # completeness only
    noise = CliRunner().invoke(app, ["noise", "a", "b", "--home", str(tmp_path)])
    assert noise.exit_code == 2
    assert ("neither run has the default metrics (element_answer_coverage, element_coverage): name one with "
            "--metric (their metrics: completeness)") in " ".join(noise.output.split())


def test_noise_between_two_configurations_is_refused_naming_what_differs(tmp_path):
    with Workspace(tmp_path).open_store() as store:
        for run_id, rows, judges, system in (("a", A, ["lexical"], "s"), ("b", B, ["lexical", "semantic"], "t")):
            store.put(RunInfo(run_id=run_id, dataset="d", system=system, config={"judges": judges, "top_k": 5,
                                                                                 "telemetry": {"x": run_id}}))
            store.put_samples(run_id, SAMPLES)
            store.put(*rows)
    noise = CliRunner().invoke(app, ["noise", "a", "b", "--home", str(tmp_path)])
    assert noise.exit_code == 2, noise.output
    assert noise.output.startswith("error: a and b ran different configurations (system, judges): their "
                                   "differences are not run-to-run noise") and len(noise.output.splitlines()) == 1
    assert not (tmp_path / "noise").exists()


def test_differing_settings_name_the_system_then_the_keys_and_leave_speed_settings_out():
    def info(system: str, **config: object) -> RunInfo:
        return RunInfo(run_id="r", dataset="d", system=system, config=config)

    assert differing_settings(info("s", top_k=5, concurrency=8), info("s", top_k=5, concurrency=2)) == []
    assert differing_settings(info("s", top_k=3, seed=1), info("t", seed=1, decomposer="x")) == [
        "system", "decomposer", "top_k"]
    # a key stored by one run only (a newer ragcourt's) is its default unless it says otherwise
    assert differing_settings(info("s", seed=1), info("s", seed=1, top_k=5)) == []
    assert differing_settings(info("s", seed=1), info("s", seed=1, top_k=3)) == ["top_k"]


def test_cli_noise_runs_one_configuration_twice_in_separate_stores(tmp_path):
    """Two repeats, each with its own store (no shared verdicts or cache) and the workspace's frozen element
    lists copied in: the deterministic lexical judge gives sd 0 and band 0 over the 2 questions."""
    data, config = tmp_path / "samples.jsonl", tmp_path / "config.yaml"
    rows = [{"id": f"q{i}", "question": f"Where is site {i}?", "reference_answer": f"Site {i} is in Rome. It is old.",
             "contexts": [f"Site {i} is in Rome."], "answer": f"Site {i} is in Rome."} for i in (1, 2)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    config.write_text("methods: [elements]\njudges: [{model: lexical}]\n")
    with Workspace(tmp_path).open_store() as main:  # a person's edit in the workspace: one element for q1
        identity = current_elements(main, SentenceDecomposer(), rows[0]["reference_answer"])
        main.put(Decomposition(id=identity.decomposition_id, kind=DecompositionKind.ELEMENTS,
                               source_text=rows[0]["reference_answer"], items=("Site 1 is in Rome.",),
                               prompt_hash=identity.prompt_hash, model_id=identity.model_id, edited=True))
    result = CliRunner().invoke(app, ["noise", "--config", str(config), "--dataset", str(data), "--home",
                                      str(tmp_path)])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "1 frozen element lists copied into both" in text
    assert "│ (all) │ 2 │ 0 │ 0.0000 │ 0.0000 │ 0.0000 │ yes │" in text
    assert "warning: the band of element_coverage is 0 because nothing varied" in text  # deterministic repeats
    repeats = sorted((tmp_path / "noise").glob("*/*/store.sqlite"))
    assert len(repeats) == 2
    for path in repeats:
        with RecordStore(path) as store:
            (q1,) = store.get_diagnostics("repeat", "q1")
            assert [e.text for e in q1.elements] == ["Site 1 is in Rome."]  # the edited list, in both repeats
            assert q1.metric("element_coverage").value == 1.0


@pytest.mark.parametrize("name", ["element_coverage", "completeness", "c_prec", "c_prec@5", "c_ndcg@10",
                                  "pointer_elements_dropped", "exact_match", "grounding_score"])
def test_known_metric_names(name):
    assert is_known_metric(name)


@pytest.mark.parametrize("name", ["elemnt_coverage", "c_prec@", "c_prec@0", "c_prec@x", "completeness@5",
                                  "C_PREC@5", ""])
def test_unknown_metric_names(name):
    assert not is_known_metric(name)


def test_unknown_metrics_keeps_order():
    assert unknown_metrics(["completeness", "zz", "c_prec@3", "aa"]) == ["zz", "aa"]


def test_misspelled_metric_fails_before_the_configuration_runs(tmp_path):
    data, config = tmp_path / "samples.jsonl", tmp_path / "config.yaml"
    data.write_text(json.dumps({"id": "q1", "question": "q?", "reference_answer": "A.", "contexts": ["A."],
                                "answer": "A."}) + "\n")
    config.write_text("methods: [elements]\njudges: [{model: lexical}]\n")
    result = CliRunner().invoke(app, ["noise", "--config", str(config), "--dataset", str(data), "--metric",
                                      "element_coverage", "--metric", "elemnt_coverage", "--home", str(tmp_path)])
    text = " ".join(result.output.split())
    assert result.exit_code == 2, result.output
    assert "unknown metric(s): elemnt_coverage (known: soft_relevance, c_prec," in text
    assert "pointer_elements_dropped" in text and "c_prec@K" in text
    assert "running the configuration twice" not in text and not (tmp_path / "noise").exists()


def test_identical_runs_warn_that_the_band_measures_nothing(tmp_path):
    same = run("c", {"q1": 0.5, "q2": 1.0, "q3": 0.0, "q4": 0.5}, other=1.0)
    assert nothing_varied(noise_frame(A, same, SAMPLES, "element_coverage"))
    assert not nothing_varied(noise_frame(A, B, SAMPLES, "element_coverage"))
    shifted = run("d", {"q1": 0.6, "q2": 1.1, "q3": 0.1, "q4": 0.6})  # sd 0 but every question moved
    assert not nothing_varied(noise_frame(A, shifted, SAMPLES, "element_coverage"))
    with Workspace(tmp_path).open_store() as store:
        for run_id, rows in (("a", A), ("c", same)):
            store.put(RunInfo(run_id=run_id, dataset="d", system="s", config={}))
            store.put_samples(run_id, SAMPLES)
            store.put(*rows)
    result = CliRunner().invoke(app, ["noise", "a", "c", "--metric", "element_coverage", "--metric",
                                      "completeness", "--home", str(tmp_path)])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    for metric in ("element_coverage", "completeness"):
        assert f"warning: the band of {metric} is 0 because nothing varied" in text
    assert "precomputed answers, rule-based judges" in text and "temperature-0" in text
