"""Run-level method tables read from the store: CuBE (seed 000, Table 4) and CUE-R per-chunk utility.

Each function says why a table cannot be made (missing answer sets, no perturbations) instead of
guessing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
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
from ragcourt.schema import (
    NORMAL,
    Answer,
    CheckKind,
    Condition,
    ConditionKind,
    Retrieval,
    Sample,
    SampleDiagnostics,
    VerdictStatus,
)
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
class CubeCount:
    """The records behind one CuBE figure: the dimension-score checks and their judges' verdicts."""

    checks: int = 0  # dimension-score checks
    scored: int = 0  # verdicts with a score: what the trimmed means average (the figure's n)
    unscored: int = 0  # verdicts without a score (unscored replies): left out of the means, never a 0
    no_verdict: int = 0  # sample x judge places with no verdict at all (no check, or the judge gave none)
    escalated: int = 0  # escalated checks: each judge's own score still counts (CuBE reads no jury decision)

    def note(self) -> str:
        """The counts as the CuBE charts and tables word them."""
        missing = f" · no verdict {self.no_verdict}" if self.no_verdict else ""
        return (f"n={self.scored} scored verdicts · unscored {self.unscored}{missing} · "
                f"escalated {self.escalated} of {self.checks} checks")


@dataclass(frozen=True)
class CubeCounts:
    """What `cube_inputs` read, counted: per judge, answer set and dimension the scored and unscored verdicts
    it placed (one per sample: a later verdict for the same place replaces an earlier one, as in the scores);
    per answer set and dimension the checks and the escalated ones (reconciled records of the run)."""

    n_samples: int
    judges: tuple[str, ...]
    dimensions: tuple[str, ...]
    verdicts: dict[tuple[str, AnswerSet, str], tuple[int, int]]  # (judge, set, dimension) -> (scored, unscored)
    checks: dict[tuple[AnswerSet, str], tuple[int, int]]  # (set, dimension) -> (checks, escalated)

    def count(self, answer_set: AnswerSet | None = None, dimension: str | None = None,
              judge: str | None = None) -> CubeCount:
        """The counts of one answer set, dimension and judge; None: all of them (checks ignore the judge)."""
        sets = list(AnswerSet) if answer_set is None else [answer_set]
        dims = list(self.dimensions) if dimension is None else [dimension]
        judges = list(self.judges) if judge is None else [judge]
        scored = unscored = 0
        for key in ((j, a, d) for j in judges for a in sets for d in dims):
            s, u = self.verdicts.get(key, (0, 0))
            scored, unscored = scored + s, unscored + u
        checks = [self.checks.get((a, d), (0, 0)) for a in sets for d in dims]
        return CubeCount(checks=sum(c for c, _ in checks), scored=scored, unscored=unscored,
                         no_verdict=self.n_samples * len(judges) * len(sets) * len(dims) - scored - unscored,
                         escalated=sum(e for _, e in checks))


@dataclass(frozen=True)
class CubeInputs:
    """What CuBE aggregates, read from the store: per judge, answer set and dimension the per-sample
    scores (None = unscored or missing), aligned with the samples' gold ranks in the normal retrieval;
    and the counts of the checks and verdicts behind them."""

    scores: dict[str, dict[AnswerSet, dict[str, list[float | None]]]]
    ranks: list[int]
    counts: CubeCounts


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
    dims = [d.name for d in config.dimensions]
    by_id = {c.id: c for c in checks if c.dimension in dims and c.condition.kind in SETS}
    scores: dict[str, dict[AnswerSet, dict[str, list[float | None]]]] = defaultdict(
        lambda: {aset: {d: [None] * len(samples) for d in dims} for aset in AnswerSet}
    )
    placed: dict[tuple[str, AnswerSet, str], dict[int, bool]] = defaultdict(dict)  # -> position: scored?
    for verdict in store.get_verdicts(list(by_id)):
        check = by_id[verdict.check_id]
        answer_set = SETS[check.condition.kind]
        scores[verdict.judge_id][answer_set][check.dimension][position[check.sample_id]] = verdict.score
        placed[(verdict.judge_id, answer_set, check.dimension)][position[check.sample_id]] = verdict.score is not None
    escalated = {r.check_id for r in store.reconciled_of_checks(run_id, list(by_id)) if r.escalated}
    per_cell: dict[tuple[AnswerSet, str], list[int]] = defaultdict(lambda: [0, 0])
    for check in by_id.values():
        cell = per_cell[(SETS[check.condition.kind], str(check.dimension))]
        cell[0] += 1
        cell[1] += check.id in escalated
    # The jury's order is the configuration's (the store returns verdicts in no particular order).
    jury = [j.judge_id for j in config.judges]
    ordered = sorted(scores, key=lambda judge: (jury.index(judge) if judge in jury else len(jury), judge))
    counts = CubeCounts(
        n_samples=len(samples), judges=tuple(ordered), dimensions=tuple(dims),
        verdicts={key: (sum(found.values()), sum(not s for s in found.values())) for key, found in placed.items()},
        checks={key: (n, e) for key, (n, e) in per_cell.items()},
    )
    return CubeInputs(scores={judge: scores[judge] for judge in ordered}, ranks=ranks, counts=counts)


