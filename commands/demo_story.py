"""What `ragcourt demo` prints after evaluating two configurations: the headline figures side by side with
their difference against the noise band, where each configuration loses quality (element gap shares), and
the few escalations that matter most. Which figures are headline figures, and why the others are not, depends
on the answerer that ran (headline_metrics, not_headline): the extractive baseline's answers make some figures
0 or 1 by construction, a language model's do not."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.markup import escape
from rich.table import Table

from ragcourt.analysis.noise import compare_frame, metric_values
from ragcourt.analysis.qcare_tables import gap_share_frame
from ragcourt.commands.output import console, print_table
from ragcourt.metrics.values import MetricKey, MetricName
from ragcourt.schema import ElementStatus, SampleDiagnostics
from ragcourt.schema.config import BaselineModel
from ragcourt.schema.review_questions import provisional_text, review_question
from ragcourt.stores.records import RecordStore
from ragcourt.validity.review_budget import review_queue

HEADLINE_METRICS = (MetricName.ELEMENT_COVERAGE, MetricName.ANSWER_F1, MetricName.C_PRECISION)


@dataclass(frozen=True)
class NotHeadline:
    """Figures left out of the headline, and why; printed with the runs' own values of them."""

    metrics: tuple[MetricName, ...]
    why: str


EXTRACTIVE_NOT_HEADLINE = (
    NotHeadline((MetricName.SOFT_CORRECTNESS, MetricName.EXACT_MATCH),
                "0 by construction (the extractive answer is a whole sentence, the gold answer a short span; token "
                "F1 >= 0.8 is out of reach); answer_f1 shows the partial overlap instead"),
    NotHeadline((MetricName.VERIFIABLENESS,),
                "1 by construction (every sentence of an extractive answer is copied from a retrieved chunk)"),
    NotHeadline((MetricName.COMPLETENESS, MetricName.CONCISENESS),
                "n/a until reviewed (the two no-LLM judges split on whether the answer's claims serve and answer "
                "the sub-queries; those checks await review)"),
)
# A language model answers in its own words: soft correctness can be reached and is a headline figure.
LLM_NOT_HEADLINE = (
    NotHeadline((MetricName.EXACT_MATCH,),
                "the strict form of soft_correctness (the whole normalized answer equals a gold answer)"),
    NotHeadline((MetricName.VERIFIABLENESS, MetricName.COMPLETENESS, MetricName.CONCISENESS),
                "decided by the jury on the model's own claims, not by construction: `ragcourt summary RUN` gives "
                "them with their unscored and escalated checks"),
)


def extractive(answerer: str) -> bool:
    return answerer == BaselineModel.EXTRACTIVE


def headline_metrics(answerer: str) -> tuple[MetricName, ...]:
    """The headline figures for this answerer (the config's `answerer`)."""
    return HEADLINE_METRICS if extractive(answerer) else (MetricName.SOFT_CORRECTNESS, *HEADLINE_METRICS)


def not_headline(answerer: str) -> tuple[NotHeadline, ...]:
    return EXTRACTIVE_NOT_HEADLINE if extractive(answerer) else LLM_NOT_HEADLINE


GAPS = (ElementStatus.RETRIEVAL_GAP, ElementStatus.GENERATION_GAP, ElementStatus.DOCUMENT_GAP)
TOP_ESCALATIONS = 3


@dataclass(frozen=True)
class DemoRun:
    """One evaluated configuration: its label (e.g. 'A top_k=5'), run id and diagnostics."""

    label: str
    run_id: str
    diagnostics: tuple[SampleDiagnostics, ...]


def _mean_text(diagnostics: Sequence[SampleDiagnostics], metric: str) -> str:
    values, n_na = metric_values(diagnostics, metric)
    mean = "n/a" if not values else f"{sum(values.values()) / len(values):.3f}"
    return f"{mean} (n={len(values)}{f', n/a {n_na}' if n_na else ''})"


def _checks_text(diagnostics: Sequence[SampleDiagnostics], metric: str) -> str:
    """The metric's unscored and escalated checks, summed over the questions."""
    found = [m for d in diagnostics for m in d.metrics if m.name == metric]
    return f"{sum(m.n_unscored for m in found)}/{sum(m.n_escalated for m in found)}"


def _names(run: DemoRun, base: MetricName) -> list[str]:
    return sorted({m.name for d in run.diagnostics for m in d.metrics if MetricKey.of(m.name).base == base})


def _values_text(run: DemoRun, note: NotHeadline) -> str:
    """The run's mean of each of the note's figures, e.g. "soft_correctness 0.000, exact_match 0.000"."""
    def mean(metric: MetricName) -> str:
        values, _ = metric_values(run.diagnostics, metric)
        return "n/a" if not values else f"{sum(values.values()) / len(values):.3f}"

    return ", ".join(f"{metric} {mean(metric)}" for metric in note.metrics)


