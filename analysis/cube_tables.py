"""CuBE (seed 000, Table 4) tables read from the store: the scores, gold ranks and counts behind them
(`cube_inputs`), Table 4 and its bounds, counts and retrieved-only analysis, each n/a figure with its reason.

Each function says why a table cannot be made (missing answer sets, no dimension-score checks) instead of
guessing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import pandas as pd

from ragcourt.analysis.na_notes import NaNotes, NotedFrame
from ragcourt.metrics.cube import (
    AnswerSet,
    CubeReport,
    Spread,
    cube_report,
    is_retrieved,
    rank_score,
    recall_at_k,
    retrieved_only_analysis,
)
from ragcourt.schema import NORMAL, CheckKind, ConditionKind, MetricValue, Sample
from ragcourt.schema.config import NO_LLM_MODELS, EvalConfig
from ragcourt.stores.records import RecordStore
from ragcourt.systems import Precomputed

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


def _why_no_bound(store: RecordStore, run_id: str, kind: ConditionKind, samples: Sequence[Sample]) -> str:
    if kind is ConditionKind.ORACLE and not any(s.gold_documents for s in samples):
        return ("no sample has gold_documents: the oracle answers from the gold document alone, and gold_titles "
                "do not carry its text")
    run = store.get_run(run_id)
    if run is not None and run.system == Precomputed.name:
        return "a precomputed system needs a generator model configured for them: bounds_generator"
    return f"no sample's {kind} answer succeeded: see the run's failed answers"


def cube_inputs(store: RecordStore, run_id: str, config: EvalConfig) -> CubeInputs | Unavailable:
    samples = store.get_samples(run_id)
    answers = {(a.sample_id, a.condition.kind) for a in store.get_answers(run_id)}
    for kind in (ConditionKind.CLOSED_BOOK, ConditionKind.ORACLE):
        if not any((s.id, kind) in answers for s in samples):
            return Unavailable(f"no {kind} answers: the CuBE bounds are missing ({_why_no_bound(store, run_id, kind, samples)})")
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
        dimension = cast(str, check.dimension)  # by_id holds only checks of a configured dimension
        scores[verdict.judge_id][answer_set][dimension][position[check.sample_id]] = verdict.score
        placed[(verdict.judge_id, answer_set, dimension)][position[check.sample_id]] = verdict.score is not None
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


def fixed_weights(config: EvalConfig) -> bool:
    """Every dimension has a numeric weight (none is 'auto': no correlation with the rank score is needed)."""
    return all(not isinstance(d.weight, str) for d in config.dimensions)


def cube_of_inputs(inputs: CubeInputs, config: EvalConfig) -> CubeReport:
    """Table 4 of what `cube_inputs` read: fixed weights from the config, else automatic ones from the rank score."""
    fixed = fixed_weights(config)
    weights = {j: {d.name: float(d.weight) for d in config.dimensions} for j in inputs.scores} if fixed else None
    return cube_report(
        inputs.scores, recall_at_k(inputs.ranks), weights=weights,
        rank_scores=None if fixed else [rank_score(r, config.top_k) for r in inputs.ranks],
        proportion=config.trim_proportion,
    )


def _same_rank_note(ranks: Sequence[int] | None, top_k: int | None) -> str:
    """When every sample's gold document sits at the same rank, what that makes the rank score."""
    if not ranks or top_k is None or len(set(ranks)) != 1:
        return ""
    rank = ranks[0]
    where = f"at rank {rank} of top_k {top_k}" if is_retrieved(rank) else f"not retrieved (top_k {top_k})"
    return (f" In this run every sample's gold document was {where}: the rank score is {rank_score(rank, top_k)} "
            f"for all {len(ranks)} samples, so nothing can correlate with it.")


