"""Run-level method tables read from the store: CuBE (seed 000, Table 4) and CUE-R per-chunk utility.

Each function says why a table cannot be made (missing answer sets, no perturbations) instead of
guessing.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import pandas as pd

from ragcourt.config import EvalConfig
from ragcourt.metrics.cube import AnswerSet, CubeReport, cube_report, rank_score, recall_at_k
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
    for chunk in chunks:
        if chunk.id in gold_ids or (chunk.title is not None and chunk.title in sample.gold_titles):
            return chunk.rank or 0
    return 0


def cube_table(store: RecordStore, run_id: str, config: EvalConfig) -> CubeReport | Unavailable:
    samples = store.get_samples(run_id)
    answers = {(a.sample_id, a.condition.kind) for a in store.get_answers(run_id)}
    for kind in (ConditionKind.CLOSED_BOOK, ConditionKind.ORACLE):
        if not any((s.id, kind) in answers for s in samples):
            return Unavailable(f"no {kind} answers: the CuBE bounds are missing (a precomputed system needs a "
                               f"generator model configured for them)")
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
    fixed = all(not isinstance(d.weight, str) for d in config.dimensions)
    weights = {j: {d.name: float(d.weight) for d in config.dimensions} for j in scores} if fixed else None
    return cube_report(
        scores, recall_at_k(ranks), weights=weights,
        rank_scores=None if fixed else [rank_score(r, config.top_k) for r in ranks],
        proportion=config.trim_proportion,
    )


def cube_frame(report: CubeReport) -> pd.DataFrame:
    """Table 4 of seed 000: per judge the normalized dimensions, Wgt. Score and CuBE score; then mean and sd."""
    rows = []
    for judge in report.judges:
        row = {"judge": judge.judge}
        row.update({d: m.value for d, m in judge.normalized_dimensions.items()})
        row.update({"wgt_score": judge.weighted_score.value, "cube_score": judge.cube_score.value})
        rows.append(row)
    return pd.DataFrame(rows)


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
