"""The CI gate: `ragcourt run --fail-under` (and the config's fail_under) and `ragcourt compare
--fail-on-regression`, through the CLI.

`run`: examples/multi_turn.jsonl (2 samples, precomputed answers, no reference answer) with the lexical judge,
no LLM call: completeness 0.5 (mt1 1.0, mt2 0.0), element_coverage n/a on both (no reference answer).

`compare` (coverage per question q1..q4): repeat runs x .5 .5 .5 .5 / y .6 .4 .6 .4, per-question sd
sqrt(4 x .01 / 3) = 0.11547, band over 4 questions 1.96 x 0.11547 / 2 = 0.113161. Base .7 .7 .7 .7;
"small" .6 everywhere (B-A -0.1, inside the band), "big" .5 everywhere (-0.2, beyond it).
"""

from __future__ import annotations

import json
import math

import pytest
from fixtures import REPO
from typer.testing import CliRunner

from ragcourt.cli import app
from ragcourt.runs.workspace import Workspace
from ragcourt.schema import MetricValue, RunInfo, Sample, SampleDiagnostics

EXAMPLE = REPO / "examples" / "multi_turn.jsonl"


def run_example(tmp_path, *options: str):
    return CliRunner().invoke(app, ["run", str(EXAMPLE), "--system", "precomputed", "--no-check-endpoints",
                                    "--home", str(tmp_path / "ws"), *options])


def test_fail_under_fails_the_run_with_one_line_per_failed_figure_and_exit_1(tmp_path) -> None:
    result = run_example(tmp_path, "--fail-under", "completeness=0.6", "--fail-under", "c_prec=0.25",
                         "--fail-under", "element_coverage=0.1")
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("FAIL")]
    assert lines == [
        "FAIL completeness 0.500 < 0.600 (n=2, 0 unscored, 0 escalated)",
        "FAIL element_coverage n/a (minimum 0.100): 2 sample(s): the sample has no reference answer: elements "
        "are split from one (seed 003) (n=0, 0 unscored, 0 escalated)",
    ]  # c_prec 0.250 is not below 0.25
    assert "run run-" in result.output  # the run itself finished and was stored


def test_thresholds_met_pass_and_na_can_be_allowed(tmp_path) -> None:
    result = run_example(tmp_path, "--fail-under", "completeness=0.5", "--fail-under", "element_coverage=0.1",
                         "--allow-na")
    assert result.exit_code == 0, result.output
    assert "gate passed: completeness >= 0.5, element_coverage >= 0.1 (n/a allowed)" in result.output


def test_a_misspelt_metric_is_refused_before_anything_runs_listing_the_valid_names(tmp_path) -> None:
    result = run_example(tmp_path, "--fail-under", "completness=0.6")
    assert result.exit_code == 2
    assert "unknown metric(s) completness; valid names: " in result.output
    assert "element_coverage" in result.output and "c_prec@K" in result.output
    assert not (tmp_path / "ws" / "store.sqlite").exists()  # nothing was evaluated
    for bad, message in (("completeness", "expected METRIC=VALUE"),
                         ("confidence_error=0.2", "lower is better")):
        refused = run_example(tmp_path, "--fail-under", bad)
        assert refused.exit_code == 2 and message in refused.output, refused.output


def test_the_configs_fail_under_gates_the_run_and_the_option_overrides_it(tmp_path) -> None:
    config = tmp_path / "gate.yaml"
    config.write_text("judges: [{model: lexical}]\nfail_under:\n  completeness: 0.75\n  conciseness: 0.2\n",
                      encoding="utf-8")
    failed = run_example(tmp_path, "--config", str(config))
    assert failed.exit_code == 1, failed.output
    assert [line for line in failed.output.splitlines() if line.startswith("FAIL")] == [
        "FAIL completeness 0.500 < 0.750 (n=2, 0 unscored, 0 escalated)"]
    relaxed = run_example(tmp_path, "--config", str(config), "--fail-under", "completeness=0.5")
    assert relaxed.exit_code == 0, relaxed.output
    # a threshold is no setting of the evaluation: the same run id, so the second run came from the store
    assert "2 of 2 samples finished before come from the store" in relaxed.output

    config.write_text("fail_under:\n  completness: 0.75\n", encoding="utf-8")
    misspelt = run_example(tmp_path, "--config", str(config))
    assert misspelt.exit_code == 2
    assert f"{config}: key 'fail_under': unknown metric(s) completness" in misspelt.output