def cube_table(store: RecordStore, run_id: str, config: EvalConfig) -> CubeReport | Unavailable:
    found = cube_table_counted(store, run_id, config)
    return found if isinstance(found, Unavailable) else found[0]


def cube_table_counted(store: RecordStore, run_id: str, config: EvalConfig
                       ) -> tuple[CubeReport, CubeCounts] | Unavailable:
    """`cube_table` with the counts of the checks and verdicts it was computed from (one read of the store)."""
    inputs = cube_inputs(store, run_id, config)
    if isinstance(inputs, Unavailable):
        return inputs
    fixed = all(not isinstance(d.weight, str) for d in config.dimensions)
    weights = {j: {d.name: float(d.weight) for d in config.dimensions} for j in inputs.scores} if fixed else None
    report = cube_report(
        inputs.scores, recall_at_k(inputs.ranks), weights=weights,
        rank_scores=None if fixed else [rank_score(r, config.top_k) for r in inputs.ranks],
        proportion=config.trim_proportion,
    )
    return report, inputs.counts


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


COUNT_COLUMNS = ("checks", "scored", "unscored", "no_verdict", "escalated")


def _count_row(count: CubeCount) -> dict[str, int]:
    return {column: getattr(count, column) for column in COUNT_COLUMNS}


def cube_frame(report: CubeReport, counts: CubeCounts | None = None) -> pd.DataFrame:
    """Table 4 of seed 000: per judge the normalized dimensions, Wgt. Score and CuBE score; with counts, the
    judge's verdicts behind them (every answer set and dimension) and the checks (shared by the judges)."""
    rows = []
    for judge in report.judges:
        row: dict[str, object] = {"judge": judge.judge}
        row.update({d: m.value for d, m in judge.normalized_dimensions.items()})
        row.update({"wgt_score": judge.weighted_score.value, "cube_score": judge.cube_score.value})
        if counts is not None:
            row.update(_count_row(counts.count(judge=judge.judge)))
        rows.append(row)
    return pd.DataFrame(rows)


def cube_bounds_frame(report: CubeReport, counts: CubeCounts) -> pd.DataFrame:
    """Per judge and answer set the weighted total of the trimmed dimension means, with the judge's verdicts
    behind it (every dimension) and the answer set's checks (shared by the judges)."""
    rows = []
    for judge in report.judges:
        for answer_set in AnswerSet:
            found = judge.weighted_totals.get(answer_set)
            rows.append({"judge": judge.judge, "answer_set": str(answer_set),
                         "weighted_total": found.value if found is not None else None,
                         **_count_row(counts.count(answer_set=answer_set, judge=judge.judge))})
    return pd.DataFrame(rows, columns=["judge", "answer_set", "weighted_total", *COUNT_COLUMNS])


def cube_counts_frame(counts: CubeCounts) -> pd.DataFrame:
    """Per answer set and dimension the checks and every judge's verdicts behind the CuBE figures."""
    rows = [{"answer_set": str(answer_set), "dimension": dimension,
             **_count_row(counts.count(answer_set=answer_set, dimension=dimension))}
            for answer_set in AnswerSet for dimension in counts.dimensions]
    return pd.DataFrame(rows, columns=["answer_set", "dimension", *COUNT_COLUMNS])


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


CUER_KINDS = (ConditionKind.REMOVE, ConditionKind.REPLACE, ConditionKind.DUPLICATE)
CUER_DELTAS = ("d_soft_correct", "d_f1", "d_confidence", "trace_divergence")
CUER_NO_CHECKS = "no judged checks: unscored/escalated checks do not apply"


