"""CuBE (seed 000, Table 4) tables read from the store: the scores, gold ranks and counts behind them
(`cube_inputs`), Table 4 and its bounds, counts and retrieved-only analysis, each n/a figure with its reason.

Ranks and R@k count one list, the chunks the system returned in the normal retrieval (what its generator was
shown): a gold document's rank is its position there, and the run's TOP-N (the seed's retrieval depth: 8 there) is
the config's top_k, or the longest such list when the system returned more (precomputed contexts are taken whole).
Every rank thus lies in 1..TOP-N and R@k is R@TOP-N. The rank score follows the config's `rank_score` rule (seed
000's ``10 - rank`` by default), with the seed's extra point where that list held nothing but the gold document.

Each function says why a table cannot be made (missing answer sets, no dimension-score checks) instead of
guessing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import cast

import pandas as pd

from ragcourt.analysis.na_notes import NaNotes, NotedFrame
from ragcourt.data.human_scores import HumanScores
from ragcourt.metrics.cube import (
    AnswerSet,
    CubeReading,
    CubeReport,
    HumanCube,
    RankScores,
    ReadingFigures,
    ReadingSpread,
    Spread,
    cube_report,
    human_cube,
    is_retrieved,
    recall_at_k,
    retrieved_only_analysis,
    score_ranks,
)
from ragcourt.schema import NORMAL, CheckKind, Chunk, ConditionKind, MetricValue, Sample
from ragcourt.schema.config import NO_LLM_MODELS, EvalConfig, RankScoreRule
from ragcourt.stores.records import RecordStore
from ragcourt.systems import Precomputed

SETS = {ConditionKind.NORMAL: AnswerSet.RAG, ConditionKind.CLOSED_BOOK: AnswerSet.CLOSED_BOOK,
        ConditionKind.ORACLE: AnswerSet.ORACLE}


@dataclass(frozen=True)
class Unavailable:
    reason: str


def _is_gold(sample: Sample, chunk: Chunk) -> bool:
    return chunk.id in {d.id for d in sample.gold_documents} or (
        chunk.title is not None and chunk.title in sample.gold_titles)


def gold_rank(sample: Sample, chunks: Sequence[Chunk]) -> int:
    """1-based position of the first gold document among the chunks of the normal retrieval, 0 when none was
    retrieved. The position, not a chunk's own rank field: ranks and TOP-N count the same list."""
    return next((position for position, chunk in enumerate(chunks, start=1) if _is_gold(sample, chunk)), 0)


def only_gold_retrieved(sample: Sample, chunks: Sequence[Chunk]) -> bool:
    """Seed 000, 5.3's "only the correct document was retrieved": the normal retrieval holds chunks, all of them
    gold (several chunks of the gold document are still that document alone)."""
    return bool(chunks) and all(_is_gold(sample, chunk) for chunk in chunks)