SAMPLES = [Sample(id=q, question=f"{q}?") for q in ("q1", "q2", "q3", "q4")]


def runs_in_store(home, configs: dict[str, dict] | None = None, **runs: tuple[float, ...]) -> None:
    """Runs of element_coverage values; each of the configuration {} unless `configs` gives its own."""
    with Workspace(home).open_store() as store:
        for run_id, values in runs.items():
            store.put(RunInfo(run_id=run_id, dataset="d", system="s", config=(configs or {}).get(run_id, {})))
            store.put_samples(run_id, SAMPLES)
            store.put(*(SampleDiagnostics(run_id=run_id, sample_id=s.id, question=s.question,
                                          metrics=(MetricValue(name="element_coverage", value=v),))
                        for s, v in zip(SAMPLES, values, strict=True)))


def compare(home, *options: str):
    from unittest import mock

    from ragcourt.commands.output import console

    # The shared console may have been made (and its width fixed) by an earlier test, so COLUMNS alone is not enough
    with mock.patch.object(console, "_width", 250):
        return CliRunner().invoke(app, ["compare", *options, "--home", str(home)], env={"COLUMNS": "250"})


def test_compare_fail_on_regression_passes_inside_the_band_and_fails_outside_it(tmp_path) -> None:
    runs_in_store(tmp_path, x=(.5, .5, .5, .5), y=(.6, .4, .6, .4), base=(.7, .7, .7, .7), small=(.6, .6, .6, .6),
                  big=(.5, .5, .5, .5))
    noise = ["--noise", "x", "--noise", "y"]
    inside = compare(tmp_path, "base", "small", *noise, "--fail-on-regression")
    assert inside.exit_code == 0, inside.output
    assert ("ok   element_coverage 0.700 -> 0.600 (-0.100; n=4): inside the noise band ±0.113 (repeat runs x / y "
            "of one configuration)" in inside.output)
    outside = compare(tmp_path, "base", "big", *noise, "--fail-on-regression")
    assert outside.exit_code == 1, outside.output
    assert ("FAIL element_coverage 0.700 -> 0.500 (-0.200; n=4): beyond the noise band ±0.113 (repeat runs x / y "
            "of one configuration)" in outside.output)
    improved = compare(tmp_path, "big", "base", *noise, "--fail-on-regression")
    assert improved.exit_code == 0 and "gate passed: no metric dropped" in improved.output
    without_gate = compare(tmp_path, "base", "big", *noise)
    assert without_gate.exit_code == 0  # the table alone never fails


def test_without_a_noise_band_a_drop_is_named_and_fails_only_on_any_drop(tmp_path) -> None:
    runs_in_store(tmp_path, base=(.7, .7, .7, .7), big=(.5, .5, .5, .5))
    named = compare(tmp_path, "base", "big", "--fail-on-regression")
    assert named.exit_code == 0, named.output
    assert "│ paired A-B differences (no noise band measured) │" in named.output
    assert "note element_coverage 0.700 -> 0.500 (-0.200; n=4): a drop, but no noise band is known" in named.output
    strict = compare(tmp_path, "base", "big", "--fail-on-regression", "--fail-on-any-drop")
    assert strict.exit_code == 1
    assert "FAIL element_coverage 0.700 -> 0.500 (-0.200; n=4): a drop, and no noise band is known" in strict.output


