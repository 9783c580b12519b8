"""Run-level method tables read from the store: CuBE (seed 000, Table 4) and CUE-R per-chunk utility.

Each function says why a table cannot be made (missing answer sets, no perturbations) instead of
guessing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import pandas as pd

from ragcourt.config import EvalConfig
from ragcourt.metrics import cuer
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
from ragcourt.schema import (
    NORMAL,
    Answer,
    CheckKind,
    Condition,
    ConditionKind,
    MetricValue,
    PerturbationEffect,
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
    return cube_of_inputs(inputs, config), inputs.counts


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


@dataclass
class NaNotes:
    """Numbered reasons for the n/a figures of a section: each distinct reason gets one number, and lists the
    figures it explains (grouped by subject: a judge, "mean ± sd", ...)."""

    texts: list[str] = field(default_factory=list)
    where: list[dict[str, list[str]]] = field(default_factory=list)  # per note: subject -> figures

    def ref(self, text: str, subject: str, figure: str) -> int:
        """The number of this reason (1-based), recording that it explains `figure` of `subject`."""
        if text not in self.texts:
            self.texts.append(text)
            self.where.append({})
        number = self.texts.index(text) + 1
        figures = self.where[number - 1].setdefault(subject, [])
        if figure not in figures:
            figures.append(figure)
        return number

    def figures(self, number: int) -> str:
        """What note `number` explains: "lexical: wgt_score, cube_score; semantic: wgt_score"."""
        return "; ".join(f"{subject}: {', '.join(figures)}" if subject else ", ".join(figures)
                         for subject, figures in self.where[number - 1].items())

    def entries(self) -> list[str]:
        """Each note, in number order: "lexical: wgt_score, cube_score n/a: <reason>"."""
        return [f"{self.figures(i)} n/a: {text}" for i, text in enumerate(self.texts, start=1)]

    def lines(self) -> list[str]:
        """Each note as a numbered line: "[1] lexical: wgt_score, cube_score n/a: <reason>"."""
        return [f"[{i}] {entry}" for i, entry in enumerate(self.entries(), start=1)]


@dataclass(frozen=True)
class NotedFrame:
    """A table whose n/a cells carry the number of their reason in `notes` (cells: per row, column -> number)."""

    frame: pd.DataFrame
    cells: tuple[dict[str, int], ...]
    notes: NaNotes

    def marked(self) -> pd.DataFrame:
        """The frame with every noted n/a cell written "n/a [k]" (for a terminal; the page links its notes)."""
        out = self.frame.astype(object)
        for row, cells in enumerate(self.cells):
            for column, number in cells.items():
                at = (row, out.columns.get_loc(column))
                value = out.iat[at]
                # a text figure ("0.667 ± n/a") keeps its value; a missing one is the note alone
                out.iat[at] = (value.replace("n/a", f"n/a [{number}]") if isinstance(value, str)
                               else f"n/a [{number}]")
        return out

    def with_reasons(self) -> pd.DataFrame:
        """The frame with an na_reason column: per row, its n/a columns and why (what the exports hold)."""
        reasons = []
        for cells in self.cells:
            grouped: dict[int, list[str]] = {}
            for column, number in cells.items():
                grouped.setdefault(number, []).append(column)
            reasons.append("; ".join(f"{', '.join(columns)}: {self.notes.texts[number - 1]}"
                                     for number, columns in grouped.items()) or None)
        return self.frame.assign(na_reason=reasons)

    def lines(self) -> list[str]:
        """The notes this table's cells refer to."""
        used = sorted({n for cells in self.cells for n in cells.values()})
        return [line for i, line in enumerate(self.notes.lines(), start=1) if i in used]


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


def cube_retrieved_only_table(store: RecordStore, run_id: str, config: EvalConfig) -> NotedFrame | Unavailable:
    """`cube_retrieved_only_noted` of a run: the terminal prints `.marked()` and `.lines()`."""
    inputs = cube_inputs(store, run_id, config)
    return inputs if isinstance(inputs, Unavailable) else cube_retrieved_only_noted(inputs, config.top_k)


def cube_retrieved_only_frame(store: RecordStore, run_id: str, config: EvalConfig) -> pd.DataFrame | Unavailable:
    """The figures of `cube_retrieved_only_table` (n/a as NaN, without the reasons)."""
    found = cube_retrieved_only_table(store, run_id, config)
    return found if isinstance(found, Unavailable) else found.frame


