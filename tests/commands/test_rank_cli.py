"""`ragcourt rank` end to end on the bundled HotpotQA sample (issue 7's worked example), lexical judge:
three answer files ranked in a Swiss tournament, the pool kept as baselines, then a new system placed."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from ragcourt.cli import app
from ragcourt.data.loaders import BundledDataset, bundled, load_hotpotqa
from ragcourt.metrics.text import sentences
from ragcourt.schema.calibration import CalibrationProfile

RUNNER = CliRunner()
N_QUESTIONS = 12


def write_answers(path: Path, answers: dict[str, str], contexts: dict[str, list[dict]]) -> Path:
    with path.open("w", encoding="utf-8") as out:
        for question_id, answer in answers.items():
            out.write(json.dumps({"id": question_id, "question": QUESTIONS[question_id], "answer": answer,
                                  "contexts": contexts[question_id]}) + "\n")
    return path


HOTPOT = load_hotpotqa(bundled(BundledDataset.HOTPOTQA_DEV_100))
SAMPLES = HOTPOT.samples[:N_QUESTIONS]
QUESTIONS = {s.id: s.question for s in SAMPLES}


def test_rank_three_systems_over_hotpotqa_then_place_a_new_one_against_the_pool(tmp_path: Path) -> None:
    gold = {s.id: [{"id": d.id, "title": d.title, "text": d.text} for d in s.gold_documents] for s in SAMPLES}
    reference = write_answers(tmp_path / "reference.jsonl", {s.id: s.reference_answer for s in SAMPLES}, gold)
    first_sentence = {s.id: sentences(s.gold_documents[0].text)[0] for s in SAMPLES}
    medium = write_answers(tmp_path / "first_sentence.jsonl", first_sentence, gold)
    no_answer = write_answers(tmp_path / "dont_know.jsonl", {s.id: "I don't know." for s in SAMPLES},
                              {s.id: [] for s in SAMPLES})
    references = str(bundled(BundledDataset.HOTPOTQA_DEV_100))
    home = str(tmp_path / "home")

    ranked = RUNNER.invoke(app, ["rank", str(reference), str(medium), str(no_answer), "--judge", "lexical",
                                 "--references", references, "--bootstrap", "50", "--save-baselines",
                                 str(tmp_path / "pool"), "--home", home])
    assert ranked.exit_code == 0, ranked.output
    order = [name for name in re.findall(r"(reference|first_sentence|dont_know)", ranked.output)]
    assert order[:3] == ["reference", "first_sentence", "dont_know"]  # the table, best first
    said = " ".join(ranked.output.split())  # the console wraps long lines
    assert "high: reference" in said and "medium: first_sentence" in said and "low: dont_know" in said
    manifest = json.loads((tmp_path / "pool" / "baselines.json").read_text())
    assert (manifest["k"], manifest["initial_rating"]) == (32.0, 1500.0)  # the scale a new system's Elo uses

    # A system with the medium baseline's very answers ties it on every question: level with medium.
    same_as_medium = write_answers(tmp_path / "copy.jsonl", first_sentence, gold)
    placed = RUNNER.invoke(app, ["rank", str(same_as_medium), "--baselines", str(tmp_path / "pool"), "--judge",
                                 "lexical", "--references", references, "--home", home])
    assert placed.exit_code == 0, placed.output
    said = " ".join(placed.output.split())
    assert "placement: level with medium (by the matches)" in said
    rating = float(re.search(r"frozen baselines \(one round from 1500, K=32, as the pool was rated\): ([0-9.]+);", said).group(1))
    # one round from 1500 against the frozen baselines (seed 001, 3.3): 1500 + 32 [(0.5/12 - E(1500, 1528.6))
    # + (0.5 - E(1500, 1494.2)) + (9.5/12 - E(1500, 1477.1))] = 1494.7, by medium's 1494.2 that it tied. (The
    # performance rating it replaces gave about 1461, below the low baseline it beat.)
    assert rating == 1494.7
    assert re.search(r"low\W+dont_know\W+1477\.1\W+7\W+5\W+0\W+0\.79\W+win", said)


def test_rank_tables_keep_system_names_whole_at_80_columns(tmp_path: Path, monkeypatch) -> None:
    """The walkthrough's defect: at 80 columns rich squeezed the tables and printed `extract…` for both
    extractive_k1 and extractive_k5. Names (and numbers) must stay whole in the ranking and the tier tables."""
    from ragcourt.commands.output import console

    monkeypatch.setattr(console, "_width", 80)  # an 80-column terminal, whatever runs the tests
    gold = {s.id: [{"id": d.id, "title": d.title, "text": d.text} for d in s.gold_documents] for s in SAMPLES}
    none = {s.id: [] for s in SAMPLES}
    names = {"extractive_k1": ({s.id: s.reference_answer for s in SAMPLES}, gold),
             "extractive_k5": ({s.id: sentences(s.gold_documents[0].text)[0] for s in SAMPLES}, gold),
             "closed_book": ({s.id: "I don't know." for s in SAMPLES}, none)}
    files = [str(write_answers(tmp_path / f"{name}.jsonl", answers, contexts))
             for name, (answers, contexts) in names.items()]
    references = str(bundled(BundledDataset.HOTPOTQA_DEV_100))
    home = str(tmp_path / "home")

    ranked = RUNNER.invoke(app, ["rank", *files, "--references", references, "--bootstrap", "20",
                                 "--save-baselines", str(tmp_path / "pool"), "--home", home])
    assert ranked.exit_code == 0, ranked.output
    table = ranked.output[:ranked.output.index("└")]
    assert "…" not in table, ranked.output
    assert max(len(line) for line in table.splitlines()) <= 80
    for name in names:
        assert re.search(rf"│ {name} +│ 1[0-9]{{3}}\.[0-9] +│ \[1[0-9]{{3}}, 1[0-9]{{3}}\] ", table), ranked.output

    new = write_answers(tmp_path / "newsys.jsonl", {s.id: s.question for s in SAMPLES}, gold)
    placed = RUNNER.invoke(app, ["rank", str(new), "--baselines", str(tmp_path / "pool"), "--references",
                                 references, "--home", home])
    assert placed.exit_code == 0, placed.output
    table = placed.output[:placed.output.index("└")]
    assert "…" not in table and max(len(line) for line in table.splitlines()) <= 80, placed.output
    for name in names:
        assert re.search(rf"│ (high|medium|low) +│ {name} +│ 1[0-9]{{3}}\.[0-9] +│", table), placed.output


def test_rank_prints_the_position_bias_rate_and_the_single_order_says_it_did_not_measure_it(tmp_path: Path) -> None:
    gold = {s.id: [{"id": d.id, "title": d.title, "text": d.text} for d in s.gold_documents] for s in SAMPLES}
    reference = write_answers(tmp_path / "reference.jsonl", {s.id: s.reference_answer for s in SAMPLES}, gold)
    no_answer = write_answers(tmp_path / "dont_know.jsonl", {s.id: "I don't know." for s in SAMPLES},
                              {s.id: [] for s in SAMPLES})
    common = [str(reference), str(no_answer), "--references", str(bundled(BundledDataset.HOTPOTQA_DEV_100)),
              "--bootstrap", "10", "--home", str(tmp_path / "home")]

    both = RUNNER.invoke(app, ["rank", *common])
    assert both.exit_code == 0, both.output
    said = " ".join(both.output.split())
    # the lexical judge scores each answer against the reference, wherever it is shown: no pair flagged
    assert f"flagged/decided pairs: lexical 0/{N_QUESTIONS} (0.0%)" in said
    assert f"judge verdicts asked: {2 * N_QUESTIONS}" in said

    single = RUNNER.invoke(app, ["rank", *common, "--orders", "single"])
    assert single.exit_code == 0, single.output
    said = " ".join(single.output.split())
    assert "position bias: not measured (one order per question" in said
    # one check per question, each one of the two the both-orders run judged: all reused, half as many
    assert f"judge verdicts asked: 0, reused from the store: {N_QUESTIONS}" in said


def write_scored(path: Path, figures: dict[str, tuple[float, float, float]]) -> Path:
    with path.open("w", encoding="utf-8") as out:
        for question_id, (f, r, u) in figures.items():
            out.write(json.dumps({"id": question_id, "question": QUESTIONS[question_id], "answer": path.stem,
                                  "faithfulness": f, "relevancy": r, "utilization": u}) + "\n")
    return path


def test_rank_with_a_metric_judge_alone_ranks_by_score_s(tmp_path: Path) -> None:
    ids = list(QUESTIONS)[:2]
    # Score_S(q): hi 0.8 and 0.8, mid 0.6 and 0.6, lo 0.58 (a Tie with mid inside 0.05) and 0.2
    hi = write_scored(tmp_path / "hi.jsonl", {ids[0]: (0.9, 0.8, 0.7), ids[1]: (1.0, 0.8, 0.6)})
    mid = write_scored(tmp_path / "mid.jsonl", {ids[0]: (0.6, 0.6, 0.6), ids[1]: (0.6, 0.6, 0.6)})
    lo = write_scored(tmp_path / "lo.jsonl", {ids[0]: (0.7, 0.5, 0.54), ids[1]: (0.2, 0.2, 0.2)})
    ranked = RUNNER.invoke(app, ["rank", str(hi), str(mid), str(lo), "--metric-judge",
                                 "faithfulness,relevancy,utilization@0.05", "--mode", "round_robin", "--bootstrap",
                                 "10", "--home", str(tmp_path / "home")])
    assert ranked.exit_code == 0, ranked.output
    assert re.findall(r"│ (hi|mid|lo) ", ranked.output) == ["hi", "mid", "lo"]
    said = " ".join(ranked.output.split())
    # mid vs lo: a Tie on the first question and mid's win on the second, 1.5 of 2: mid wins the match
    for name, record in (("hi", "2-0-0"), ("mid", "1-0-1"), ("lo", "0-0-2")):
        assert re.search(rf"│ {name} +│ [0-9.]+ +│ [^│]+│ [0-9.]+ +│ {record} ", ranked.output), ranked.output
    assert "threshold:faithfulness+relevancy+utilization@0.05 0/6 (0.0%)" in said
    assert "judge verdicts asked: 0" in said

    bad = RUNNER.invoke(app, ["rank", str(hi), str(mid), "--metric-judge", "@0.1", "--home",
                              str(tmp_path / "home")])
    assert bad.exit_code != 0 and "COLUMN" in bad.output


def _profile(path: Path, kind: str, judge_id: str) -> Path:
    path.write_text(json.dumps({
        "suite": "ragchecker", "data_file": "pairs.json", "data_sha256": "0" * 64,
        "thresholds": [{"judge_id": judge_id, "judge_model": "lexical+semantic", "kind": kind, "threshold": 0.25,
                        "objective": "kappa", "labels": "annotators' mean", "in_sample": 0.3,
                        "cross_validated": 0.2, "folds": 5, "n": 40, "n_positive": 30, "n_without_probability": 0}],
    }), encoding="utf-8")
    return path


def _a_or_tie(tmp_path: Path) -> list[str]:
    """`rank` of a and b on one question: metric judge x prefers a (1 against 0), y ties (0.5 each): votes A and
    Tie, (0.5, 0, 0.5). majority_tie scores it 0.5; mean_probability with a margin < |P_B - P_A| = 0.5 gives a
    the question."""
    for name, x in (("a", 1.0), ("b", 0.0)):
        (tmp_path / f"{name}.jsonl").write_text(json.dumps({"id": "q1", "question": "Who?", "answer": f"{name} says",
                                                            "x": x, "y": 0.5}) + "\n", encoding="utf-8")
    return ["rank", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "--metric-judge", "x", "--metric-judge",
            "y", "--mode", "round_robin", "--bootstrap", "10", "--home", str(tmp_path / "home")]


def test_rank_with_a_profile_decides_by_its_tie_margin(tmp_path: Path) -> None:
    common = _a_or_tie(tmp_path)  # the profile's margin 0.25 < 0.5: a takes the question
    plain = RUNNER.invoke(app, common)
    margin = RUNNER.invoke(app, [*common, "--calibration-profile",
                                 str(_profile(tmp_path / "p.json", "pairwise", "jury"))])
    assert plain.exit_code == 0 and margin.exit_code == 0, margin.output
    said = " ".join(margin.output.split())
    assert "pairwise jury: jury pairwise tie margin on P_B - P_A 0.25 (cv kappa 0.20, n=40) from" in said
    assert "pairwise jury" not in plain.output
    assert re.search(r"run: (rank-\w+)", plain.output)[1] != re.search(r"run: (rank-\w+)", margin.output)[1]
    refused = RUNNER.invoke(app, [*common, "--calibration-profile",
                                  str(_profile(tmp_path / "q.json", "claim_supported", "lexical"))])
    assert refused.exit_code != 0 and "has no pairwise tie margin" in " ".join(refused.output.split())


def test_rank_applies_the_margin_calibrate_learns_on_a_pairs_file(tmp_path: Path) -> None:
    """`calibrate --pairs FILE --fit-threshold --save-profile P` (here the bundled pairs' first ten) makes a
    profile `rank --calibration-profile P` decides by: its margin 0.00 < 0.5, a wins the match it tied without."""
    rows = json.loads(bundled(BundledDataset.RAGCHECKER_PAIRS).read_text(encoding="utf-8"))
    pairs, profile = tmp_path / "pairs.json", tmp_path / "margin.json"
    pairs.write_text(json.dumps(rows[:20]), encoding="utf-8")  # two rows a pair, one per annotator
    made = RUNNER.invoke(app, ["calibrate", "--pairs", str(pairs), "--judge", "lexical", "--judge", "semantic",
                               "--fit-threshold", "kappa", "--bootstrap", "10", "--save-profile", str(profile),
                               "--home", str(tmp_path / "home")])
    assert made.exit_code == 0, made.output
    margin = CalibrationProfile.load(profile).tie_margin()
    assert margin is not None and margin.threshold == 0.0 and margin.n == 10
    common = _a_or_tie(tmp_path)
    plain = RUNNER.invoke(app, common)
    ranked = RUNNER.invoke(app, [*common, "--calibration-profile", str(profile)])
    assert plain.exit_code == 0 and ranked.exit_code == 0, ranked.output
    assert f"pairwise jury: {margin.describe()} from {profile}" in " ".join(ranked.output.split())
    assert re.search(r"│ a +│ [0-9.]+ +│ [^│]+│ [0-9.]+ +│ 0-1-0 ", plain.output), plain.output
    assert re.search(r"│ a +│ [0-9.]+ +│ [^│]+│ [0-9.]+ +│ 1-0-0 ", ranked.output), ranked.output


def test_the_learned_judge_is_refused_by_rank(tmp_path: Path) -> None:
    """It decides yes / no checks from a profile's stacked models; a tournament of it would be all unscored."""
    contexts: dict[str, list[dict]] = {s.id: [] for s in SAMPLES[:2]}
    one = write_answers(tmp_path / "one.jsonl", {s.id: "Ada." for s in SAMPLES[:2]}, contexts)
    two = write_answers(tmp_path / "two.jsonl", {s.id: "Bob." for s in SAMPLES[:2]}, contexts)
    result = RUNNER.invoke(app, ["rank", str(one), str(two), "--judge", "learned", "--home", str(tmp_path / "h")])
    assert result.exit_code == 2
    assert "--judge learned decides binary checks" in " ".join(result.output.split())
