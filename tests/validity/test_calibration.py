"""calibration.py's own rules: labels-file checks that need no store, the jury's n/a reason, the jury row for
dimension scores, and the hint an unknown check id carries on the review path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragcourt.data.loaders import DatasetErrors
from ragcourt.schema import CheckKind, Label
from ragcourt.stores.records import RecordStore
from ragcourt.validity.calibration import (
    CHECK_IDS_HINT,
    JURY,
    CalibrationItem,
    HumanLabel,
    calibrate_kind,
    items_from_store,
    load_labels,
)

YES, NO = Label.YES, Label.NO


def _write(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_without_a_store_repeats_are_still_checked_and_an_identical_one_counts_once(tmp_path: Path) -> None:
    good = _write(tmp_path / "good.jsonl", [
        {"check_id": "c1", "label": "yes", "annotator": "ann"},
        {"check_id": "c1", "label": "yes", "annotator": "ann"},
        {"check_id": "c1", "label": "no", "annotator": "bob"},  # another annotator: not a repeat
        {"check_id": "c2", "score": 42},  # no store: the kind (and so the range) is unknown
    ])
    assert load_labels(good) == [HumanLabel(check_id="c1", label=YES, annotator="ann"),
                                 HumanLabel(check_id="c1", label=NO, annotator="bob"),
                                 HumanLabel(check_id="c2", score=42.0)]
    bad = _write(tmp_path / "bad.jsonl", [
        {"check_id": "c1", "score": 3},
        {"check_id": "c1", "score": 3.5},
        {"check_id": "c1", "label": "maybe"},
    ])
    with pytest.raises(DatasetErrors) as caught:
        load_labels(bad)
    assert [str(e) for e in caught.value.errors] == [
        f"{bad}:2: field 'check_id': labelled again by annotator 'human' with score 3.5, after score 3 on line 1: "
        "keep one label per check and annotator",
        f"{bad}:3: field 'label': must be one of yes, no, A, B, Tie, got 'maybe'",
    ]
    assert caught.value.n_lines == 2


def test_a_whole_file_problem_is_reported_alone_and_a_bad_byte_with_the_other_lines(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(DatasetErrors) as caught:
        load_labels(empty)
    assert [str(e) for e in caught.value.errors] == [f"{empty}: file is empty"]
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"check_id": "c1", "label": "yes"}\n\xff\n{"check_id": "c1", "label": "no"}\n')
    with pytest.raises(DatasetErrors) as caught:
        load_labels(bad)
    assert [str(e) for e in caught.value.errors] == [
        f"{bad}:2: invalid UTF-8 (byte 0xff at column 1)",
        f"{bad}:3: field 'check_id': labelled again by annotator 'human' with label 'no', after label 'yes' on "
        "line 1: keep one label per check and annotator",
    ]


def _item(item_id: str, human: Label, j1: Label | None, j2: Label | None, jury: Label | None) -> CalibrationItem:
    return CalibrationItem(item_id=item_id, kind=CheckKind.CLAIM_SUPPORTED, human={"ann": human},
                           judges={"j1": j1, "j2": j2, JURY: jury})


def test_a_jury_that_decided_no_labelled_item_says_why() -> None:
    items = [_item("a", YES, YES, NO, None), _item("b", NO, NO, YES, None), _item("c", NO, None, None, None)]
    report = calibrate_kind(CheckKind.CLAIM_SUPPORTED, items, ["j1", "j2"], n_resamples=20)
    jury = next(a for a in report.agreements if a.rater == JURY)
    reason = ("the judges split on 2 labelled items: a split jury has no label (a run's label there is the first "
              "judge's, provisional until reviewed); no judge decided 1 labelled item")
    assert (jury.accuracy.value, jury.accuracy.na_reason, jury.kappa.na_reason) == (None, reason, reason)
    assert jury.n_rater_undecided == 3
    j1 = next(a for a in report.agreements if a.rater == "j1")
    assert (j1.accuracy.value, j1.accuracy.n) == (1.0, 2)  # the judges' own rows are untouched


def test_a_jury_that_decided_some_items_keeps_its_figures() -> None:
    items = [_item("a", YES, YES, NO, None), _item("b", YES, YES, YES, YES)]
    jury = next(a for a in calibrate_kind(CheckKind.CLAIM_SUPPORTED, items, ["j1", "j2"], n_resamples=20).agreements
                if a.rater == JURY)
    assert (jury.accuracy.value, jury.accuracy.n, jury.n_rater_undecided) == (1.0, 1, 1)


def test_dimension_scores_have_a_jury_row() -> None:
    items = [CalibrationItem(item_id=str(i), kind=CheckKind.DIMENSION_SCORE, human={}, judges={},
                             human_numbers={"ann": h}, judge_numbers={"j1": a, "j2": b, JURY: (a + b) / 2})
             for i, (h, a, b) in enumerate([(1.0, 0.0, 2.0), (5.0, 6.0, 2.0), (9.0, 9.0, 10.0)])]
    report = calibrate_kind(CheckKind.DIMENSION_SCORE, items, ["j1", "j2"], n_resamples=20)
    assert report.raters == ("j1", "j2", JURY)
    assert [(c.rater, c.pearson.n) for c in report.correlations] == [("j1", 3), ("j2", 3), (JURY, 3)]


def test_an_unknown_check_on_the_review_path_says_where_check_ids_are(tmp_path: Path) -> None:
    with RecordStore(tmp_path / "s.sqlite") as store, pytest.raises(ValueError) as caught:
        items_from_store(store, [HumanLabel(check_id="nope", label=YES)])
    assert str(caught.value) == f"1 labels name checks not in the store (first: nope; check ids: {CHECK_IDS_HINT})"
