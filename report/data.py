"""Everything a report shows, read from the record store once: no LLM call, no system call.

The HTML page, the exports and the web desk all read this one snapshot, so they never disagree. Run-level
figures come from SQL aggregates of the store; only the diagnostics (one per sample) and the records of
the questions in the drill-down are read as records, so a 10,000-sample run reports in seconds.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ragcourt.analysis.summary import RunSummary, summarize
from ragcourt.report.trust import JuryView, ProfileView, jury_view, profile_view
from ragcourt.schema import (
    NORMAL,
    Answer,
    Check,
    Chunk,
    Reconciled,
    Review,
    RunInfo,
    Sample,
    SampleDiagnostics,
    SampleStatus,
    Verdict,
    VerdictStatus,
)
from ragcourt.schema.config import NO_LLM_MODELS, EvalConfig, Method
from ragcourt.stores import RecordStore, SampleCheckCounts, VerdictTally

PriceTable = Mapping[str, tuple[float, float]]
"""model_id -> (USD per 1k prompt tokens, USD per 1k completion tokens), as llm.usage takes it."""

# Questions the drill-down shows by default: those needing attention first, then the first others. The
# exports (`ragcourt report RUN --export DIR`) hold every question's checks and verdicts.
DRILL_DOWN_QUESTIONS = 100


@dataclass(frozen=True)
class JudgeUsage:
    """Tokens of one judge summed over its verdicts (batched calls: each verdict carries its share)."""

    judge_id: str
    model_ids: tuple[str, ...]
    n_verdicts: int
    n_unscored: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None
    cost_note: str | None  # why the cost is n/a, or what it means


def tally_verdicts(verdicts: Iterable[Verdict]) -> list[VerdictTally]:
    """The verdicts counted as `RecordStore.verdict_tallies` counts a run's verdicts in SQL."""
    tallies: dict[tuple[str, str | None, VerdictStatus], list[int]] = defaultdict(lambda: [0, 0, 0])
    for verdict in verdicts:
        tally = tallies[(verdict.judge_id, verdict.model_id, verdict.status)]
        tally[0] += 1
        tally[1] += verdict.usage.prompt_tokens
        tally[2] += verdict.usage.completion_tokens
    return [VerdictTally(judge_id=judge_id, model_id=model_id, status=status, n_verdicts=n, prompt_tokens=prompt,
                         completion_tokens=completion)
            for (judge_id, model_id, status), (n, prompt, completion) in tallies.items()]


def judge_usage(verdicts: Iterable[Verdict], prices: PriceTable | None = None) -> list[JudgeUsage]:
    return usage_of_tallies(tally_verdicts(verdicts), prices)


def usage_of_tallies(tallies: Iterable[VerdictTally], prices: PriceTable | None = None) -> list[JudgeUsage]:
    """One row per judge. The cost sums each model's tokens first, then prices them (equal to pricing each
    verdict and summing, up to float rounding)."""
    by_judge: dict[str, list[VerdictTally]] = defaultdict(list)
    for tally in tallies:
        by_judge[tally.judge_id].append(tally)
    prices = prices or {}
    rows = []
    for judge_id, judged in sorted(by_judge.items()):
        models = tuple(sorted({t.model_id or "unknown" for t in judged}))
        cost: float | None = 0.0
        note: str | None = None
        for model in models:
            if model in NO_LLM_MODELS:
                continue  # a rule, not a model: it costs nothing
            if model not in prices:
                cost, note = None, f"no price for model {model}"
                break
            per_prompt, per_completion = prices[model]
            mine = [t for t in judged if (t.model_id or "unknown") == model]
            assert cost is not None
            cost += (sum(t.prompt_tokens for t in mine) * per_prompt
                     + sum(t.completion_tokens for t in mine) * per_completion) / 1000.0
        if cost is not None and all(m in NO_LLM_MODELS for m in models):
            note = "rule-based judge, no LLM call"
        rows.append(JudgeUsage(
            judge_id=judge_id, model_ids=models, n_verdicts=sum(t.n_verdicts for t in judged),
            n_unscored=sum(t.n_verdicts for t in judged if t.status is VerdictStatus.UNSCORED),
            prompt_tokens=sum(t.prompt_tokens for t in judged),
            completion_tokens=sum(t.completion_tokens for t in judged),
            cost_usd=cost, cost_note=note,
        ))
    return rows


@dataclass(frozen=True)
class CheckView:
    """One atomic check with every judge's verdict, the jury's decision and the latest human decision."""

    check: Check
    verdicts: tuple[Verdict, ...]
    reconciled: Reconciled | None
    review: Review | None


@dataclass(frozen=True)
class Link:
    """An alignment edge seen from one end: the other item and whether the jury decided it (None: undecided)."""

    item_id: str
    label: str
    decided: bool


