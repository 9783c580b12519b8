"""One section per method present in a run: its tables (DataFrames, also exported) and charts (SVG).

A method whose table cannot be made says why (e.g. CuBE without closed-book answers) instead of
showing numbers it does not have.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pandas as pd
from markupsafe import Markup

from ragcourt.analysis.cube_tables import (
    HUMAN_NOTE,
    SPREAD,
    Unavailable,
    cube_bounds_noted_frame,
    cube_counts_frame,
    cube_human,
    cube_human_noted,
    cube_inputs,
    cube_noted_frame,
    cube_of_inputs,
    cube_r_at_k_reason,
    cube_retrieved_only_noted,
    cube_rule_based_note,
    cube_spread_reasons,
    figure,
    fixed_weights,
    reading_legend,
    top_n_note,
)
from ragcourt.analysis.cuer_tables import (
    CLOSED_BOOK_ROW,
    cuer_closed_book_of_run,
    cuer_condition_frame,
    cuer_counts,
    cuer_frame,
    cuer_totals,
)
from ragcourt.analysis.na_notes import NaNotes, NotedFrame
from ragcourt.analysis.qcare_tables import (
    UNDECIDED_TABLE,
    gap_share_frame,
    qcare_sample_frame,
    uncovered_subquery_frame,
    undecided_frame,
    unsupported_claim_frame,
)
from ragcourt.analysis.summary import MetricRow
from ragcourt.data.human_scores import HumanScores
from ragcourt.metrics.values import MetricKey, MetricName
from ragcourt.report.cube_chart import cube_bounds_svg
from ragcourt.report.cuer_chart import cuer_utility_svg
from ragcourt.report.cuer_heatmap import cuer_heatmap_svg
from ragcourt.report.data import ReportData
from ragcourt.report.glance_charts import gap_attribution_svg, gap_rows
from ragcourt.report.svg import Bar, bar_chart
from ragcourt.schema import NORMAL, Retrieval, SampleDiagnostics
from ragcourt.schema.config import Method
from ragcourt.stores.records import RecordStore

QCARE_METRICS = (MetricName.C_PRECISION, MetricName.C_NDCG, MetricName.COMPLETENESS, MetricName.CONCISENESS,
                 MetricName.VERIFIABLENESS)
ANSWER_METRICS = (MetricName.SOFT_CORRECTNESS, MetricName.ANSWER_F1, MetricName.EXACT_MATCH,
                  MetricName.GROUNDING, MetricName.CONFIDENCE_ERROR)
ELEMENT_NOTE = "document_gap means 'documents doubtful': a suspicion, not proof"


@dataclass(frozen=True)
class NamedTable:
    name: str  # file-name safe: exports are <name>.csv / <name>.parquet
    title: str
    frame: pd.DataFrame
    # per row: column -> number of the section's n/a note (Section.na_notes) that says why the cell is n/a
    cells: tuple[dict[str, int], ...] = ()
    hidden: tuple[str, ...] = ()  # exported columns the page does not show (the reasons: its notes say them)

    @classmethod
    def noted(cls, name: str, title: str, noted: NotedFrame) -> NamedTable:
        """A table whose n/a cells point to numbered notes; its export holds the reasons (na_reason column)."""
        return cls(name, title, noted.with_reasons(), cells=noted.cells, hidden=("na_reason",))


@dataclass(frozen=True)
class Section:
    anchor: str
    title: str
    notes: tuple[str, ...] = ()
    tables: tuple[NamedTable, ...] = ()
    charts: tuple[Markup, ...] = field(default=())
    warnings: tuple[str, ...] = ()  # shown first and highlighted: what makes the figures meaningless
    na_notes: tuple[str, ...] = ()  # numbered reasons of the n/a figures: "n/a [k]" in a table or chart is note k


def metric_frame(rows: tuple[MetricRow, ...]) -> pd.DataFrame:
    return pd.DataFrame(
        [{"metric": r.name, "mean": r.mean, "samples": r.n_samples, "n_a": r.n_na, "unscored": r.n_unscored,
          "escalated": r.n_escalated} for r in rows],
        columns=["metric", "mean", "samples", "n_a", "unscored", "escalated"],
    )


COUNTS_LEGEND = ("n: samples with a value · n/a: samples without one",
                 "unscored: units left out because their checks were unscored · escalated: escalated checks")


def counts_note(row: MetricRow) -> str:
    """The counts behind one metric, as the metric tables show them (samples, n_a, unscored, escalated)."""
    return f"n={row.n_samples} · n/a {row.n_na} · unscored {row.n_unscored} · escalated {row.n_escalated}"


def _metric_bars(rows: tuple[MetricRow, ...]) -> list[Bar]:
    return [Bar(r.name, r.mean, counts_note(r)) for r in rows]


def _diagnostics(data: ReportData) -> list[SampleDiagnostics]:
    return data.diagnostics  # every question's, not only the drill-down's


def qcare_section(data: ReportData) -> Section:
    rows = tuple(r for r in data.summary.metrics if MetricKey.of(r.name).base in QCARE_METRICS)
    notes = ("means over samples; a sample where a metric is n/a is counted under n_a, never as 0",)
    if not rows:
        return Section("qcare", "Q-CARE", notes=("no Q-CARE metrics in this run",))
    diagnostics = _diagnostics(data)
    return Section("qcare", "Q-CARE: retrieval and answer alignment", notes=notes,
                   tables=(NamedTable("qcare_metrics", "Q-CARE metrics", metric_frame(rows)),
                           NamedTable("qcare_per_sample", "Q-CARE per sample", qcare_sample_frame(diagnostics)),
                           NamedTable("uncovered_subqueries", "Sub-queries no retrieved chunk covers",
                                      uncovered_subquery_frame(diagnostics)),
                           NamedTable("unsupported_claims", "Claims no retrieved chunk supports",
                                      unsupported_claim_frame(diagnostics))),
                   charts=(bar_chart("Q-CARE means (0-1)", _metric_bars(rows), lo=0.0, hi=1.0,
                                     caption=COUNTS_LEGEND),))


def gap_share_chart(gaps: pd.DataFrame, coverage: tuple[MetricRow, ...]) -> Markup:
    """The gap shares of the element table (gap_share_frame) with the counts behind them: per bar its weight
    of the n decided missing elements (a count; judges_split elements add their fractions); in the caption n,
    the judges_split elements, the undecided elements (left out, as unscored units are) and the escalated
    element checks (the element coverage table's count)."""
    shown = gaps[gaps["gap_share"].notna()]
    weights = gaps.attrs["weights"]
    n_missing = float(sum(weights[status] for status in shown["status"]))
    n_elements = int(sum(gaps["count"]))
    n_undecided, n_split = gaps.attrs["n_undecided"], gaps.attrs["n_split"]
    escalated = (f"escalated {sum(r.n_escalated for r in coverage)} element checks" if coverage
                 else "escalated element checks: n/a (no element coverage figure)")
    split = (f" · judges split on {n_split} elements: shared out in fractions (seed 003 averages the judges)"
             if n_split else "")
    caption = (f"n={n_missing:g} decided elements missing from the answer (of {n_elements} elements){split}",
               f"unscored: {n_undecided} undecided elements left out (no share) · {escalated}")
    bars = [Bar(row.status, row.gap_share, f"({weights[row.status]:g} of {n_missing:g})") for row in shown.itertuples()]
    return bar_chart("Where missing elements were lost", bars, lo=0.0, hi=1.0, caption=caption)


# Both sides of seed 003's element coverage, answer side first; each counts its own checks' escalations, so
# together they count every element check once (the gap chart's caption adds them up).
ELEMENT_COVERAGES = (MetricName.ELEMENT_ANSWER_COVERAGE, MetricName.ELEMENT_COVERAGE)
ELEMENT_COVERAGE_TITLE = ("Element coverage: stated by the answer (element_answer_coverage), found in the retrieved "
                          "chunks (element_coverage)")


def elements_section(data: ReportData) -> Section:
    rows = tuple(r for r in data.summary.metrics if MetricKey.of(r.name).base in ELEMENT_COVERAGES)
    diagnostics = _diagnostics(data)
    gaps = gap_share_frame(diagnostics)
    tables = [NamedTable("element_gap_shares", "Element statuses and gap shares", gaps),
              NamedTable("element_undecided", UNDECIDED_TABLE, undecided_frame(diagnostics))]
    if rows:
        tables.insert(0, NamedTable("element_coverage", ELEMENT_COVERAGE_TITLE, metric_frame(rows)))
    shares = gaps["gap_share"].notna().any()
    charts = (gap_share_chart(gaps, rows), gap_attribution_svg(gap_rows(diagnostics, data.metadata))) if shares else ()
    notes = (ELEMENT_NOTE,) if shares else ("no element was missed, or the run has no elements",)
    return Section("elements", "Elements: retrieval, generation or documents", notes=notes, tables=tuple(tables),
                   charts=charts)


CUBE_TABLE_LEGEND = ("counts: checks = dimension-score checks · scored = verdicts with a score (the n of the "
                     "trimmed means; seed 000's reading of the RAG set averages those of the retrieved cases only) · "
                     "unscored = verdicts left out, never counted as 0 · no_verdict = sample x "
                     "judge places with no verdict · escalated = checks whose judges disagreed; each judge's own "
                     "score still counts (CuBE averages the judges' scores, not the jury's decision)")


def _with_note(text: str, note: int | None) -> str:
    return text if note is None else f"{text} [{note}]"


def cube_section(store: RecordStore, data: ReportData, human: HumanScores | None = None) -> Section:
    """CuBE's Table 4, weighted totals, retrieved-only analysis (seed 000, 5.3) and counts, with the bounds chart;
    with `human` ratings, Table 5 (the ratings between the judges' bounds). Every n/a cell or figure is followed
    by the number of its reason ("n/a [k]"), listed under the section. Raises ValueError for rated sample ids the
    run does not have."""
    config = data.config
    inputs = cube_inputs(store, data.run.run_id, config)
    if isinstance(inputs, Unavailable):
        return Section("cube", "CuBE", notes=(f"n/a: {inputs.reason}",))
    report, counts = cube_of_inputs(inputs, config), inputs.counts
    na = NaNotes()
    table4 = cube_noted_frame(report, counts, na)
    bounds = cube_bounds_noted_frame(report, counts, na)
    retrieved = cube_retrieved_only_noted(inputs, na)
    humans = () if human is None else (NamedTable.noted(
        "cube_human", "CuBE human ratings between the judges' bounds (seed 000, Table 5)",
        cube_human_noted(cube_human(inputs, report, human, config), report, counts.n_samples, na)),)
    rule_based = cube_rule_based_note(config, [j.judge for j in report.judges])
    chart = cube_bounds_svg(report, counts=counts, notes=na, warning=rule_based)
    r_at_k, r_at_k_reason, spread_reasons = report.r_at_k.value, cube_r_at_k_reason(report), cube_spread_reasons(report)
    r_at_k_text = _with_note("n/a" if r_at_k is None else f"{r_at_k:.2%}",
                             None if r_at_k_reason is None else na.ref(r_at_k_reason, "", "R@k"))
    spread_texts = []
    for reading in report.reading_order:
        spread, name = report.spreads[reading].cube_score, figure("cube_score", report, reading)
        text = ("n/a" if spread.mean is None else f"{spread.mean:.3f}") + (
            "" if spread.mean is None or spread.sd is None else f" ± {spread.sd:.3f}")
        reason = spread_reasons.get(name)
        spread_texts.append(_with_note(text, None if reason is None else na.ref(reason, SPREAD, name)))
    others = [f"CuBE score across judges, {reading.label}: {text}"
              for reading, text in zip(report.reading_order[1:], spread_texts[1:], strict=True)]
    weights = ("weights: fixed, from the config's dimensions" if fixed_weights(config) else
               "weights: automatic, |Pearson r| of each dimension's RAG scores with the rank score, normalized to "
               f"sum 1 (seed 000, 5.3); {inputs.rank_scores.description}")
    every = counts.count()
    notes = (
        "normalized = (RAG - closed_book) / (oracle - closed_book); CuBE score = normalized weighted total x R@k",
        reading_legend(report),
        weights,
        f"R@k = {r_at_k_text}; CuBE score across judges: {spread_texts[0]}",
        *others,
        top_n_note(inputs, config.top_k),
        f"{counts.n_samples} samples x {len(counts.judges)} judges; every answer set: {every.note()}",
        CUBE_TABLE_LEGEND,
        *((HUMAN_NOTE,) if humans else ()),
        *(("n/a [k]: the reason is note k at the end of this section",) if na.texts else ()),
    )
    return Section("cube", "CuBE: between no retrieval and perfect retrieval", notes=notes,
                   warnings=() if rule_based is None else (rule_based,),
                   tables=(NamedTable.noted("cube_table4", "CuBE (seed 000, Table 4), with the checks and verdicts "
                                            "behind each judge's row", table4),
                           NamedTable.noted("cube_bounds", "Weighted totals per answer set, with the checks and "
                                            "verdicts behind them", bounds),
                           NamedTable.noted("cube_retrieved_only", "CuBE retrieved-only analysis (seed 000, 5.3): "
                                            "correlation r of the RAG scores with the rank score over all samples "
                                            "and over the samples whose gold document was retrieved, with the "
                                            "mean and sd of those", retrieved),
                           NamedTable("cube_counts", "CuBE checks and verdicts per answer set and dimension",
                                      cube_counts_frame(counts)),
                           *humans),
                   # the chart escapes its own labels
                   charts=(Markup(chart),), na_notes=tuple(na.entries()))


CUER_CONDITIONS_TITLE = ("CUE-R per condition: soft correctness, answer F1, grounding, confidence error and trace "
                         "divergence of the normal and "
                         "the perturbed answers; trace: reported (the system's own) or judged (the chunks the jury "
                         "found to support the answer's claims); confidence: reported or probed")


def cuer_section(store: RecordStore, data: ReportData) -> Section:
    """CUE-R's figures come from answers compared with gold answers, not from judged checks: the table and
    chart say so with their n, and count the perturbed answers that failed or could not be produced (the
    run's answers and retrievals are read for that: the diagnostics do not keep them)."""
    run_id = data.run.run_id
    diagnostics = _diagnostics(data)
    answers, retrievals = store.get_answers(run_id), store.get_retrievals(run_id)
    counts = cuer_counts(diagnostics, answers, retrievals)
    totals = cuer_totals(counts)
    closed_book = cuer_closed_book_of_run(store, run_id, answers, retrievals)
    frame = cuer_frame(diagnostics, answers, closed_book)
    if not any(d.perturbations for d in diagnostics):
        return Section("cuer", "CUE-R", notes=("n/a: no perturbed answers in this run",
                                               *(totals[1:] if counts else ()), closed_book.note()),
                       tables=() if frame.empty else (
                           NamedTable("cuer_effects", "CUE-R closed-book control", frame),))
    control = (f"the last row, {' / '.join(CLOSED_BOOK_ROW)}, is the closed-book control: the question alone "
               "against the normal answer, one row per sample" if closed_book.effects else None)
    return Section(
        "cuer", "CUE-R: what each retrieved chunk is worth",
        notes=("mean change perturbed - normal; trace divergence is the Jaccard distance of the used-chunk sets",
               *totals, closed_book.note(),
               "rows: perturbed answers · n_<change>: rows with that change (each mean is over them) · failed: "
               "rows whose perturbed answer is unscored (no change)", *((control,) if control else ())),
        tables=(NamedTable("cuer_effects", f"CUE-R perturbation effects: {totals[0]}", frame),
                NamedTable("cuer_conditions", CUER_CONDITIONS_TITLE, cuer_condition_frame(diagnostics))),
        # the charts escape their own labels
        charts=(Markup(cuer_utility_svg(diagnostics, counts=counts, closed_book=closed_book)),
                cuer_heatmap_svg(diagnostics, chunk_ranks(retrievals))),
    )


def chunk_ranks(retrievals: Sequence[Retrieval]) -> dict[tuple[str, str], int]:
    """(sample id, chunk id) -> the chunk's 1-based rank in the normal retrieval (its position when unranked)."""
    return {(r.sample_id, c.id): c.rank or position for r in retrievals if r.condition == NORMAL
            for position, c in enumerate(r.chunks, start=1)}


def answer_section(data: ReportData) -> Section | None:
    rows = tuple(r for r in data.summary.metrics if MetricKey.of(r.name).base in ANSWER_METRICS)
    if not rows:
        return None
    return Section("answers", "Answer correctness (against gold answers)",
                   tables=(NamedTable("answer_metrics", "Answer metrics", metric_frame(rows)),))


def method_sections(store: RecordStore, data: ReportData, human: HumanScores | None = None) -> list[Section]:
    """One section per method of the run; `human`: people's ratings of the RAG answers for CuBE's Table 5."""
    sections: list[Section] = []
    for method in data.methods:
        if method is Method.QCARE:
            sections.append(qcare_section(data))
        elif method is Method.ELEMENTS:
            sections.append(elements_section(data))
        elif method is Method.CUBE:
            sections.append(cube_section(store, data, human))
        elif method is Method.CUER:
            sections.append(cuer_section(store, data))
    answers = answer_section(data)
    if answers is not None:
        sections.append(answers)
    return sections