def cube_warnings(report: CubeReport, ranks: Sequence[int] | None = None, top_k: int | None = None) -> list[str]:
    """Every n/a figure of the CuBE table (and its mean ± sd row) with its reason, each reason once with the
    figures it explains (degenerate bounds first of all)."""
    notes = NaNotes()
    for judge, reasons in cube_reasons(report, ranks, top_k).items():
        for figure, text in reasons.items():
            notes.ref(text, judge, figure)
    for figure, text in cube_spread_reasons(report).items():
        notes.ref(text, SPREAD, figure)
    warnings = [f"{notes.figures(i)} n/a: {text}" for i, text in enumerate(notes.texts, start=1)]
    r_at_k = cube_r_at_k_reason(report)
    return [*warnings, *([f"R@k n/a: {r_at_k}"] if r_at_k else [])]


RULE_BASED_CUBE = ("rule-based judges score every dimension as 10 x token F1 against the reference: the dimensions "
                   "and the judges cannot differ; use LLM judges for CuBE")


def rule_based_judges(config: EvalConfig) -> tuple[str, ...]:
    """The judges of the configuration that are rules, not models (lexical, semantic)."""
    from ragcourt.report.data import NO_LLM_MODELS

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
    soft: int  # rows where the change in soft correctness is defined (both answers scored): the bars and means
    changed: int | None = None  # of those, the rows where soft correctness changed (None: not counted)
    failed: int | None = None  # rows whose perturbed answer the system failed to give (unscored): no change
    unavailable: int | None = None  # perturbed conditions retrieved but never answered (the system cannot)
    uncompared: int | None = None  # perturbed answers without a normal answer to compare with: no row

    def note(self) -> str:
        return f"n={self.answers} perturbed answers ({_soft_note(self.soft, self.changed)})"


def _soft_note(soft: int, changed: int | None) -> str:
    """How many rows have a soft-correctness value to compare (the change is defined) and how many changed."""
    of = "" if changed is None else f", {changed} of them changed"
    return f"{soft} with a soft-correctness value to compare with the normal answer{of}"


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
            changed=sum(rows[key].d_soft_correct not in (None, 0.0) for key in mine),
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
    changed = None if any(c.changed is None for c in counts) else sum(c.changed or 0 for c in counts)

    def total(field: str) -> str:
        values = [getattr(c, field) for c in counts]
        return "not counted" if any(v is None for v in values) else str(sum(values))

    return (f"n={n} perturbed answers ({_soft_note(soft, changed)}); {CUER_NO_CHECKS}",
            f"not produced: failed {total('failed')} (the system's answer is unscored: no change) · "
            f"unavailable {total('unavailable')} (the system could not answer the condition)",
            f"not compared: {total('uncompared')} perturbed answers without a normal answer")


@dataclass(frozen=True)
class ClosedBookControl:
    """Seed 004's zero-retrieval control: per sample, the closed-book answer (the question alone) compared with the
    normal answer, as a perturbation is (closed book - normal). reason says why there is no comparison, and
    what to do, when effects is empty."""

    effects: tuple[tuple[str, PerturbationEffect], ...]  # (sample id, closed book vs normal)
    soft_closed: float | None = None  # mean soft correctness of the compared closed-book answers
    soft_normal: float | None = None  # ... and of the normal answers of the same samples
    f1_closed: float | None = None
    f1_normal: float | None = None
    n_soft: int = 0  # samples where both answers have a soft correctness (the means are over them)
    reason: str | None = None

    @property
    def n(self) -> int:
        return len(self.effects)

    def note(self) -> str:
        """One line for the CUE-R table and chart."""
        if not self.effects:
            return f"closed-book control (seed 004: the question alone, no context): {self.reason}"

        def pair(closed: float | None, normal: float | None) -> str:
            return ("n/a" if closed is None or normal is None else
                    f"{closed:.3f} vs normal {normal:.3f} (change {closed - normal:+.3f})")

        return (f"closed-book control (seed 004: the question alone, no context), n={self.n} samples "
                f"({self.n_soft} with both answers scored): soft correctness {pair(self.soft_closed, self.soft_normal)}"
                f"; F1 {pair(self.f1_closed, self.f1_normal)}")


CLOSED_BOOK_NOT_RUN = ("not run (add closed_book to the config's conditions, e.g. conditions: [normal, closed_book]; "
                       "--method cuer adds it to a new run)")