@dataclass(frozen=True)
class CuerCount:
    """The perturbed answers behind CUE-R's figures for one perturbation kind. CUE-R compares answers with the
    gold answers (no jury), so these replace the unscored and escalated checks of the judged methods.

    failed, unavailable and uncompared are None when the run's answers and retrievals were not read."""

    kind: ConditionKind
    answers: int  # perturbed answers compared with the normal answer: the rows of the figures
    soft: int  # rows with a change in soft correctness (the chart's bars and means)
    failed: int | None = None  # rows whose perturbed answer the system failed to give (unscored): no change
    unavailable: int | None = None  # perturbed conditions retrieved but never answered (the system cannot)
    uncompared: int | None = None  # perturbed answers without a normal answer to compare with: no row

    def note(self) -> str:
        return f"n={self.answers} perturbed answers ({self.soft} with a soft-correctness change)"


def _answer_key(sample_id: str, condition: Condition) -> tuple[str, str]:
    return sample_id, condition.key


def _kind(key: tuple[str, str]) -> ConditionKind:
    return Condition.parse(key[1]).kind


def cuer_counts(diagnostics: Sequence[SampleDiagnostics], answers: Sequence[Answer] | None = None,
                retrievals: Sequence[Retrieval] | None = None) -> tuple[CuerCount, ...]:
    """Per perturbation kind present in the run (CUER_KINDS order): the rows of the diagnostics and, with
    the run's answers and retrievals, the answers that failed or could not be produced."""
    rows = {_answer_key(d.sample_id, p.condition): p for d in diagnostics for p in d.perturbations}
    answered = {_answer_key(a.sample_id, a.condition): a for a in answers or () if a.condition.kind in CUER_KINDS}
    planned = {_answer_key(r.sample_id, r.condition) for r in retrievals or () if r.condition.kind in CUER_KINDS}
    present = {_kind(key) for key in (*rows, *answered, *planned)}
    out = []
    for kind in (k for k in CUER_KINDS if k in present):
        mine = [key for key in rows if _kind(key) is kind]
        out.append(CuerCount(
            kind=kind, answers=len(mine), soft=sum(rows[key].d_soft_correct is not None for key in mine),
            failed=None if answers is None else sum(
                key in answered and answered[key].status is VerdictStatus.UNSCORED for key in mine),
            unavailable=None if answers is None or retrievals is None else sum(
                _kind(key) is kind and key not in answered for key in planned),
            uncompared=None if answers is None else sum(
                _kind(key) is kind and key not in rows for key in answered),
        ))
    return tuple(out)


def cuer_totals(counts: Sequence[CuerCount]) -> tuple[str, str, str]:
    """Lines for a CUE-R figure: its n and that no check was judged; the answers that failed or could not be
    produced; the answers left out for want of a normal answer ("not counted" when the answers were not read)."""
    n = sum(c.answers for c in counts)
    soft = sum(c.soft for c in counts)

    def total(field: str) -> str:
        values = [getattr(c, field) for c in counts]
        return "not counted" if any(v is None for v in values) else str(sum(values))

    return (f"n={n} perturbed answers ({soft} with a soft-correctness change); {CUER_NO_CHECKS}",
            f"not produced: failed {total('failed')} (the system's answer is unscored: no change) · "
            f"unavailable {total('unavailable')} (the system could not answer the condition)",
            f"not compared: {total('uncompared')} perturbed answers without a normal answer")


def cuer_frame(diagnostics: Sequence[SampleDiagnostics], answers: Sequence[Answer] | None = None) -> pd.DataFrame:
    """Mean effect of each perturbation kind on gold and non-gold chunks (seed 004), with row counts: rows
    (perturbed answers), n_<delta> (rows with that change: each mean is over them) and, given the run's
    answers, failed (rows whose perturbed answer is unscored)."""
    status = {_answer_key(a.sample_id, a.condition): a.status for a in answers or ()}
    rows = [
        {"perturbation": str(p.condition.kind), "chunk": {True: "gold", False: "non-gold"}.get(p.chunk_is_gold, "unknown"),
         "d_soft_correct": p.d_soft_correct, "d_f1": p.d_f1, "d_confidence": p.d_confidence,
         "trace_divergence": p.trace_divergence,
         "failed": status.get(_answer_key(d.sample_id, p.condition)) is VerdictStatus.UNSCORED}
        for d in diagnostics for p in d.perturbations
    ]
    if not rows:
        return pd.DataFrame()
    frame = pd.DataFrame(rows)
    frame[list(CUER_DELTAS)] = frame[list(CUER_DELTAS)].astype(float)  # None -> NaN: left out of the means
    grouped = frame.groupby(["perturbation", "chunk"])
    table = grouped[list(CUER_DELTAS)].mean()
    table["rows"] = grouped.size()
    counted = grouped[list(CUER_DELTAS)].count()
    for column in CUER_DELTAS:
        table[f"n_{column}"] = counted[column]
    if answers is not None:
        table["failed"] = grouped["failed"].sum().astype(int)
    return table.reset_index()