def cube_reasons(report: CubeReport, ranks: Sequence[int] | None = None, top_k: int | None = None
                 ) -> dict[str, dict[str, str]]:
    """Judge -> figure -> why it is n/a, for every n/a figure of a judge's row of Table 4 (its dimensions,
    wgt_score, cube_score) and of its weighted totals ("weighted_total <answer set>"). Figures that are n/a
    for the same cause (missing weights: the Wgt. Score, the CuBE score and every weighted total) share one
    reason. ranks and top_k (the run's) name the rank score of the run when it is the same for every sample."""
    out: dict[str, dict[str, str]] = {}
    for judge in report.judges:
        reasons: dict[str, str] = {}
        for dimension, value in judge.normalized_dimensions.items():
            if value.value is None:
                reasons[dimension] = str(value.na_reason)
        if judge.weights.weights is None:
            weights = f"the dimension weights are n/a: {judge.weights.na_reason}."
            if judge.weights.correlations:
                weights += _same_rank_note(ranks, top_k)
            reasons.update({"wgt_score": weights, "cube_score": weights})
            reasons.update({f"weighted_total {answer_set}": weights for answer_set in AnswerSet})
        else:
            for answer_set, total in judge.weighted_totals.items():
                if total.value is None:
                    reasons[f"weighted_total {answer_set}"] = str(total.na_reason)
            if judge.weighted_score.value is None:
                reasons["wgt_score"] = reasons["cube_score"] = f"Wgt. Score n/a: {judge.weighted_score.na_reason}"
            elif judge.cube_score.value is None:
                reasons["cube_score"] = str(judge.cube_score.na_reason)
        out[judge.judge] = reasons
    return out


SPREAD = "mean ± sd across judges"


def _spread_reason(spread: Spread, figure: str) -> str | None:
    if spread.mean is None:
        return f"every judge's {figure} is n/a (see that judge's note)"
    if spread.sd is None:
        return (f"an sd needs at least 2 judges with a {figure}; {spread.n} has one (add a judge, or see the "
                "notes of the others)")
    return None


def cube_spread_reasons(report: CubeReport) -> dict[str, str]:
    """Figure -> why the mean or the sd of the "mean ± sd" row across judges is n/a."""
    spreads = {**report.dimension_spread, "wgt_score": report.weighted_score_spread,
               "cube_score": report.cube_score_spread}
    reasons = {figure: _spread_reason(spread, figure) for figure, spread in spreads.items()}
    return {figure: reason for figure, reason in reasons.items() if reason is not None}


def cube_r_at_k_reason(report: CubeReport) -> str | None:
    if report.r_at_k.value is not None:
        return None
    return f"{report.r_at_k.na_reason}: R@k needs samples with a normal retrieval (run some questions)"


def cube_noted_frame(report: CubeReport, counts: CubeCounts | None = None, notes: NaNotes | None = None, *,
                     ranks: Sequence[int] | None = None, top_k: int | None = None,
                     spread: bool = False) -> NotedFrame:
    """`cube_frame` (spread: `cube_frame_with_spread`) with the reason of every n/a cell in notes."""
    notes = NaNotes() if notes is None else notes
    frame = cube_frame_with_spread(report) if spread else cube_frame(report, counts)
    reasons = cube_reasons(report, ranks, top_k)
    cells = [{figure: notes.ref(text, judge.judge, figure) for figure, text in reasons[judge.judge].items()
              if figure in frame.columns} for judge in report.judges]
    if spread:
        cells.append({figure: notes.ref(text, SPREAD, figure)
                      for figure, text in cube_spread_reasons(report).items()})
    return NotedFrame(frame, tuple(cells), notes)


def cube_bounds_noted_frame(report: CubeReport, counts: CubeCounts, notes: NaNotes | None = None, *,
                            ranks: Sequence[int] | None = None, top_k: int | None = None) -> NotedFrame:
    """`cube_bounds_frame` with the reason of every n/a weighted total in notes."""
    notes = NaNotes() if notes is None else notes
    reasons = cube_reasons(report, ranks, top_k)
    cells = []
    for judge in report.judges:
        for answer_set in AnswerSet:
            text = reasons[judge.judge].get(f"weighted_total {answer_set}")
            cells.append({} if text is None else
                         {"weighted_total": notes.ref(text, judge.judge, f"weighted_total {answer_set}")})
    return NotedFrame(cube_bounds_frame(report, counts), tuple(cells), notes)


RETRIEVED_ONLY_COLUMNS = ["judge", "dimension", "r_all", "r_retrieved", "mean_retrieved", "sd_retrieved",
                          "n_retrieved"]


