"""A calibration profile fit from labels of stored checks: a run's review decisions (`ragcourt calibrate --run
RUN --fit-threshold OBJ --save-profile P`) or a labels file (`--labels FILE`), so that what reviewers decide feeds
the jury of later runs.

The thresholds are fit per judge and binary kind as the validity suite fits them (validity.measure.fit_thresholds,
k-fold cross-validated), against the label the check's annotators agree on (a check whose annotators disagree has
no reference and is left out). A kind with fewer than `folds` labels of either class is refused: a k-fold figure
needs each fold's training part to hold both classes, and a threshold without one would be unmeasured.

Review decisions are a biased sample (only escalated checks, where the judges disagreed, are reviewed): the
command prints that caveat; the profile records where its labels came from (CalibrationProfile.suite is
STORED_LABELS, data_file names the run or the file).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence

from ragcourt.schema import Label
from ragcourt.schema.calibration import LearnedThreshold, ThresholdObjective
from ragcourt.stores.records import RecordStore
from ragcourt.validity.calibration import CHECK_IDS_HINT, HumanLabel
from ragcourt.validity.measure import LabelledCheck, fit_thresholds, items_of

AGREED = "reviewed"  # the reference: the label every annotator of the check gave


def labels_sha256(labels: Sequence[HumanLabel]) -> str:
    """A content hash of review decisions, the profile's `data_sha256` where no file holds them."""
    rows = sorted((h.check_id, h.annotator, str(h.label)) for h in labels)
    return hashlib.sha256(json.dumps(rows).encode("utf-8")).hexdigest()


def labelled_checks(store: RecordStore, labels: Sequence[HumanLabel]) -> list[LabelledCheck]:
    """The binary stored checks the labels name, each with the label its annotators agree on. ValueError when a
    label names a check the store does not hold."""
    by_check: dict[str, set[Label]] = {}
    for label in labels:
        if label.label is not None:
            by_check.setdefault(label.check_id, set()).add(label.label)
    checks = store.get_checks(list(by_check))
    unknown = sorted(set(by_check) - {c.id for c in checks})
    if unknown:
        raise ValueError(f"{len(unknown)} labelled checks are not in the store (first: {unknown[0]}; check ids: "
                         f"{CHECK_IDS_HINT})")
    return [LabelledCheck(check, {AGREED: next(iter(by_check[check.id]))}) for check in checks
            if check.kind.is_binary and len(by_check[check.id]) == 1]


def refusal(kind: str, n_yes: int, n_no: int, folds: int) -> str | None:
    if min(n_yes, n_no) >= folds:
        return None
    return (f"no threshold for {kind}: {n_yes} yes and {n_no} no labels, and a {folds}-fold cross-validated fit "
            f"needs at least {folds} of each; review or label more checks of this kind")


def fit_stored_thresholds(store: RecordStore, labelled: Sequence[LabelledCheck], judges: Mapping[str, str],
                          objective: ThresholdObjective, *, folds: int = 5,
                          seed: int = 0) -> tuple[list[LearnedThreshold], list[str]]:
    """Per judge (id -> model) and binary kind of the labelled checks: the threshold on the judge's stored P(yes),
    and the refusals of kinds with too few labels."""
    verdicts = {(v.check_id, v.judge_id): v for v in store.get_verdicts([e.check.id for e in labelled])
                if v.judge_id in judges}
    thresholds: list[LearnedThreshold] = []
    refused = []
    for kind in dict.fromkeys(entry.check.kind for entry in labelled):
        of_kind = [entry for entry in labelled if entry.check.kind is kind]
        n_yes = sum(entry.labels[AGREED] is Label.YES for entry in of_kind)
        reason = refusal(str(kind), n_yes, len(of_kind) - n_yes, folds)
        if reason is not None:
            refused.append(reason)
            continue
        items = items_of(of_kind, verdicts, list(judges))
        thresholds += fit_thresholds(items, judges, AGREED, objective, folds=folds, seed=seed)
    return thresholds, refused