def test_the_band_ragcourt_noise_measured_is_kept_for_compare(tmp_path) -> None:
    runs_in_store(tmp_path, x=(.5, .5, .5, .5), y=(.6, .4, .6, .4), base=(.7, .7, .7, .7), small=(.6, .6, .6, .6),
                  big=(.5, .5, .5, .5))
    measured = CliRunner().invoke(app, ["noise", "x", "y", "--home", str(tmp_path)])
    assert measured.exit_code == 0, measured.output
    kept = json.loads((tmp_path / "noise" / "bands.json").read_text(encoding="utf-8"))
    assert kept["element_coverage"]["per_question_sd"] == pytest.approx(math.sqrt(0.04 / 3))
    assert kept["element_coverage"]["measured"] == "repeat runs x / y of one configuration"
    assert kept["element_coverage"]["source"] == "one_configuration"
    assert compare(tmp_path, "base", "small", "--fail-on-regression").exit_code == 0
    outside = compare(tmp_path, "base", "big", "--fail-on-regression")
    assert outside.exit_code == 1
    assert ("beyond the noise band ±0.113 (`ragcourt noise`: repeat runs x / y of one configuration)"
            in outside.output)


def test_a_flagged_figure_is_left_out_of_the_gate_unless_count_flagged(tmp_path, monkeypatch) -> None:
    """s1's completeness 1.0 was judged without its failed element split: left out, s2's 0.4 fails 0.5; with
    --count-flagged the mean 0.7 passes. The summary says how many figures are flagged."""
    import typer

    from ragcourt.analysis.summary import summarize
    from ragcourt.commands.gate import enforce_fail_under
    from ragcourt.commands.output import console, print_summary
    from ragcourt.schema import DecompositionKind, FigureFlag, InputFlag

    flag = InputFlag(cause=FigureFlag.JUDGED_WITHOUT_SPLIT, splits=(DecompositionKind.ELEMENTS,))
    workspace = Workspace(tmp_path / "ws")
    with workspace.open_store() as store:
        store.put(SampleDiagnostics(run_id="r", sample_id="s1", question="q1", failed_splits=(DecompositionKind.ELEMENTS,),
                                    metrics=(MetricValue(name="completeness", value=1.0, n=2, flag=flag),)),
                  SampleDiagnostics(run_id="r", sample_id="s2", question="q2",
                                    metrics=(MetricValue(name="completeness", value=0.4, n=2),)))
        summary = summarize(store, "r")
    monkeypatch.setattr(console, "_width", 400)
    with console.capture() as printed:
        print_summary(summary)
        with pytest.raises(typer.Exit) as stopped:
            enforce_fail_under(workspace, summary, {"completeness": 0.5}, allow_na=False)
        enforce_fail_under(workspace, summary, {"completeness": 0.5}, allow_na=False, count_flagged=True)
    assert stopped.value.exit_code == 1
    lines = printed.get().splitlines()
    words = " ".join(printed.get().split())  # the table's title wraps at the table's width
    assert "2 samples (0 failed), 0 checks, 0 unscored verdicts, 1 failed splits, 0 escalated" in words
    assert "flagged: 1 figures of 1 samples were judged in a call without the units of a split that failed" in lines[-3]
    assert lines[-2:] == ["FAIL completeness 0.400 < 0.500 (n=1, 0 unscored, 0 escalated, 1 flagged left out)",
                          "gate passed: completeness >= 0.5 (1 flagged figures counted)"]


DIFFERENT = {"judges": [{"model": "semantic"}], "top_k": 3, "llm_concurrency": 4}  # y's settings beside x's {}
ACROSS = "runs x / y of different configurations (judges, top_k), allowed by --allow-different-configs"