def _correlation_reason(value: MetricValue, scores: Sequence[float | None], rank_scores: Sequence[int],
                        retrieved_only: bool) -> str:
    """Why a correlation with the rank score is n/a, and what would give one."""
    pairs = [(s, r) for s, r in zip(scores, rank_scores, strict=True) if s is not None]
    among = " among the samples whose gold document was retrieved" if retrieved_only else ""
    if len(pairs) < 2:
        todo = "run more questions" + (" (whose gold document the retrieval finds)" if retrieved_only else "")
    elif len({r for _, r in pairs}) == 1:
        todo = ("it needs questions whose gold documents are retrieved at different ranks" if retrieved_only else
                "it needs questions whose gold documents are retrieved at different ranks or missed")
    else:
        todo = ("the judge gave every sample the same score: nothing to correlate (rule-based judges and coarse "
                "rubrics do this)")
    return f"{value.na_reason}{among}; {todo}"


def cube_retrieved_only_noted(inputs: CubeInputs, top_k: int, notes: NaNotes | None = None) -> NotedFrame:
    """Seed 000, 5.3 per judge and dimension: correlation of the RAG scores with the rank score (top_k + 2 - rank
    of the gold document, 0 when not retrieved) on all samples and on the samples whose gold document was
    retrieved, and the mean and sd of the retrieved ones; every n/a cell with its reason in notes."""
    notes = NaNotes() if notes is None else notes
    rank_scores = [rank_score(r, top_k) for r in inputs.ranks]
    retrieved = [i for i, r in enumerate(inputs.ranks) if is_retrieved(r)]
    rows, cells = [], []
    for judge, per_set in inputs.scores.items():
        analysis = retrieved_only_analysis(per_set[AnswerSet.RAG], inputs.ranks, top_k)
        for dimension, split in analysis.items():
            rows.append({"judge": judge, "dimension": dimension, "r_all": split.correlation_all.value,
                         "r_retrieved": split.correlation_retrieved.value, "mean_retrieved": split.mean_retrieved,
                         "sd_retrieved": split.sd_retrieved, "n_retrieved": split.n_retrieved})
            scores = per_set[AnswerSet.RAG][dimension]
            reasons: dict[str, str] = {}
            if split.correlation_all.value is None:
                reasons["r_all"] = _correlation_reason(split.correlation_all, scores, rank_scores, False)
            if split.correlation_retrieved.value is None:
                reasons["r_retrieved"] = _correlation_reason(
                    split.correlation_retrieved, [scores[i] for i in retrieved], [rank_scores[i] for i in retrieved],
                    True)
            if split.mean_retrieved is None:
                reasons["mean_retrieved"] = ("no sample whose gold document was retrieved has a scored RAG score (R@k "
                                             "is 0 or those verdicts are unscored: check the retrieval, the gold "
                                             "titles and the unscored verdicts)")
            if split.sd_retrieved is None and split.mean_retrieved is not None:
                reasons["sd_retrieved"] = (f"an sd needs at least 2 samples; {split.n_retrieved} sample whose gold "
                                           "document was retrieved has a score (run more questions)")
            cells.append({column: notes.ref(text, judge, f"{dimension} {column}") for column, text in reasons.items()})
    return NotedFrame(pd.DataFrame(rows, columns=RETRIEVED_ONLY_COLUMNS), tuple(cells), notes)


RULE_BASED_CUBE = ("rule-based judges score every dimension as 10 x token F1 against the reference: the dimensions "
                   "and the judges cannot differ; use LLM judges for CuBE")


def rule_based_judges(config: EvalConfig) -> tuple[str, ...]:
    """The judges of the configuration that are rules, not models (lexical, semantic)."""
    return tuple(j.judge_id for j in config.judges if j.model in NO_LLM_MODELS)


def cube_rule_based_note(config: EvalConfig, judges: Sequence[str] | None = None) -> str | None:
    """What CuBE's figures mean when its judges are rules (None when none is): each of them scores every
    dimension as 10 x token F1, so equal cells and a 0 sd are no agreement. judges: those with CuBE scores."""
    rules = [j for j in rule_based_judges(config) if judges is None or j in judges]
    if not rules:
        return None
    every = judges is None or set(judges) <= set(rules)
    if every:
        return (f"{RULE_BASED_CUBE}. Every judge of this run is rule-based ({', '.join(rules)}): equal cells and an "
                "sd of 0 across judges are not agreement")
    return (f"judges {', '.join(rules)} are rule-based: they score every dimension as 10 x token F1 against the "
            "reference, so their dimensions cannot differ; use LLM judges for CuBE")


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