@dataclass(frozen=True)
class AlignedItem:
    item_id: str
    text: str
    links: tuple[Link, ...]


@dataclass(frozen=True)
class Alignment:
    """Seed 002's alignment of one sample: claims with supporting chunks, sub-queries with coverage."""

    claims: tuple[AlignedItem, ...]  # links: chunks that support the claim
    subqueries: tuple[AlignedItem, ...]  # links: chunks that cover it
    serving: dict[str, tuple[Link, ...]]  # sub-query id -> claims that serve it


def alignment(graph: Mapping[str, Any] | None) -> Alignment | None:
    """Read the node-link alignment graph a SampleDiagnostics carries (None when the sample has none)."""
    if not graph:
        return None
    nodes = {n["id"]: n for n in graph.get("nodes", ())}

    def label(node_id: str) -> str:
        node = nodes[node_id]
        if node["kind"] == "chunk":
            return f"#{node.get('position')} {node.get('title') or node['item_id']}"
        return str(node.get("text", node["item_id"]))

    incoming: dict[tuple[str, str], list[Link]] = defaultdict(list)
    for edge in graph.get("edges", ()):
        target, source = edge["target"], edge["source"]
        incoming[(target, edge["relation"])].append(
            Link(item_id=nodes[source]["item_id"], label=label(source), decided=bool(edge.get("decided", True)))
        )

    def items(kind: str, relation: str) -> tuple[AlignedItem, ...]:
        chosen = sorted((n for n in nodes.values() if n["kind"] == kind), key=lambda n: n.get("position", 0))
        return tuple(AlignedItem(item_id=n["item_id"], text=n.get("text", ""),
                                 links=tuple(incoming.get((n["id"], relation), ()))) for n in chosen)

    subqueries = items("subquery", "covers")
    return Alignment(
        claims=items("claim", "supports"),
        subqueries=subqueries,
        serving={s.item_id: tuple(incoming.get((f"subquery:{s.item_id}", "serves"), ())) for s in subqueries},
    )


@dataclass(frozen=True)
class SampleView:
    sample: Sample
    diagnostics: SampleDiagnostics | None
    answer: Answer | None  # the normal condition's answer
    other_answers: tuple[Answer, ...]
    chunks: tuple[Chunk, ...]  # the normal retrieval
    alignment: Alignment | None
    checks: tuple[CheckView, ...]

    @property
    def n_escalated(self) -> int:
        return sum(1 for c in self.checks if c.reconciled is not None and c.reconciled.escalated)


@dataclass(frozen=True)
class SampleRow:
    """One question of the run, every question: what the samples table and the method sections read.
    Its diagnostics carry no alignment graph (the drill-down's SampleView has the whole record)."""

    sample_id: str
    question: str
    diagnostics: SampleDiagnostics | None
    n_checks: int
    n_escalated: int

    @property
    def needs_attention(self) -> bool:
        """Not finished, failed, or with escalated checks: always in the drill-down if there is room."""
        d = self.diagnostics
        return d is None or d.status is SampleStatus.FAILED or self.n_escalated > 0


def drill_down_ids(rows: Sequence[SampleRow], limit: int | None) -> list[str]:
    """The questions the drill-down shows, in run order: every question when limit is None or not exceeded;
    otherwise those needing attention first, then the first others, `limit` in all."""
    if limit is None or len(rows) <= limit:
        return [r.sample_id for r in rows]
    attention = [r.sample_id for r in rows if r.needs_attention][:limit]
    others = [r.sample_id for r in rows if not r.needs_attention][: limit - len(attention)]
    chosen = {*attention, *others}
    return [r.sample_id for r in rows if r.sample_id in chosen]


@dataclass(frozen=True)
class ReportData:
    run: RunInfo
    config: EvalConfig
    summary: RunSummary
    judges: tuple[JudgeUsage, ...]
    rows: tuple[SampleRow, ...]  # every question of the run (diagnostics without their alignment graphs)
    samples: tuple[SampleView, ...]  # the drill-down: every question, or the ones drill_down_ids chose
    reviewed: int  # checks with a human decision, over every question
    metadata: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # sample id -> its metadata (subgroups)
    jury: JuryView | None = None  # each judge's worth per check kind (None: a run of one judge)
    profile: ProfileView | None = None  # the calibration profile the run applied (None: none)

    @property
    def methods(self) -> tuple[Method, ...]:
        return self.config.methods

    @property
    def omitted(self) -> int:
        """Questions of the run left out of the drill-down."""
        return len(self.rows) - len(self.samples)

    @property
    def diagnostics(self) -> list[SampleDiagnostics]:
        """The diagnostics of every question that has them, in run order."""
        return [r.diagnostics for r in self.rows if r.diagnostics is not None]

    def limited(self, limit: int | None) -> ReportData:
        """The same data with the drill-down cut to drill_down_ids(rows, limit)."""
        chosen = set(drill_down_ids(self.rows, limit))
        return replace(self, samples=tuple(v for v in self.samples if v.sample.id in chosen))


