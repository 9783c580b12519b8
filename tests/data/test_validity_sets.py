"""The validity suite's loaders of published sets: WiCE claims, HotpotQA paragraphs with their labels, and
RAGChecker's baseline files; every problem of a file reported at once with file, line and field."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ragcourt.data.loaders import DatasetErrors
from ragcourt.data.validity_sets import (
    WiceLabel,
    load_hotpotqa_paragraphs,
    load_ragchecker_baseline,
    load_wice,
)

SHARED = Path("/work/shared/data")


def wice_row(claim_id: str, label: str = "supported", support=((0,),), evidence=("It rained.", "Then sun.")) -> dict:
    return {"label": label, "supporting_sentences": [list(s) for s in support], "claim": f"claim {claim_id}",
            "evidence": list(evidence), "meta": {"id": claim_id, "claim_title": "T", "claim_section": "",
                                                 "claim_context": ""}}


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.skipif(not SHARED.is_dir(), reason="the shared data slices are not on this machine")
def test_the_shared_wice_and_hotpotqa_slices_load():
    claims = load_wice(SHARED / "wice/claim_dev_sample_60.jsonl")
    assert len(claims) == 60
    assert sorted(sum(c.claim.label is label for c in claims) for label in WiceLabel) == [20, 20, 20]
    questions = load_hotpotqa_paragraphs(SHARED / "hotpotqa/dev_sample_100.jsonl")
    assert len(questions) == 100
    assert sum(len(q.question.contexts) for q in questions) == 1000
    assert sum(p.is_supporting for q in questions for p in q.question.contexts) == 200


def test_wice_binarisations_and_grades():
    assert [(label.strict, label.lenient, label.grade) for label in WiceLabel] == [
        (True, True, 2.0), (False, True, 1.0), (False, False, 0.0)]


def test_a_wice_claim_is_checked_against_its_sentences_one_a_line(tmp_path: Path):
    (item,) = load_wice(write_jsonl(tmp_path / "w.jsonl", [wice_row("c1", evidence=("It  rained.", "Then\nsun."))]))
    assert item.line == 1 and item.claim.evidence_text == "It rained.\nThen sun."


def test_every_problem_of_a_wice_file_is_reported_with_line_and_field(tmp_path: Path):
    path = write_jsonl(tmp_path / "w.jsonl", [
        wice_row("c1"),
        wice_row("c1"),  # the same id again
        wice_row("c3", label="mostly"),
        wice_row("c4", support=((0, 5),)),  # index 5 of two sentences
        {**wice_row("c5"), "evidence": []},
        "not json",
    ])
    with pytest.raises(DatasetErrors) as caught:
        load_wice(path)
    found = [(e.line, e.field) for e in caught.value.errors]
    assert found == [(2, "meta.id"), (3, "label"), (4, "supporting_sentences[0]"), (5, "evidence"), (6, None)]
    text = str(caught.value)
    assert f"{path}:2: field 'meta.id': duplicate claim id 'c1' (first on line 1)" in text
    assert "must be one of supported, partially_supported, not_supported, got 'mostly'" in text
    assert "index 5 is outside the 2 evidence sentences" in text


def test_hotpotqa_questions_need_a_supporting_paragraph_and_unique_ids(tmp_path: Path):
    paragraph = {"id": "0", "title": "A", "paragraph_text": "a", "is_supporting": True}
    row = {"question_id": "q1", "question_text": "Who?", "answers_objects": [], "contexts": [paragraph]}
    path = write_jsonl(tmp_path / "h.jsonl", [
        row, row,
        {**row, "question_id": "q3", "contexts": [{**paragraph, "is_supporting": False}]},
        {**row, "question_id": "q4", "contexts": [{**paragraph, "is_supporting": "yes"}]},
    ])
    with pytest.raises(DatasetErrors) as caught:
        load_hotpotqa_paragraphs(path)
    assert [(e.line, e.field) for e in caught.value.errors] == [
        (2, "question_id"), (3, "contexts"), (4, "contexts[0].is_supporting")]
    (only,) = load_hotpotqa_paragraphs(write_jsonl(tmp_path / "ok.jsonl", [row]))
    assert only.question.contexts[0].text == "A: a"


def baseline_instance(instance_id: int, one: float, two: float, evaluator: str = "ragchecker") -> dict:
    def side(score: float) -> dict:
        return {"model_name": "m", "response": "r", evaluator: {"overall_label": score, "correctness_label": 0.5}}
    return {"instance_id": instance_id, "query": "q", "model1": side(one), "model2": side(two)}


def test_a_ragchecker_baseline_file_reads_both_sides_with_nan_as_missing(tmp_path: Path):
    path = tmp_path / "baseline_ragchecker.json"
    text = json.dumps([baseline_instance(0, 0.2, 0.5), baseline_instance(3, math.nan, 0.1)], indent=2)
    path.write_text(text)  # json.dumps writes NaN as the published files do
    scores = load_ragchecker_baseline(path)
    assert scores.evaluator == "ragchecker" and set(scores.metrics) == {"overall_label", "correctness_label"}
    assert scores.scores[0]["overall_label"] == (0.2, 0.5)
    assert scores.scores[3]["overall_label"] == (None, 0.1)


def test_a_bad_baseline_file_names_line_and_field(tmp_path: Path):
    bad_side = baseline_instance(2, 0.1, 0.2)
    bad_side["model2"] = {"model_name": "m", "response": "r"}  # no evaluator object
    wrong_value = baseline_instance(4, 0.1, 0.2)
    wrong_value["model1"]["ragchecker"]["overall_label"] = "high"
    rows = [baseline_instance(0, 0.1, 0.2), baseline_instance(0, 0.3, 0.4), bad_side, wrong_value]
    path = tmp_path / "baseline_x.json"
    path.write_text(json.dumps(rows, indent=2))
    with pytest.raises(DatasetErrors) as caught:
        load_ragchecker_baseline(path)
    errors = caught.value.errors
    assert [e.field for e in errors] == ["instance_id", "model2", "model1.ragchecker.overall_label"]
    assert [e.line for e in errors] == [text_line(path, 1), text_line(path, 2), text_line(path, 3)]
    assert "duplicate instance 0 (first on line 2)" in str(caught.value)
    not_a_list = tmp_path / "obj.json"
    not_a_list.write_text("{}")
    with pytest.raises(DatasetErrors, match="expected a JSON list of objects, got object"):
        load_ragchecker_baseline(not_a_list)


def text_line(path: Path, index: int) -> int:
    """The line the index-th element of an indented JSON list starts on."""
    starts = [n for n, line in enumerate(path.read_text().splitlines(), start=1) if line == "  {"]
    return starts[index]