def _mean_of(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def cuer_closed_book(samples: Sequence[Sample], answers: Sequence[Answer], retrievals: Sequence[Retrieval]
                     ) -> ClosedBookControl:
    """The closed-book control of a run from its samples and answers (the stored diagnostics keep only the
    chunk perturbations); retrievals: the run's, to tell "not run" (no closed-book condition was planned) from
    "not answered"."""
    by_key = {(a.sample_id, a.condition.kind): a for a in answers
              if a.condition.kind in (ConditionKind.NORMAL, ConditionKind.CLOSED_BOOK) and a.condition.chunk_id is None}
    closed = [s for s in samples if (s.id, ConditionKind.CLOSED_BOOK) in by_key]
    if not closed:
        planned = any(r.condition.kind is ConditionKind.CLOSED_BOOK for r in retrievals)
        reason = ("not answered: the system gave no closed-book answer (a precomputed system needs a generator for "
                  "it: set bounds_generator in the config)" if planned else CLOSED_BOOK_NOT_RUN)
        return ClosedBookControl(effects=(), reason=reason)
    paired = [s for s in closed if (s.id, ConditionKind.NORMAL) in by_key]
    if not paired:
        return ClosedBookControl(effects=(), reason="no sample has a normal answer to compare its closed-book answer "
                                 "with (see the failed samples)")

    def outcome(answer: Answer, sample: Sample) -> cuer.Outcome:
        text = answer.text if answer.status is VerdictStatus.OK else None
        return cuer.Outcome.score(answer.condition, text, sample.gold_answers, answer.confidence,
                                  answer.used_chunk_ids if text is not None else None)

    pairs = [(s, outcome(by_key[(s.id, ConditionKind.NORMAL)], s), outcome(by_key[(s.id, ConditionKind.CLOSED_BOOK)], s))
             for s in paired]
    effects = tuple((s.id, cuer.perturbation_effect(normal, closed_book, {}, s.gold_titles))
                    for s, normal, closed_book in pairs)
    both = [(n, c) for _, n, c in pairs if n.soft_correct is not None and c.soft_correct is not None]
    f1 = [(n, c) for _, n, c in pairs if n.f1 is not None and c.f1 is not None]
    reason = None
    if not both:
        reason = "no sample has both answers scored against a gold answer (the samples need gold answers)"
    return ClosedBookControl(
        effects=effects, n_soft=len(both), reason=reason,
        soft_closed=_mean_of([float(c.soft_correct) for _, c in both]),
        soft_normal=_mean_of([float(n.soft_correct) for n, _ in both]),
        f1_closed=_mean_of([c.f1 for _, c in f1]), f1_normal=_mean_of([n.f1 for n, _ in f1]),
    )


def cuer_closed_book_of_run(store: RecordStore, run_id: str, answers: Sequence[Answer] | None = None,
                            retrievals: Sequence[Retrieval] | None = None) -> ClosedBookControl:
    """`cuer_closed_book` read from the store (answers, retrievals: the run's, when already read)."""
    answers = store.get_answers(run_id) if answers is None else answers
    retrievals = store.get_retrievals(run_id) if retrievals is None else retrievals
    return cuer_closed_book(store.get_samples(run_id), answers, retrievals)


CLOSED_BOOK_ROW = ("closed_book", "none (no context)")


def cuer_frame(diagnostics: Sequence[SampleDiagnostics], answers: Sequence[Answer] | None = None,
               closed_book: ClosedBookControl | None = None) -> pd.DataFrame:
    """Mean effect of each perturbation kind on gold and non-gold chunks (seed 004), with row counts: rows
    (perturbed answers), n_<delta> (rows with that change: each mean is over them) and, given the run's
    answers, failed (rows whose perturbed answer is unscored). With closed_book, a last row "closed_book / none
    (no context)": the closed-book control's mean change against the normal answer."""
    status = {_answer_key(a.sample_id, a.condition): a.status for a in answers or ()}

    def row(sample_id: str, p: PerturbationEffect, chunk: str | None = None) -> dict[str, object]:
        return {"perturbation": str(p.condition.kind),
                "chunk": chunk or {True: "gold", False: "non-gold"}.get(p.chunk_is_gold, "unknown"),
                "d_soft_correct": p.d_soft_correct, "d_f1": p.d_f1, "d_confidence": p.d_confidence,
                "trace_divergence": p.trace_divergence,
                "failed": status.get(_answer_key(sample_id, p.condition)) is VerdictStatus.UNSCORED}

    rows = [row(d.sample_id, p) for d in diagnostics for p in d.perturbations]
    control = [row(sample_id, p, CLOSED_BOOK_ROW[1]) for sample_id, p in (closed_book.effects if closed_book else ())]
    if not rows and not control:
        return pd.DataFrame()
    tables = [_cuer_means(pd.DataFrame(found), answers is not None) for found in (rows, control) if found]
    return pd.concat(tables, ignore_index=True)


def _cuer_means(frame: pd.DataFrame, failed: bool) -> pd.DataFrame:
    frame[list(CUER_DELTAS)] = frame[list(CUER_DELTAS)].astype(float)  # None -> NaN: left out of the means
    grouped = frame.groupby(["perturbation", "chunk"])
    table = grouped[list(CUER_DELTAS)].mean()
    table["rows"] = grouped.size()
    counted = grouped[list(CUER_DELTAS)].count()
    for column in CUER_DELTAS:
        table[f"n_{column}"] = counted[column]
    if failed:
        table["failed"] = grouped["failed"].sum().astype(int)
    return table.reset_index()
