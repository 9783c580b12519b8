"""Everything a report shows, read from the record store once: no LLM call, no system call.

The HTML page, the exports and the web desk all read this one snapshot, so they never disagree.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragcourt.config import EvalConfig, Method
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
    Verdict,
    VerdictStatus,
)
from ragcourt.stores.records import RecordStore
from ragcourt.summary import RunSummary, summarize

PriceTable = Mapping[str, tuple[float, float]]
"""model_id -> (USD per 1k prompt tokens, USD per 1k completion tokens), as llm.usage takes it."""

NO_LLM_MODELS = frozenset({"lexical", "semantic"})


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


def judge_usage(verdicts: Iterable[Verdict], prices: PriceTable | None = None) -> list[JudgeUsage]:
    by_judge: dict[str, list[Verdict]] = defaultdict(list)
    for verdict in verdicts:
        by_judge[verdict.judge_id].append(verdict)
    prices = prices or {}
    rows = []
    for judge_id, judged in sorted(by_judge.items()):
        models = tuple(sorted({v.model_id or "unknown" for v in judged}))
        cost: float | None = 0.0
        note: str | None = None
        for model in models:
            mine = [v for v in judged if (v.model_id or "unknown") == model]
            if model in NO_LLM_MODELS:
                continue  # a rule, not a model: it costs nothing
            if model not in prices:
                cost, note = None, f"no price for model {model}"
                break
            per_prompt, per_completion = prices[model]
            assert cost is not None
            cost += sum(v.usage.prompt_tokens * per_prompt + v.usage.completion_tokens * per_completion
                        for v in mine) / 1000.0
        if cost is not None and all(m in NO_LLM_MODELS for m in models):
            note = "rule-based judge, no LLM call"
        rows.append(JudgeUsage(
            judge_id=judge_id, model_ids=models, n_verdicts=len(judged),
            n_unscored=sum(v.status is VerdictStatus.UNSCORED for v in judged),
            prompt_tokens=sum(v.usage.prompt_tokens for v in judged),
            completion_tokens=sum(v.usage.completion_tokens for v in judged),
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
class ReportData:
    run: RunInfo
    config: EvalConfig
    summary: RunSummary
    judges: tuple[JudgeUsage, ...]
    samples: tuple[SampleView, ...]

    @property
    def methods(self) -> tuple[Method, ...]:
        return self.config.methods

    @property
    def reviewed(self) -> int:
        return sum(1 for s in self.samples for c in s.checks if c.review is not None)


def _group(items: Sequence[Any], key: str) -> dict[str, list[Any]]:
    grouped: dict[str, list[Any]] = defaultdict(list)
    for item in items:
        grouped[getattr(item, key)].append(item)
    return grouped


def collect(store: RecordStore, run_id: str, prices: PriceTable | None = None) -> ReportData:
    """Read a run from the store. Raises LookupError when the store has no such run."""
    run = store.get_run(run_id)
    if run is None:
        raise LookupError(f"no run '{run_id}' in {store.path}")
    checks = store.checks_for(run_id)
    verdicts = store.get_verdicts([c.id for c in checks]) if checks else []
    verdicts_by_check = _group(verdicts, "check_id")
    reconciled = {r.check_id: r for r in store.get_reconciled(run_id)}
    reviews = store.latest_reviews(run_id)
    diagnostics = {d.sample_id: d for d in store.get_diagnostics(run_id)}
    answers = _group(store.get_answers(run_id), "sample_id")
    retrievals = {r.sample_id: r for r in store.get_retrievals(run_id) if r.condition == NORMAL}
    checks_by_sample = _group(checks, "sample_id")
    views = []
    for sample in store.get_samples(run_id):
        mine = answers.get(sample.id, [])
        normal = next((a for a in mine if a.condition == NORMAL), None)
        retrieval = retrievals.get(sample.id)
        found = diagnostics.get(sample.id)
        views.append(SampleView(
            sample=sample, diagnostics=found, answer=normal,
            other_answers=tuple(a for a in mine if a.condition != NORMAL),
            chunks=retrieval.chunks if retrieval else (),
            alignment=alignment(found.alignment_graph if found else None),
            checks=tuple(
                CheckView(check=c, verdicts=tuple(verdicts_by_check.get(c.id, ())), reconciled=reconciled.get(c.id),
                          review=reviews.get(c.id))
                for c in checks_by_sample.get(sample.id, ())
            ),
        ))
    return ReportData(
        run=run, config=EvalConfig.model_validate(run.config), summary=summarize(store, run_id),
        judges=tuple(judge_usage(verdicts, prices)), samples=tuple(views),
    )