def run_top_n(top_k: int, retrievals: Iterable[Sequence[Chunk]]) -> int:
    """The run's TOP-N: the config's top_k, or the most chunks a normal retrieval returned when more."""
    return max([top_k, *(len(chunks) for chunks in retrievals)])


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
    scores (None = unscored or missing), aligned with the samples' gold ranks in the normal retrieval (0: not
    retrieved), whether that retrieval was the gold document alone, the run's TOP-N (`run_top_n`) and the config's
    rank-score rule; and the counts of the checks and verdicts behind them."""

    scores: dict[str, dict[AnswerSet, dict[str, list[float | None]]]]
    ranks: list[int]
    top_n: int
    counts: CubeCounts
    sample_ids: list[str]
    only_gold: list[bool]
    rank_score_rule: RankScoreRule

    @property
    def rank_scores(self) -> RankScores:
        """The samples' rank scores (seed 000, 5.3) under the config's rule."""
        return score_ranks(self.ranks, self.top_n, self.rank_score_rule, self.only_gold)

    @property
    def retrieved(self) -> list[bool]:
        """Per sample: was its gold document retrieved (the cases seed 000's reading averages)."""
        return [is_retrieved(r) for r in self.ranks]


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
    only_gold = [s.id in normal and only_gold_retrieved(s, normal[s.id].chunks) for s in samples]
    top_n = run_top_n(config.top_k, (r.chunks for r in normal.values()))
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
    return CubeInputs(scores={judge: scores[judge] for judge in ordered}, ranks=ranks, top_n=top_n, counts=counts,
                      sample_ids=[s.id for s in samples], only_gold=only_gold, rank_score_rule=config.rank_score)


def top_n_note(inputs: CubeInputs, top_k: int) -> str:
    """What k is in this run's R@k and rank score."""
    rank_scores = inputs.rank_scores
    formula = (f"rank score = {rank_scores.formula}" if rank_scores.scores is not None
               else f"no rank score: {rank_scores.na_reason}")
    if inputs.top_n == top_k:
        return f"k = TOP-N = top_k {top_k}: ranks are positions in the normal retrieval; {formula}"
    return (f"k = TOP-N {inputs.top_n}: the system returned up to {inputs.top_n} chunks, more than top_k {top_k} "
            f"(precomputed contexts are taken whole), so ranks 1..{inputs.top_n} count as retrieved; {formula}")


def fixed_weights(config: EvalConfig) -> bool:
    """Every dimension has a numeric weight (none is 'auto': no correlation with the rank score is needed)."""
    return all(not isinstance(d.weight, str) for d in config.dimensions)


def cube_of_inputs(inputs: CubeInputs, config: EvalConfig) -> CubeReport:
    """Table 4 of what `cube_inputs` read: fixed weights from the config, else automatic ones from the rank score
    (on the run's TOP-N); seed 000's reading of the RAG set (the retrieved cases) by default, every sample beside."""
    fixed = fixed_weights(config)
    weights = {j: {d.name: float(d.weight) for d in config.dimensions} for j in inputs.scores} if fixed else None
    return cube_report(
        inputs.scores, recall_at_k(inputs.ranks), weights=weights,
        rank_scores=None if fixed else inputs.rank_scores,
        proportion=config.trim_proportion, retrieved=inputs.retrieved,
    )


def figure(name: str, report: CubeReport, reading: CubeReading) -> str:
    """The column of a reading's figure ("wgt_score", "cube_score"): the default reading's bare, another's
    suffixed with it ("cube_score_all")."""
    return name if reading is report.reading else f"{name}_{reading}"


def reading_legend(report: CubeReport) -> str:
    """Which reading the unsuffixed columns are, and what the suffixed ones are."""
    shown = {CubeReading.RETRIEVED: "the RAG set averaged over the retrieved cases, the samples whose gold document "
             "was retrieved (seed 000's reading: 'performance on successfully retrieved cases' x R@k; the default)",
             CubeReading.ALL: "the RAG set averaged over every sample (a miss lowers the mean and again R@k)"}
    parts = [f"the dimensions, wgt_score and cube_score: {shown[report.reading]}"]
    parts += [f"*_{reading}: {shown[reading]}" for reading in report.reading_order[1:]]
    return "; ".join(parts) + "; the bounds (closed book, oracle) average every sample in each reading"


def _same_rank_note(rank_scores: RankScores | None) -> str:
    """When every sample's gold document sits at the same place, what that makes the rank score."""
    if rank_scores is None or rank_scores.scores is None or len(set(rank_scores.scores)) != 1:
        return ""
    rank, top_n, n = rank_scores.ranks[0], rank_scores.top_n, len(rank_scores.ranks)
    where = ("the only document retrieved" if rank_scores.only_gold[0] else
             f"at rank {rank} of TOP-N {top_n}" if is_retrieved(rank) else f"not retrieved (TOP-N {top_n})")
    return (f" In this run every sample's gold document was {where}: the rank score is {rank_scores.scores[0]} "
            f"for all {n} samples, so nothing can correlate with it.")


def cube_reasons(report: CubeReport) -> dict[str, dict[str, str]]:
    """Judge -> figure -> why it is n/a, for every n/a figure of a judge's row of Table 4 (its dimensions,
    each reading's wgt_score and cube_score, named by `figure`) and of its weighted totals ("weighted_total
    <answer set>"). Figures that are n/a for the same cause (missing weights: the Wgt. Scores, the CuBE scores
    and every weighted total) share one reason. The rank score is named when it is the same for every sample."""
    out: dict[str, dict[str, str]] = {}
    for judge in report.judges:
        reasons: dict[str, str] = {}
        for dimension, value in judge.normalized_dimensions.items():
            if value.value is None:
                reasons[dimension] = str(value.na_reason)
        if judge.weights.weights is None:
            weights = f"the dimension weights are n/a: {judge.weights.na_reason}."
            if judge.weights.correlations:
                weights += _same_rank_note(report.rank_scores)
            reasons.update({figure(name, report, reading): weights for reading in report.reading_order
                            for name in ("wgt_score", "cube_score")})
            reasons.update({f"weighted_total {answer_set}": weights for answer_set in AnswerSet})
        else:
            for answer_set, total in judge.weighted_totals.items():
                if total.value is None:
                    reasons[f"weighted_total {answer_set}"] = str(total.na_reason)
            for reading in report.reading_order:
                scores = judge.readings[reading]
                wgt, cube = figure("wgt_score", report, reading), figure("cube_score", report, reading)
                if scores.weighted_score.value is None:
                    reasons[wgt] = reasons[cube] = f"Wgt. Score n/a: {scores.weighted_score.na_reason}"
                elif scores.cube_score.value is None:
                    reasons[cube] = str(scores.cube_score.na_reason)
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
    spreads: dict[str, Spread] = {**report.dimension_spread}
    for reading in report.reading_order:
        spreads[figure("wgt_score", report, reading)] = report.spreads[reading].weighted_score
        spreads[figure("cube_score", report, reading)] = report.spreads[reading].cube_score
    reasons = {name: _spread_reason(spread, name) for name, spread in spreads.items()}
    return {name: reason for name, reason in reasons.items() if reason is not None}


def cube_r_at_k_reason(report: CubeReport) -> str | None:
    if report.r_at_k.value is not None:
        return None
    return f"{report.r_at_k.na_reason}: R@k needs samples with a normal retrieval (run some questions)"


def cube_noted_frame(report: CubeReport, counts: CubeCounts | None = None, notes: NaNotes | None = None, *,
                     spread: bool = False) -> NotedFrame:
    """`cube_frame` (spread: `cube_frame_with_spread`) with the reason of every n/a cell in notes."""
    notes = NaNotes() if notes is None else notes
    frame = cube_frame_with_spread(report) if spread else cube_frame(report, counts)
    reasons = cube_reasons(report)
    cells = [{figure: notes.ref(text, judge.judge, figure) for figure, text in reasons[judge.judge].items()
              if figure in frame.columns} for judge in report.judges]
    if spread:
        cells.append({figure: notes.ref(text, SPREAD, figure)
                      for figure, text in cube_spread_reasons(report).items()})
    return NotedFrame(frame, tuple(cells), notes)


def cube_bounds_noted_frame(report: CubeReport, counts: CubeCounts, notes: NaNotes | None = None) -> NotedFrame:
    """`cube_bounds_frame` with the reason of every n/a weighted total in notes."""
    notes = NaNotes() if notes is None else notes
    reasons = cube_reasons(report)
    cells = []
    for judge in report.judges:
        for answer_set in AnswerSet:
            text = reasons[judge.judge].get(f"weighted_total {answer_set}")
            cells.append({} if text is None else
                         {"weighted_total": notes.ref(text, judge.judge, f"weighted_total {answer_set}")})
    return NotedFrame(cube_bounds_frame(report, counts), tuple(cells), notes)


RETRIEVED_ONLY_COLUMNS = ["judge", "dimension", "r_all", "r_retrieved", "mean_retrieved", "sd_retrieved",
                          "n_retrieved"]


def _correlation_reason(value: MetricValue, scores: Sequence[float | None], rank_scores: Sequence[int] | None,
                        retrieved_only: bool) -> str:
    """Why a correlation with the rank score is n/a, and what would give one (the value's own reason when there is
    no rank score)."""
    if rank_scores is None:
        return str(value.na_reason)
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


def cube_retrieved_only_noted(inputs: CubeInputs, notes: NaNotes | None = None) -> NotedFrame:
    """Seed 000, 5.3 per judge and dimension: correlation of the RAG scores with the rank score (`CubeInputs.
    rank_scores`) on all samples and on the samples whose gold document was retrieved, and the mean and sd of the
    retrieved ones; every n/a cell with its reason in notes."""
    notes = NaNotes() if notes is None else notes
    rank_scores = inputs.rank_scores
    values = rank_scores.scores
    retrieved = [i for i, r in enumerate(inputs.ranks) if is_retrieved(r)]
    rows, cells = [], []
    for judge, per_set in inputs.scores.items():
        analysis = retrieved_only_analysis(per_set[AnswerSet.RAG], rank_scores)
        for dimension, split in analysis.items():
            rows.append({"judge": judge, "dimension": dimension, "r_all": split.correlation_all.value,
                         "r_retrieved": split.correlation_retrieved.value, "mean_retrieved": split.mean_retrieved,
                         "sd_retrieved": split.sd_retrieved, "n_retrieved": split.n_retrieved})
            scores = per_set[AnswerSet.RAG][dimension]
            reasons: dict[str, str] = {}
            if split.correlation_all.value is None:
                reasons["r_all"] = _correlation_reason(split.correlation_all, scores, values, False)
            if split.correlation_retrieved.value is None:
                reasons["r_retrieved"] = _correlation_reason(
                    split.correlation_retrieved, [scores[i] for i in retrieved],
                    None if values is None else [values[i] for i in retrieved], True)
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
    """Table 4 of seed 000: per judge the normalized dimensions, Wgt. Score and CuBE score of the default reading,
    then each other reading's Wgt. Score and CuBE score (`figure`, `reading_legend`); with counts, the judge's
    verdicts behind them (every answer set and dimension) and the checks (shared by the judges)."""
    rows = []
    for judge in report.judges:
        row: dict[str, object] = {"judge": judge.judge}
        row.update({d: m.value for d, m in judge.normalized_dimensions.items()})
        for reading in report.reading_order:
            scores = judge.readings[reading]
            row.update({figure("wgt_score", report, reading): scores.weighted_score.value,
                        figure("cube_score", report, reading): scores.cube_score.value})
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
    for reading in report.reading_order:
        spread_row.update({figure("wgt_score", report, reading): _mean_sd(report.spreads[reading].weighted_score),
                           figure("cube_score", report, reading): _mean_sd(report.spreads[reading].cube_score)})
    frame = cube_frame(report).astype(object)
    return pd.concat([frame, pd.DataFrame([spread_row])], ignore_index=True)


# --------------------------------------------------------------------------- human ratings (Table 5)

HUMAN_NOTE = ("human ratings (seed 000, 5.6 and Table 5): people's 0-10 ratings of the RAG answers, trimmed like "
              "the judges' scores, placed between each judge's closed-book and oracle bounds with that judge's "
              "weights and x R@k; 'human @ j' uses judge j's bounds, 'human: mean ± sd' is the spread across the "
              "judges' bounds, 'judges: mean ± sd' is Table 4's. The seed does not say what its human row's sd is "
              "(it is not the spread of one human mean across its four judges' bounds): here it is that spread")


def check_rated_samples(human: HumanScores, sample_ids: Sequence[str]) -> None:
    """Raise ValueError naming the rated sample ids the run does not have (a ratings file of another run)."""
    unknown = sorted(set(human) - set(sample_ids))
    if unknown:
        shown = ", ".join(unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
        raise ValueError(f"{len(unknown)} rated sample(s) are not in this run: {shown}")


def human_ratings(inputs: CubeInputs, human: HumanScores) -> dict[str, list[float | None]]:
    """Dimension -> per-sample human rating aligned with `inputs` (None: not rated); `check_rated_samples`
    first."""
    check_rated_samples(human, inputs.sample_ids)
    dimensions = sorted({d for ratings in human.values() for d in ratings})
    return {d: [human.get(sample, {}).get(d) for sample in inputs.sample_ids] for d in dimensions}


def cube_human(inputs: CubeInputs, report: CubeReport, human: HumanScores, config: EvalConfig) -> HumanCube:
    """Table 5's human row of this run's CuBE report (`human_ratings` raises on unknown sample ids)."""
    return human_cube(report, human_ratings(inputs, human), config.trim_proportion, inputs.retrieved)


def _figures_row(label: str, report: CubeReport, readings: dict[CubeReading, ReadingFigures]) -> dict[str, object]:
    row: dict[str, object] = {"judge": label}
    row.update({d: m.value for d, m in readings[report.reading].normalized_dimensions.items()})
    for reading in report.reading_order:
        row.update({figure("wgt_score", report, reading): readings[reading].weighted_score.value,
                    figure("cube_score", report, reading): readings[reading].cube_score.value})
    return row


def _figures_reasons(report: CubeReport, readings: dict[CubeReading, ReadingFigures]) -> dict[str, str]:
    reasons = {d: str(m.na_reason) for d, m in readings[report.reading].normalized_dimensions.items()
               if m.value is None}
    for reading in report.reading_order:
        for name, value in (("wgt_score", readings[reading].weighted_score),
                            ("cube_score", readings[reading].cube_score)):
            if value.value is None:
                reasons[figure(name, report, reading)] = str(value.na_reason)
    return reasons


def _spread_row(label: str, report: CubeReport, spreads: Mapping[CubeReading, ReadingSpread]) -> dict[str, object]:
    row: dict[str, object] = {"judge": label}
    row.update({d: _mean_sd(s) for d, s in spreads[report.reading].dimensions.items()})
    for reading in report.reading_order:
        row.update({figure("wgt_score", report, reading): _mean_sd(spreads[reading].weighted_score),
                    figure("cube_score", report, reading): _mean_sd(spreads[reading].cube_score)})
    return row


def cube_human_noted(human: HumanCube, report: CubeReport, n_samples: int, notes: NaNotes | None = None
                     ) -> NotedFrame:
    """Table 5 of seed 000: per judge the human ratings between that judge's bounds ("human @ j"), their mean ±
    sd across the judges, and Table 4's row across the judges beside it; every n/a cell with its reason. Column
    samples: the rated samples (human rows), the run's `n_samples` (the judges' row)."""
    notes = NaNotes() if notes is None else notes
    rows, cells = [], []
    for judge, readings in human.judges.items():
        label = f"human @ {judge}"
        rows.append(_figures_row(label, report, readings))
        cells.append({name: notes.ref(text, label, name) for name, text in _figures_reasons(report, readings).items()})
    for label, spreads in (("human: mean ± sd", human.spreads), ("judges: mean ± sd", report.spreads)):
        rows.append(_spread_row(label, report, spreads))
        reasons = {}
        for name in rows[-1]:
            spread_ = _named_spread(report, spreads, name)
            if spread_ is not None and (reason := _spread_reason(spread_, name)) is not None:
                reasons[name] = reason
        cells.append({name: notes.ref(text, label, name) for name, text in reasons.items()})
    frame = pd.DataFrame(rows).astype(object)
    frame["samples"] = [human.n_rated] * (len(human.judges) + 1) + [n_samples]
    return NotedFrame(frame, tuple(cells), notes)


def _named_spread(report: CubeReport, spreads: Mapping[CubeReading, ReadingSpread], name: str) -> Spread | None:
    """The spread behind a column of a "mean ± sd" row (None for the label column)."""
    if name in spreads[report.reading].dimensions:
        return spreads[report.reading].dimensions[name]
    for reading in report.reading_order:
        if name == figure("wgt_score", report, reading):
            return spreads[reading].weighted_score
        if name == figure("cube_score", report, reading):
            return spreads[reading].cube_score
    return None
