"""`ragcourt rank` end to end on the bundled HotpotQA sample (issue 7's worked example), lexical judge:
three answer files ranked in a Swiss tournament, the pool kept as baselines, then a new system placed."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from ragcourt.cli import app
from ragcourt.datasets import BundledDataset, bundled, load_hotpotqa
from ragcourt.text import sentences

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

    # A system with the medium baseline's very answers ties it on every question: level with medium.
    same_as_medium = write_answers(tmp_path / "copy.jsonl", first_sentence, gold)
    placed = RUNNER.invoke(app, ["rank", str(same_as_medium), "--baselines", str(tmp_path / "pool"), "--judge",
                                 "lexical", "--references", references, "--home", home])
    assert placed.exit_code == 0, placed.output
    said = " ".join(placed.output.split())
    assert "placement: level with medium (by the matches)" in said
    # Why the matches place it, not the rating: against a pool whose Elos are 17 and 34 apart, its performance
    # rating (about 1461) falls below the low baseline (1477.1) although it beat low and tied medium.
    rating = float(re.search(r"frozen baselines\): ([0-9.]+);", said).group(1))
    assert rating < 1477.1 and re.search(r"low\W+dont_know\W+1477\.1\W+7\W+5\W+0\W+0\.79\W+win", said)