def print_headline(a: DemoRun, b: DemoRun, answerer: str) -> None:
    """Each headline metric for both runs, B - A over the questions both scored and the paired noise band; then
    the figures left out, with their values and why (both depend on `answerer`, the one that ran)."""
    compared = {row["metric"]: row for row in compare_frame(a.diagnostics, b.diagnostics).to_dict("records")}
    rows = []
    for base in headline_metrics(answerer):
        names_a, names_b = _names(a, base), _names(b, base)
        for name_a, name_b in zip(names_a, names_b, strict=False):
            row = compared.get(name_a) if name_a == name_b else None
            if row is None:
                diff, band, verdict = "—", "—", "other k" if name_a != name_b else "n/a"
            elif row["difference"] is None or row["band"] is None:
                diff = "n/a" if row["difference"] is None else f"{row['difference']:+.3f}"
                band, verdict = "n/a", row["na_reason"] or "n/a"
            else:
                diff, band, verdict = f"{row['difference']:+.3f}", f"±{row['band']:.3f}", str(row["verdict"])
            shown = name_a if name_a == name_b else f"{name_a} / {name_b}"
            rows.append([shown, _mean_text(a.diagnostics, name_a), _mean_text(b.diagnostics, name_b), diff, band,
                         verdict, f"{_checks_text(a.diagnostics, name_a)}; {_checks_text(b.diagnostics, name_b)}"])
    print_table(Table(title="headline figures (mean over questions; B - A over the questions both scored)"),
                ["metric", a.label, b.label, "B - A", "noise band (95%)", "verdict", "unscored/escalated checks A; B"],
                rows)
    console.print("noise band: the paired band of the two runs (1.96 x sd of the per-question differences / sqrt(n));"
                  " a difference inside it is noise at this many questions ([bold]ragcourt compare[/bold]; "
                  "[bold]ragcourt noise[/bold] measures the band from two repeat runs)")
    console.print("not headline figures, and why:")
    for note in not_headline(answerer):
        values = f"{a.label}: {_values_text(a, note)}; {b.label}: {_values_text(b, note)}"
        console.print(f"  - {escape(' and '.join(note.metrics))}: {escape(note.why)} ({escape(values)})")


def _share(frame_row: dict[str, object]) -> str:
    value = frame_row["gap_share"]
    return "n/a" if value is None else f"{float(value):.0%}"  # type: ignore[arg-type]


def print_gaps(runs: Sequence[DemoRun]) -> None:
    """Per run, the shares of the decided missing elements lost in retrieval, in generation, in the documents."""
    rows = []
    for run in runs:
        frame = gap_share_frame(run.diagnostics)
        by_status = {r["status"]: r for r in frame.to_dict("records")}
        weights = frame.attrs["weights"]
        missing = sum(weights[str(s)] for s in GAPS)
        rows.append([run.label, *(_share(by_status[str(s)]) for s in GAPS), f"{missing:g}",
                     str(by_status[str(ElementStatus.ANSWERED)]["count"]), str(frame.attrs["n_split"]),
                     str(frame.attrs["n_undecided"])])
    print_table(Table(title="where quality is lost: gap shares of the decided elements missing from the answer"),
                ["run", "retrieval", "generation", "documents", "missing", "answered", "judges split", "undecided"],
                rows)
    console.print("documents means 'documents doubtful' (not in the answer, the context or a looser retrieval): "
                  "a suspicion, not proof; judges-split elements are shared out in fractions (seed 003), "
                  "undecided ones get no share")


def print_escalations(store: RecordStore, runs: Sequence[DemoRun]) -> None:
    for run in runs:
        pending = review_queue(store, run.run_id)  # the review desk's order, the same on every run
        chosen = pending[:TOP_ESCALATIONS]
        console.print(f"\n{escape(run.label)}: {len(pending)} checks await review; the {len(chosen)} whose decisions "
                      "can move its headline figures most (the order the review desk asks them in):")
        checks = {c.id: c for c in store.get_checks([r.check_id for r in chosen])}
        for rec in chosen:
            check = checks[rec.check_id]
            subject = check.subject_text if len(check.subject_text) <= 70 else check.subject_text[:67] + "..."
            console.print(f"  - {escape(review_question(check.kind).question)} [dim]({check.kind}, question "
                          f"{escape(check.sample_id[:12])})[/dim]\n    {escape(repr(subject))}: provisional "
                          f"{escape(provisional_text(rec))}")