def test_a_band_from_runs_of_different_configurations_is_refused_unless_allowed_and_then_said(tmp_path) -> None:
    """Two configurations differ by more than noise: no band from them without --allow-different-configs
    (llm_concurrency changes no figure: not named); allowed, the band says where it came from in every line."""
    runs_in_store(tmp_path, configs={"y": DIFFERENT}, x=(.5, .5, .5, .5), y=(.6, .4, .6, .4), base=(.7, .7, .7, .7),
                  big=(.5, .5, .5, .5))
    refused = CliRunner().invoke(app, ["noise", "x", "y", "--home", str(tmp_path)])
    assert refused.exit_code == 2, refused.output
    assert refused.output.splitlines() == [
        "error: x and y ran different configurations (judges, top_k): their differences are not run-to-run noise, "
        "so no noise band is taken from them; give two runs of one configuration (`ragcourt noise --config FILE "
        "--dataset FILE` runs one twice), or --allow-different-configs to use them anyway"]
    assert not (tmp_path / "noise" / "bands.json").exists()
    gated = compare(tmp_path, "base", "big", "--noise", "x", "--noise", "y", "--fail-on-regression")
    assert gated.exit_code == 2 and gated.output.startswith("error: x and y ran different configurations")

    allowed = CliRunner().invoke(app, ["noise", "x", "y", "--allow-different-configs", "--home", str(tmp_path)])
    assert allowed.exit_code == 0, allowed.output
    assert "warning: x and y ran different configurations (judges, top_k)" in " ".join(allowed.output.split())
    kept = json.loads((tmp_path / "noise" / "bands.json").read_text(encoding="utf-8"))["element_coverage"]
    assert kept == {"per_question_sd": pytest.approx(math.sqrt(0.04 / 3)), "n_questions": 4, "measured": ACROSS,
                    "source": "different_configurations", "differing": ["judges", "top_k"]}
    from_kept = compare(tmp_path, "base", "big", "--fail-on-regression")
    assert from_kept.exit_code == 1, from_kept.output
    assert (f"FAIL element_coverage 0.700 -> 0.500 (-0.200; n=4): beyond the noise band ±0.113 (`ragcourt noise`: "
            f"{ACROSS})") in from_kept.output
    assert ("warning: the band of element_coverage was measured on runs of different configurations (judges, "
            "top_k): it is not run-to-run noise alone") in from_kept.output
    given = compare(tmp_path, "base", "big", "--noise", "x", "--noise", "y", "--allow-different-configs",
                    "--fail-on-regression")
    assert given.exit_code == 1, given.output
    assert f"beyond the noise band ±0.113 ({ACROSS})" in given.output


def test_a_band_kept_before_configurations_were_checked_says_so(tmp_path) -> None:
    runs_in_store(tmp_path, base=(.7, .7, .7, .7), big=(.5, .5, .5, .5))
    (tmp_path / "noise").mkdir()
    (tmp_path / "noise" / "bands.json").write_text(json.dumps({"element_coverage": {
        "per_question_sd": 0.11547, "n_questions": 4, "measured": "repeat runs x / y"}}), encoding="utf-8")
    result = compare(tmp_path, "base", "big", "--fail-on-regression")
    assert result.exit_code == 1, result.output
    assert ("beyond the noise band ±0.113 (`ragcourt noise`: repeat runs x / y (kept before ragcourt checked that "
            "the runs shared a configuration))") in result.output


def test_a_kept_band_that_is_no_band_is_one_line_naming_the_file_metric_and_key(tmp_path) -> None:
    runs_in_store(tmp_path, base=(.7, .7, .7, .7), big=(.5, .5, .5, .5))
    (tmp_path / "noise").mkdir()
    bands = tmp_path / "noise" / "bands.json"
    bands.write_text(json.dumps({"element_coverage": {"per_question_sd": "wide", "n_questions": 4,
                                                      "measured": "x"}}), encoding="utf-8")
    result = compare(tmp_path, "base", "big")
    assert result.exit_code == 2
    assert result.output.splitlines() == [
        f"error: {bands}: metric 'element_coverage', key 'per_question_sd': Input should be a valid number, unable "
        "to parse string as a number; delete it and measure again"]
