"""Run-level method tables read from the store: CuBE (seed 000, Table 4) and CUE-R per-chunk utility.

Each function says why a table cannot be made (missing answer sets, no perturbations) instead of
guessing.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import pandas as pd

from ragcourt.config import EvalConfig
from ragcourt.metrics.cube import (
    AnswerSet,
    CubeReport,
    Spread,
    cube_report,
    rank_score,
    recall_at_k,
    retrieved_only_analysis,
)
from ragcourt.schema import NORMAL, CheckKind, ConditionKind, Sample, SampleDiagnostics
from ragcourt.stores.records import RecordStore

SETS = {ConditionKind.NORMAL: AnswerSet.RAG, ConditionKind.CLOSED_BOOK: AnswerSet.CLOSED_BOOK,
        ConditionKind.ORACLE: AnswerSet.ORACLE}


@dataclass(frozen=True)
class Unavailable:
    reason: str


def gold_rank(sample: Sample, chunks: tuple) -> int:
    """1-based rank of the first gold document in the normal retrieval, 0 when none was retrieved."""
    gold_ids = {d.id for d in sample.gold_documents}
    for position, chunk in enumerate(chunks, start=1):
        if chunk.id in gold_ids or (chunk.title is not None and chunk.title in sample.gold_titles):
            return chunk.rank or position  # an unranked chunk is ranked by where it was retrieved
    return 0


@dataclass(frozen=True)
class CubeInputs:
    """What CuBE aggregates, read from the store: per judge, answer set and dimension the per-sample
    scores (None = unscored or missing), aligned with the samples' gold ranks in the normal retrieval."""

    scores: dict[str, dict[AnswerSet, dict[str, list[float | None]]]]
    ranks: list[int]


def cube_inputs(store: RecordStore, run_id: str, config: EvalConfig) -> CubeInputs | Unavailable:
    samples = store.get_samples(run_id)
    answers = {(a.sample_id, a.condition.kind) for a in store.get_answers(run_id)}
    for kind in (ConditionKind.CLOSED_BOOK, ConditionKind.ORACLE):
        if not any((s.id, kind) in answers for s in samples):
            return Unavailable(f"no {kind} answers: the CuBE bounds are missing (a precomputed system needs a "
                               f"generator model configured for them: bounds_generator)")
    normal = {r.sample_id: r for r in store.get_retrievals(run_id) if r.condition == NORMAL}
    ranks = [gold_rank(s, normal[s.id].chunks) if s.id in normal else 0 for s in samples]
    checks = [c for c in store.checks_for(run_id) if c.kind is CheckKind.DIMENSION_SCORE]
    if not checks:
        return Unavailable("the run has no dimension-score checks (run with --method cube)")
    position = {s.id: i for i, s in enumerate(samples)}
    by_id = {c.id: c for c in checks}
    dims = [d.name for d in config.dimensions]
    scores: dict[str, dict[AnswerSet, dict[str, list[float | None]]]] = defaultdict(
        lambda: {aset: {d: [None] * len(samples) for d in dims} for aset in AnswerSet}
    )
    for verdict in store.get_verdicts(list(by_id)):
        check = by_id[verdict.check_id]
        if check.dimension in dims and check.condition.kind in SETS:
            per_set = scores[verdict.judge_id][SETS[check.condition.kind]]
            per_set[check.dimension][position[check.sample_id]] = verdict.score
    # The jury's order is the configuration's (the store returns verdicts in no particular order).
    jury = [j.judge_id for j in config.judges]
    ordered = sorted(scores, key=lambda judge: (jury.index(judge) if judge in jury else len(jury), judge))
    return CubeInputs(scores={judge: scores[judge] for judge in ordered}, ranks=ranks)


def cube_table(store: RecordStore, run_id: str, config: EvalConfig) -> CubeReport | Unavailable:
    inputs = cube_inputs(store, run_id, config)
    if isinstance(inputs, Unavailable):
        return inputs
    fixed = all(not isinstance(d.weight, str) for d in config.dimensions)
    weights = {j: {d.name: float(d.weight) for d in config.dimensions} for j in inputs.scores} if fixed else None
    return cube_report(
        inputs.scores, recall_at_k(inputs.ranks), weights=weights,
        rank_scores=None if fixed else [rank_score(r, config.top_k) for r in inputs.ranks],
        proportion=config.trim_proportion,
    )