def _group(items: Sequence[Any], key: str) -> dict[str, list[Any]]:
    grouped: dict[str, list[Any]] = defaultdict(list)
    for item in items:
        grouped[getattr(item, key)].append(item)
    return grouped


def check_views(store: RecordStore, run_id: str, sample_ids: Sequence[str]) -> list[CheckView]:
    """Every check of these questions with its verdicts, the jury's decision and the latest human decision,
    in the store's order (the exports read a run this way, a slice of questions at a time)."""
    checks = store.checks_of_samples(run_id, sample_ids)
    check_ids = [c.id for c in checks]
    verdicts_by_check = _group(store.run_verdicts(run_id, check_ids), "check_id") if checks else {}
    reconciled = {r.check_id: r for r in store.reconciled_of_checks(run_id, check_ids)}
    reviews = store.latest_reviews(run_id, check_ids)
    return [CheckView(check=c, verdicts=tuple(verdicts_by_check.get(c.id, ())), reconciled=reconciled.get(c.id),
                      review=reviews.get(c.id)) for c in checks]


def _views(store: RecordStore, run_id: str, sample_ids: Sequence[str], every: bool) -> list[SampleView]:
    """The drill-down records of these questions (every: all of the run's): checks, verdicts, decisions,
    answers, chunks, whole diagnostics."""
    checks = check_views(store, run_id, sample_ids)
    if every:  # one query each instead of one per question
        answers = store.get_answers(run_id)
        retrieved = store.get_retrievals(run_id)
        stored = store.get_diagnostics(run_id)
    else:
        answers = [a for i in sample_ids for a in store.get_answers(run_id, i)]
        retrieved = [r for i in sample_ids for r in store.get_retrievals(run_id, i)]
        stored = [d for i in sample_ids for d in store.get_diagnostics(run_id, i)]
    answers_by_sample = _group(answers, "sample_id")
    retrievals = {r.sample_id: r for r in retrieved if r.condition == NORMAL}
    diagnostics = {d.sample_id: d for d in stored}
    checks_by_sample: dict[str, list[CheckView]] = {}
    for view in checks:
        checks_by_sample.setdefault(view.check.sample_id, []).append(view)
    views = []
    for sample in store.get_samples(run_id, None if every else sample_ids):
        mine = answers_by_sample.get(sample.id, [])
        normal = next((a for a in mine if a.condition == NORMAL), None)
        retrieval = retrievals.get(sample.id)
        found = diagnostics.get(sample.id)
        views.append(SampleView(
            sample=sample, diagnostics=found, answer=normal,
            other_answers=tuple(a for a in mine if a.condition != NORMAL),
            chunks=retrieval.chunks if retrieval else (),
            alignment=alignment(found.alignment_graph if found else None),
            checks=tuple(checks_by_sample.get(sample.id, ())),
        ))
    return views


def collect(store: RecordStore, run_id: str, prices: PriceTable | None = None, *,
            drill_down: int | None = DRILL_DOWN_QUESTIONS) -> ReportData:
    """Read a run from the store. Raises LookupError when the store has no such run.

    drill_down: how many questions get their checks, verdicts and answers read (None: every question, as
    the exports need); every other figure covers the whole run either way.
    """
    run = store.get_run(run_id)
    if run is None:
        raise LookupError(f"no run '{run_id}' in {store.path}")
    read = store.get_diagnostics_without_graphs(run_id)
    diagnostics = {d.sample_id: d for d in read}
    counts = store.check_counts_by_sample(run_id)
    no_checks = SampleCheckCounts(n_checks=0, n_escalated=0, n_reviewed=0)
    rows = tuple(
        SampleRow(sample_id=sample_id, question=question, diagnostics=diagnostics.get(sample_id),
                  n_checks=counts.get(sample_id, no_checks).n_checks,
                  n_escalated=counts.get(sample_id, no_checks).n_escalated)
        for sample_id, question in store.sample_questions(run_id)
    )
    tallies = store.verdict_tallies(run_id)
    chosen = drill_down_ids(rows, drill_down)
    summary = summarize(store, run_id, tallies, read)
    config = EvalConfig.of_stored_run(run.config)
    return ReportData(
        run=run, config=config, summary=summary,
        judges=tuple(usage_of_tallies(tallies, prices)), rows=rows,
        samples=tuple(_views(store, run_id, chosen, every=len(chosen) == len(rows))),
        # escalated checks a person decided: a skip decides nothing (the check is still awaiting review)
        reviewed=summary.n_escalated - summary.n_pending,
        metadata={s.id: s.metadata for s in store.get_samples(run_id)},
        jury=jury_view(store, run_id, config),
        profile=profile_view(config, {t.judge_id for t in tallies}),
    )
