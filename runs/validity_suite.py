"""One run of the validity suite: load a set, judge it with the configured judges, compute the figures
(runs.validity), RAGChecker's meta-evaluation beside them when its baseline files are given
(runs.validity_meta_eval), and optionally learn thresholds (a calibration profile)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from ragcourt.data.loaders import HumanAspect, load_ragchecker_pairs
from ragcourt.data.validity_sets import load_hotpotqa_paragraphs, load_ragchecker_baseline, load_wice
from ragcourt.judging import Judge
from ragcourt.runs.calibration import CONSENSUS, CalibrationItem, annotator_name, judge_ragchecker
from ragcourt.runs.validity import (
    HOTPOTQA_SUPPORTING,
    WICE_GRADE,
    WICE_LENIENT,
    WICE_STRICT,
    KindValidity,
    Suite,
    file_sha256,
    hotpotqa_checks,
    items_of,
    judge_checks,
    kind_validity,
    raters_of,
    wice_checks,
)
from ragcourt.runs.validity import fit_thresholds as fit_kind_thresholds
from ragcourt.runs.validity_meta_eval import MetaEvalRow, meta_eval
from ragcourt.schema import Check, CheckKind, Verdict, content_id
from ragcourt.schema.calibration import CalibrationProfile, LearnedThreshold, ThresholdObjective
from ragcourt.stores.records import RecordStore

FIT_REFERENCES = {Suite.WICE: (WICE_STRICT, WICE_LENIENT), Suite.HOTPOTQA: (HOTPOTQA_SUPPORTING,)}
# Told (done, total) as the suite judges: WiCE claims and HotpotQA questions every judge has decided, of all
# taken; for the RAGChecker pairs the pairwise verdicts asked so far, total None (the match reuses stored
# verdicts and judges identical answers once, so how many it asks is known only as it goes).
SuiteProgress = Callable[[int, int | None], None]


@dataclass
class _CountedJudge:
    """A pairwise judge that tells `progress` of every verdict it gives (the match graph asks one check a call)."""

    inner: Judge
    count: Callable[[int], None]

    @property
    def judge_id(self) -> str:
        return self.inner.judge_id

    async def judge(self, kind: CheckKind, checks: Sequence[Check]) -> list[Verdict]:
        verdicts = await self.inner.judge(kind, checks)
        self.count(len(verdicts))
        return verdicts


class SuiteReport(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    suite: Suite
    file: str
    data_sha256: str
    judges: tuple[str, ...]
    n_items: int  # claims, questions or pairs taken from the file (after --limit)
    n_in_file: int
    kinds: tuple[KindValidity, ...]
    meta_eval: tuple[MetaEvalRow, ...] = ()
    baseline_files: tuple[str, ...] = ()
    thresholds: tuple[LearnedThreshold, ...] = ()
    fit_reference: str | None = None


def _with_consensus(item: CalibrationItem) -> CalibrationItem:
    given = set(item.human.values())
    if len(item.human) < 2 or len(given) != 1:
        return item
    return CalibrationItem(item_id=item.item_id, kind=item.kind, human={**item.human, CONSENSUS: given.pop()},
                           judges=item.judges, human_numbers=item.human_numbers, judge_numbers=item.judge_numbers)


async def run_suite(suite: Suite, path: Path, judges: Sequence[Judge], judge_models: Mapping[str, str],
                    store: RecordStore, *, limit: int | None = None, baselines: Sequence[Path] = (),
                    aspects: Sequence[HumanAspect] = (HumanAspect.OVERALL,), seed: int = 0, n_resamples: int = 1000,
                    fit: ThresholdObjective | None = None, fit_on: str | None = None, folds: int = 5,
                    concurrency: int = 8, progress: SuiteProgress | None = None) -> SuiteReport:
    """The suite's figures for `judges` on the set in `path` (its first `limit` items). `fit` learns a
    threshold per judge and binary kind against `fit_on` (a reference of the set: for WiCE strict or lenient;
    default: the first). `progress` is told how far the judging is (SuiteProgress)."""
    if baselines and suite is not Suite.RAGCHECKER:
        raise ValueError("baseline files are RAGChecker's meta-evaluation outputs: they go with --suite ragchecker")
    judge_ids = [j.judge_id for j in judges]
    options: dict[str, Any] = {"seed": seed, "n_resamples": n_resamples}
    kinds: list[KindValidity] = []
    meta_rows: list[MetaEvalRow] = []
    fitted: list[LearnedThreshold] = []
    reference: str | None = None
    if suite is Suite.RAGCHECKER:
        if fit is not None:
            raise ValueError("thresholds are learned for binary checks: the RAGChecker pairs are pairwise (A/B/Tie); "
                             "fit them on --suite wice or hotpotqa")
        pairs = load_ragchecker_pairs(path)
        loaded = [load_ragchecker_baseline(b) for b in baselines]
        taken = pairs[:limit] if limit else pairs
        run_id = f"validity-{content_id([p.sample_id for p in taken], judge_ids)[:10]}"
        asked = 0

        def count(n: int) -> None:
            nonlocal asked
            asked += n
            if progress is not None:
                progress(asked, None)

        counted = [_CountedJudge(j, count) for j in judges] if progress is not None else judges
        by_aspect, _ = await judge_ragchecker(taken, counted, store, run_id, aspects)
        annotators = sorted({annotator_name(i) for p in taken for i in range(len(p.annotations))})
        ceiling = list(itertools.combinations(annotators, 2))
        for aspect, items in by_aspect.items():
            items = [_with_consensus(item) for item in items]
            references = [*annotators, *([CONSENSUS] if len(annotators) > 1 else [])]
            kinds.append(kind_validity(CheckKind.PAIRWISE, f"ragchecker {aspect}", items, judge_ids,
                                       references=references, ceiling_pairs=ceiling, graded_references=annotators,
                                       **options))
        meta_rows = meta_eval(taken, by_aspect, raters_of(next(iter(by_aspect.values())), judge_ids), loaded)
        n_items, n_in_file = len(taken), len(pairs)
    else:
        if suite is Suite.WICE:
            claims = load_wice(path)
            taken_claims = claims[:limit] if limit else claims
            labelled = wice_checks(taken_claims)
            n_items, n_in_file = len(taken_claims), len(claims)
            references, graded = [WICE_STRICT, WICE_LENIENT], [WICE_GRADE]
            title = "wice claims"
        else:
            questions = load_hotpotqa_paragraphs(path)
            taken_questions = questions[:limit] if limit else questions
            labelled = hotpotqa_checks(taken_questions)
            n_items, n_in_file = len(taken_questions), len(questions)
            references, graded = [HOTPOTQA_SUPPORTING], []
            title = "hotpotqa paragraphs"
        checks = [entry.check for entry in labelled]
        n_samples, judged = len({c.sample_id for c in checks}), 0

        def item_done() -> None:
            nonlocal judged
            judged += 1
            if progress is not None:
                progress(judged, n_samples)

        if progress is not None:
            progress(0, n_samples)
        # A HotpotQA question is asked about each paragraph on its own (WiCE's claims have one evidence text
        # already): one target per call is where an LLM's list of linked ids gives a P(yes).
        verdicts = await judge_checks(checks, judges, concurrency=concurrency, on_item=item_done,
                                      one_target_per_call=True)
        items = items_of(labelled, verdicts, judge_ids)
        for kind in dict.fromkeys(item.kind for item in items):
            of_kind = [item for item in items if item.kind is kind]
            kinds.append(kind_validity(kind, title, of_kind, judge_ids, references=references,
                                       graded_references=graded, **options))
        if fit is not None:
            allowed = FIT_REFERENCES[suite]
            reference = fit_on or allowed[0]
            if reference not in allowed:
                raise ValueError(f"--fit-on must name one of {', '.join(allowed)}, got '{fit_on}'")
            fitted = fit_kind_thresholds(items, {j: judge_models.get(j, j) for j in judge_ids}, reference, fit,
                                         folds=folds, seed=seed)
    return SuiteReport(suite=suite, file=str(path), data_sha256=file_sha256(path), judges=tuple(judge_ids),
                       n_items=n_items, n_in_file=n_in_file, kinds=tuple(kinds), meta_eval=tuple(meta_rows),
                       baseline_files=tuple(str(b) for b in baselines), thresholds=tuple(fitted),
                       fit_reference=reference)


def profile_of(report: SuiteReport) -> CalibrationProfile:
    """The calibration profile of a suite run's learned thresholds."""
    if not report.thresholds:
        raise ValueError("no threshold was learned: no judge gave probabilities on the labelled checks (an LLM "
                         "judge gives them only where its endpoint returns logprobs with top alternatives)")
    return CalibrationProfile(suite=str(report.suite), data_file=report.file, data_sha256=report.data_sha256,
                              thresholds=report.thresholds)