def cube_retrieved_only_frame(store: RecordStore, run_id: str, config: EvalConfig) -> pd.DataFrame | Unavailable:
    """Seed 000, 5.3 per judge and dimension: correlation of the RAG scores with the rank score on all samples
    and on the samples whose gold document was retrieved, and the mean and sd of the retrieved ones."""
    inputs = cube_inputs(store, run_id, config)
    if isinstance(inputs, Unavailable):
        return inputs
    rows = []
    for judge, per_set in inputs.scores.items():
        analysis = retrieved_only_analysis(per_set[AnswerSet.RAG], inputs.ranks, config.top_k)
        for dimension, split in analysis.items():
            rows.append({"judge": judge, "dimension": dimension, "r_all": split.correlation_all.value,
                         "r_retrieved": split.correlation_retrieved.value, "mean_retrieved": split.mean_retrieved,
                         "sd_retrieved": split.sd_retrieved, "n_retrieved": split.n_retrieved})
    return pd.DataFrame(rows)


def cube_warnings(report: CubeReport) -> list[str]:
    """Every n/a figure of the CuBE table with its reason (degenerate bounds first of all)."""
    warnings = []
    for judge in report.judges:
        if judge.weights.weights is None:
            warnings.append(f"{judge.judge}: weights n/a: {judge.weights.na_reason}")
        for dimension, value in judge.normalized_dimensions.items():
            if value.value is None:
                warnings.append(f"{judge.judge}: {dimension} n/a: {value.na_reason}")
        if judge.weighted_score.value is None:
            warnings.append(f"{judge.judge}: weighted score n/a: {judge.weighted_score.na_reason}")
    if report.r_at_k.value is None:
        warnings.append(f"R@k n/a: {report.r_at_k.na_reason}")
    return warnings


def cube_frame(report: CubeReport) -> pd.DataFrame:
    """Table 4 of seed 000: per judge the normalized dimensions, Wgt. Score and CuBE score."""
    rows = []
    for judge in report.judges:
        row = {"judge": judge.judge}
        row.update({d: m.value for d, m in judge.normalized_dimensions.items()})
        row.update({"wgt_score": judge.weighted_score.value, "cube_score": judge.cube_score.value})
        rows.append(row)
    return pd.DataFrame(rows)


def _mean_sd(spread: Spread) -> str:
    if spread.mean is None:
        return "n/a"
    return f"{spread.mean:.3f} ± {'n/a' if spread.sd is None else f'{spread.sd:.3f}'}"


def cube_frame_with_spread(report: CubeReport) -> pd.DataFrame:
    """`cube_frame` plus seed 000's "Mean ± SD" row across judges (sample sd; n/a below two judges)."""
    spread_row = {"judge": "mean ± sd"}
    spread_row.update({d: _mean_sd(s) for d, s in report.dimension_spread.items()})
    spread_row.update({"wgt_score": _mean_sd(report.weighted_score_spread),
                       "cube_score": _mean_sd(report.cube_score_spread)})
    frame = cube_frame(report).astype(object)
    return pd.concat([frame, pd.DataFrame([spread_row])], ignore_index=True)


def cuer_frame(diagnostics: list[SampleDiagnostics]) -> pd.DataFrame:
    """Mean effect of each perturbation kind on gold and non-gold chunks (seed 004), with row counts."""
    rows = [
        {"perturbation": str(p.condition.kind), "chunk": {True: "gold", False: "non-gold"}.get(p.chunk_is_gold, "unknown"),
         "d_soft_correct": p.d_soft_correct, "d_f1": p.d_f1, "d_confidence": p.d_confidence,
         "trace_divergence": p.trace_divergence}
        for d in diagnostics for p in d.perturbations
    ]
    if not rows:
        return pd.DataFrame()
    frame = pd.DataFrame(rows)
    grouped = frame.groupby(["perturbation", "chunk"])
    table = grouped[["d_soft_correct", "d_f1", "d_confidence", "trace_divergence"]].mean()
    table["rows"] = grouped.size()
    return table.reset_index()
