"""Calibration figures against hand-computed values on a tiny fixture; review decisions as labels."""

from __future__ import annotations

import math

import pytest

from ragcourt.schema import (
    NORMAL,
    Check,
    CheckKind,
    Label,
    Review,
    ReviewAction,
    Verdict,
    VerdictStatus,
)
from ragcourt.stores.records import RecordStore
from ragcourt.validity.calibration import (
    CONSENSUS,
    JURY,
    CalibrationItem,
    calibrate,
    calibrate_kind,
    items_from_store,
    jury_label,
    review_labels,
)

A, B, T = Label.A, Label.B, Label.TIE
HUMAN = {"h1": [A, B, T, B], "h2": [A, A, T, B]}
JUDGES = {"j1": [A, B, A, B], "j2": [A, T, T, None]}
H1_SCORES = [-2.0, 1.0, 0.0, 2.0]
PREFERENCE = {A: -1.0, T: 0.0, B: 1.0}


def fixture() -> list[CalibrationItem]:
    items = []
    for i in range(4):
        judged = {j: labels[i] for j, labels in JUDGES.items()}
        judged[JURY] = jury_label(CheckKind.PAIRWISE, list(judged.values()))
        items.append(CalibrationItem(
            item_id=f"p{i}", kind=CheckKind.PAIRWISE, human={h: labels[i] for h, labels in HUMAN.items()},
            judges=judged, human_numbers={"h1": H1_SCORES[i]},
            judge_numbers={"j1": PREFERENCE[JUDGES["j1"][i]]},
        ))
    return items


def test_pairwise_figures_match_hand_computed_values() -> None:
    report = calibrate_kind(CheckKind.PAIRWISE, fixture(), ["j1", "j2"], seed=0, n_resamples=200)
    rows = {(a.rater, a.reference): a for a in report.agreements}
    j1 = rows[("j1", "h1")]
    # agree on 3 of 4; p_e = 0.5 * 0.25 (A) + 0.5 * 0.5 (B) + 0 * 0.25 (Tie) = 0.375; kappa = 0.375 / 0.625
    assert (j1.accuracy.value, j1.accuracy.n) == (0.75, 4)
    assert j1.kappa.value == pytest.approx(0.6)
    # rows: h1's label, columns: j1's label (A, B, Tie)
    assert j1.confusion == ((1, 0, 0), (0, 2, 0), (1, 0, 0))
    assert j1.accuracy_ci.low is not None and j1.accuracy_ci.low <= 0.75 <= j1.accuracy_ci.high
    # j2 is unscored on the last item: 2 of 3, one left out
    j2 = rows[("j2", "h1")]
    assert (j2.accuracy.value, j2.accuracy.n, j2.accuracy.n_unscored) == (pytest.approx(2 / 3), 3, 1)
    # the jury: A, Tie (B vs Tie split), Tie (A vs Tie split), B -> 3 of 4 with h1
    assert rows[(JURY, "h1")].accuracy.value == 0.75
    # agreement-only subset: items 1, 3, 4 (A, Tie, B); j1 gives A, A, B
    consensus = rows[("j1", CONSENSUS)]
    assert (consensus.accuracy.value, consensus.accuracy.n) == (pytest.approx(2 / 3), 3)
    # annotator against annotator: 3 of 4
    [ceiling] = report.ceiling
    assert (ceiling.rater, ceiling.reference, ceiling.accuracy.value) == ("h1", "h2", 0.75)
    # Fleiss over items 1-3: rows (2,0,0), (0,1,1), (1,0,1); P_bar 1/3, P_e 0.25 + 1/36 + 4/36 -> -1/11
    assert report.fleiss_judges.value == pytest.approx(-1 / 11)
    assert (report.fleiss_judges.n, report.fleiss_judges.n_unscored) == (3, 1)
    [correlation] = [c for c in report.correlations if (c.rater, c.reference) == ("j1", "h1")]
    assert correlation.pearson.value == pytest.approx(5 / (2 * math.sqrt(8.75)))


def test_jury_labels() -> None:
    assert jury_label(CheckKind.PAIRWISE, [A, B]) is T
    assert jury_label(CheckKind.PAIRWISE, [A, A, B, None]) is A
    assert jury_label(CheckKind.CLAIM_SUPPORTED, [Label.YES, Label.NO]) is None  # a split binary jury: undecided
    assert jury_label(CheckKind.CLAIM_SUPPORTED, [None, None]) is None


def test_reviews_are_calibration_labels_for_every_kind_present(tmp_path) -> None:
    def check(kind: CheckKind, subject: str) -> Check:
        return Check(kind=kind, sample_id="s", condition=NORMAL, subject_id=subject, subject_text=subject,
                     target_id="t", target_text="context", dimension="quality" if kind is CheckKind.DIMENSION_SCORE
                     else None)

    scores = [check(CheckKind.DIMENSION_SCORE, f"answer {i}") for i in range(3)]
    claims = [check(CheckKind.CLAIM_SUPPORTED, f"claim {i}") for i in range(2)]
    with RecordStore(tmp_path / "s.sqlite") as store:
        store.put(*scores, *claims)
        store.put(*(Verdict(check_id=c.id, judge_id="j", status=VerdictStatus.OK, score=s)
                    for c, s in zip(scores, (2.0, 5.0, 9.0), strict=True)))
        store.put(*(Verdict(check_id=c.id, judge_id="j", status=VerdictStatus.OK, label=label)
                    for c, label in zip(claims, (Label.YES, Label.NO), strict=True)))
        for c, s in zip(scores, (3.0, 5.0, 8.0), strict=True):
            store.add_review(Review(run_id="r", check_id=c.id, reviewer="ann", action=ReviewAction.OVERRIDE, score=s))
        store.add_review(Review(run_id="r", check_id=claims[0].id, reviewer="ann", action=ReviewAction.ACCEPT,
                                label=Label.YES))
        store.add_review(Review(run_id="r", check_id=claims[1].id, reviewer="ann", action=ReviewAction.OVERRIDE,
                                label=Label.YES))
        labels = review_labels(store, "r")
        items, judge_ids = items_from_store(store, labels)
    assert judge_ids == ["j"] and len(labels) == 5
    by_kind = {r.kind: r for r in calibrate(items, judge_ids, n_resamples=50)}
    [agreement] = by_kind[CheckKind.CLAIM_SUPPORTED].agreements
    assert (agreement.accuracy.value, agreement.accuracy.n) == (0.5, 2)
    [correlation] = by_kind[CheckKind.DIMENSION_SCORE].correlations
    # x = 2, 5, 9; y = 3, 5, 8: sum dx dy = 53/3, sum dx^2 = 74/3, sum dy^2 = 38/3
    assert correlation.pearson.value == pytest.approx(53 / math.sqrt(74 * 38))
    assert correlation.spearman.value == pytest.approx(1.0)
