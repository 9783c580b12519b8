"""Node: the contexts the generator is shown, one per condition.

normal: the system's own retrieval. closed_book: no chunks. oracle: the gold documents.
loose (seed 003): no score cut-off and k times `loose_k_factor`, the same query, only when the
reconciler asked for it. remove / replace / duplicate (seed 004): one normal chunk perturbed at a time,
seeded so that the same configuration perturbs the same chunks with the same distractors.
"""

from __future__ import annotations

import asyncio
import random

from langgraph.runtime import Runtime

from ragcourt.nodes.state import EvalContext, SampleState
from ragcourt.schema import (
    CLOSED_BOOK,
    LOOSE,
    NORMAL,
    ORACLE,
    Chunk,
    Condition,
    ConditionKind,
    Retrieval,
    Sample,
)
from ragcourt.schema.config import DistractorPolicy
from ragcourt.systems import ConditionUnavailable, ReferenceRAG

DISTRACTOR_POOL = 50  # how many nearest corpus chunks the best non-gold distractor is looked for in


async def retrieve_perturb(state: SampleState, runtime: Runtime[EvalContext]) -> SampleState:
    ctx, sample, run_id = runtime.context, state["sample"], state["run_id"]
    config = ctx.config
    # Retrievals stored by an earlier, interrupted attempt of this run are reused, not redone.
    have = state.get("retrievals") or {
        r.condition.key: r for r in await ctx.store.aread(ctx.store.get_retrievals, run_id, sample.id)
    }
    made: list[Retrieval] = []
    unavailable: dict[str, str] = {}

    def add(condition: Condition, chunks: list[Chunk], made_by: str, k: int | None = None,
            threshold: float | None = None) -> None:
        made.append(Retrieval(run_id=run_id, sample_id=sample.id, condition=condition, chunks=tuple(chunks),
                              k=k, score_threshold=threshold, made_by=made_by))

    normal = have.get(NORMAL.key)
    hidden: str | None = None
    if normal is None:
        try:
            chunks = await ctx.system.retrieve(sample, config.top_k, config.score_threshold)
            # Given contexts (precomputed) were not cut at top_k: their k is unknown, and C-Prec@k takes them whole.
            fixed = getattr(ctx.system, "fixed_retrieval", False)
            add(NORMAL, chunks, f"{ctx.system.name}.retrieve", None if fixed else config.top_k,
                None if fixed else config.score_threshold)
            normal = made[-1]
        except ConditionUnavailable as reason:  # the system answers but shows no retrieval
            hidden = str(reason)
        except Exception as error:  # the system under test failed: record it, the run goes on
            unavailable[NORMAL.key] = f"retrieval failed: {type(error).__name__}: {error}"
    if ConditionKind.CLOSED_BOOK in config.conditions and CLOSED_BOOK.key not in have:
        add(CLOSED_BOOK, [], "no context (closed book)")
    if ConditionKind.ORACLE in config.conditions and ORACLE.key not in have:
        if sample.gold_documents:
            add(ORACLE, list(sample.gold_documents), "gold documents (oracle)")
        else:
            unavailable[ORACLE.key] = "the sample has no gold documents"
    if state.get("loose_requested") and LOOSE.key not in have and getattr(ctx.system, "fixed_retrieval", False):
        unavailable[LOOSE.key] = f"{ctx.system.name} has fixed contexts: no loose retrieval is possible"
    elif state.get("loose_requested") and LOOSE.key not in have:
        k = config.top_k * config.loose_k_factor
        try:
            add(LOOSE, await ctx.system.retrieve(sample, k, None), f"{ctx.system.name}.retrieve loose", k, None)
        except Exception as error:
            unavailable[LOOSE.key] = f"loose retrieval failed: {type(error).__name__}: {error}"
    if normal is not None and config.perturbations.kinds and not any(
        Condition.parse(key).kind.is_perturbation for key in have
    ):
        made.extend(await _perturbations(ctx, sample, run_id, normal))
    if made:
        await ctx.store.aput(*made)
    update: SampleState = {"retrievals": {**have, **{r.condition.key: r for r in made}}, "unavailable": unavailable}
    if hidden is not None:
        update["retrieval_hidden"] = hidden
    return update


async def _perturbations(ctx: EvalContext, sample: Sample, run_id: str, normal: Retrieval) -> list[Retrieval]:
    spec = ctx.config.perturbations
    chunks = list(normal.chunks)
    targets = chunks
    if spec.max_chunks is not None and spec.max_chunks < len(chunks):
        targets = random.Random(f"{spec.seed}:{sample.id}").sample(chunks, spec.max_chunks)
    pool = await _distractor_pool(ctx, sample, normal) if ConditionKind.REPLACE in spec.kinds else []
    out = []
    for chunk in targets:
        position = chunks.index(chunk)
        for kind in spec.kinds:
            condition = Condition(kind=kind, chunk_id=chunk.id)
            if kind is ConditionKind.REMOVE:
                shown, made_by = chunks[:position] + chunks[position + 1:], f"removed {chunk.id}"
            elif kind is ConditionKind.DUPLICATE:
                shown, made_by = chunks[: position + 1] + [chunk] + chunks[position + 1:], f"duplicated {chunk.id}"
            else:
                if not pool:
                    continue
                distractor = _pick(pool, spec.distractor, f"{spec.seed}:{sample.id}:{chunk.id}")
                shown = chunks[:position] + [distractor] + chunks[position + 1:]
                made_by = f"replaced {chunk.id} with {distractor.id} ({spec.distractor})"
            out.append(Retrieval(run_id=run_id, sample_id=sample.id, condition=condition, chunks=tuple(shown),
                                 k=normal.k, made_by=made_by))
    return out


async def _distractor_pool(ctx: EvalContext, sample: Sample, normal: Retrieval) -> list[Chunk]:
    """Corpus chunks that were not retrieved and are not gold: for `random` the whole corpus (sorted by id,
    listed once per collection), for `best_non_gold` the best ranked for the question first: by the reference
    system's own retriever when it is the system evaluated (dense or BM25, as it retrieved the top-k, so the
    distractor is the chunk it would have shown next), else by the collection's dense ranking."""
    if ctx.vectors is None or ctx.collection is None:
        return []
    if ctx.config.perturbations.distractor is DistractorPolicy.RANDOM:
        found = list(await asyncio.to_thread(ctx.vectors.all_chunks, ctx.collection))
    elif isinstance(ctx.system, ReferenceRAG):
        found = await ctx.system.retrieve(sample, DISTRACTOR_POOL + len(normal.chunks), None)
    else:
        found = await asyncio.to_thread(
            ctx.vectors.query, ctx.collection, sample.question, DISTRACTOR_POOL + len(normal.chunks), None
        )
    shown = {c.id for c in normal.chunks}
    gold = set(sample.gold_titles) | {d.id for d in sample.gold_documents}
    return [c for c in found if c.id not in shown and c.id not in gold and (c.title or "") not in gold]


def _pick(pool: list[Chunk], policy: DistractorPolicy, seed: str) -> Chunk:
    if policy is DistractorPolicy.BEST_NON_GOLD:
        return pool[0]
    return random.Random(seed).choice(pool)


