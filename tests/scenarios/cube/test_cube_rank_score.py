"""CuBE's rank score as seed 000 defines it (5.3), through a run: ``10 - rank``, a point more when the gold document
was the only document retrieved, 0 when it was missed; and the shifted ``top_n + 2 - rank`` on request.

Precomputed contexts, top_k 5 (TOP-N 5), trim proportion 0 (plain means), automatic weights:
  s1: the gold document alone        -> rank 1, only gold: seed 10 - 1 + 1 = 10;  top_n 7 - 1 + 1 = 7
  s2: 5 contexts, gold at rank 1     -> 9;                                         6
  s3: 5 contexts, gold at rank 5     -> 5;                                         2
  s4: 5 contexts, no gold            -> 0;                                         0          R@k = 3/4
  judge j: rag relevance 10 8 6 2, quality 6 8 8 4; closed book relevance 2, quality 4; oracle 10, 8 (all).
  Seed rule, x = (10, 9, 5, 0): mean 6, dx = (4, 3, -1, -6), sxx = 62
    relevance dy = (3.5, 1.5, -0.5, -4.5), syy 35: sxy = 14 + 4.5 + 0.5 + 27 = 46   -> r = 46 / sqrt(2170)
    quality   dy = (-0.5, 1.5, 1.5, -2.5), syy 11: sxy = -2 + 4.5 - 1.5 + 15 = 16   -> r = 16 / sqrt(682)
  top_n rule, x = (7, 6, 2, 0): mean 3.75, dx = (3.25, 2.25, -1.75, -3.75), sxx = 32.75
    relevance sxy = 11.375 + 3.375 + 0.875 + 16.875 = 32.5 -> r = 32.5 / sqrt(1146.25)
    quality   sxy = -1.625 + 3.375 - 2.625 + 9.375 = 8.5   -> r = 8.5 / sqrt(360.25)
  (Before, the tables scored x = (6, 6, 2, 0): top_n + 2 - rank without the extra point, which they never passed;
   weights 0.644 / 0.356, against 0.617 / 0.383 now.)
  Retrieved cases s1-s3 (seed 000's reading): means relevance 8, quality 22/3 -> normalized 6/8, (10/3)/4;
    Wgt. Score = (6 w_r + 10/3 w_q) / (8 w_r + 4 w_q), CuBE score = 3/4 x that.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from fakes.scripted_scores import ScriptedScores

from ragcourt.analysis.cube_tables import CubeInputs, cube_inputs, cube_of_inputs, top_n_note
from ragcourt.judging.decomposers import SentenceDecomposer
from ragcourt.nodes.state import EvalContext
from ragcourt.runs.runner import Runner
from ragcourt.schema import Chunk, ConditionKind, Sample
from ragcourt.schema.config import DimensionSpec, EvalConfig, JudgeSpec, Method, RankScoreRule
from ragcourt.stores.records import RecordStore
from ragcourt.systems import ExtractiveGenerator, Precomputed

CB, RAG, ORC = ConditionKind.CLOSED_BOOK, ConditionKind.NORMAL, ConditionKind.ORACLE
IDS = ("s1", "s2", "s3", "s4")
SCRIPT = {(RAG, "relevance"): [10, 8, 6, 2], (RAG, "quality"): [6, 8, 8, 4],
          (CB, "relevance"): [2] * 4, (CB, "quality"): [4] * 4,
          (ORC, "relevance"): [10] * 4, (ORC, "quality"): [8] * 4}
SEED_R = (46 / math.sqrt(2170), 16 / math.sqrt(682))
TOP_N_R = (32.5 / math.sqrt(1146.25), 8.5 / math.sqrt(360.25))


def gold(sample_id: str) -> Chunk:
    return Chunk(id=f"{sample_id}-gold", title=f"Gold {sample_id}", text=f"The gold fact of {sample_id}.")


def contexts(sample_id: str) -> tuple[Chunk, ...]:
    if sample_id == "s1":
        return (gold("s1"),)
    shown = [Chunk(id=f"{sample_id}-c{i}", title=f"Other {sample_id} {i}", text=f"Filler {i} of {sample_id}.")
             for i in range(1, 6)]
    at = {"s2": 1, "s3": 5}.get(sample_id)
    if at:
        shown[at - 1] = gold(sample_id)
    return tuple(c.model_copy(update={"rank": i}) for i, c in enumerate(shown, start=1))


SAMPLES = [Sample(id=s, question=f"What is the gold fact of {s}?", gold_documents=(gold(s),), contexts=contexts(s),
                  answer=f"precomputed {s}") for s in IDS]


def weights(r: tuple[float, float]) -> tuple[float, float]:
    return r[0] / sum(r), r[1] / sum(r)


def test_hand_computed_constants() -> None:
    assert pytest.approx((0.987479, 0.612672), abs=1e-6) == SEED_R
    assert pytest.approx((0.959939, 0.447834), abs=1e-6) == TOP_N_R
    assert pytest.approx((0.617116, 0.382884), abs=1e-6) == weights(SEED_R)
    assert pytest.approx((0.681885, 0.318115), abs=1e-6) == weights(TOP_N_R)


async def inputs_of(tmp_path: Path, **rule: RankScoreRule) -> tuple[EvalConfig, CubeInputs]:
    cfg = EvalConfig(judges=(JudgeSpec(model="j"),), methods=(Method.CUBE,), top_k=5, trim_proportion=0.0,
                     bounds_generator="extractive",
                     dimensions=(DimensionSpec(name="relevance"), DimensionSpec(name="quality")), **rule)
    with RecordStore(tmp_path / "store.sqlite") as store:
        context = EvalContext(config=cfg, system=Precomputed(bounds=ExtractiveGenerator()),
                              judges=[ScriptedScores(SCRIPT, IDS)], decomposer=SentenceDecomposer(), store=store)
        async for _ in Runner(context, "pre", tmp_path / "pre").astream(SAMPLES):
            pass
        inputs = cube_inputs(store, "pre", cfg)
    assert isinstance(inputs, CubeInputs)
    return cfg, inputs


async def test_the_seed_rule_is_the_default_and_adds_a_point_for_the_gold_document_alone(tmp_path: Path) -> None:
    cfg, inputs = await inputs_of(tmp_path)
    assert cfg.rank_score is RankScoreRule.SEED
    assert (inputs.ranks, inputs.only_gold, inputs.top_n) == ([1, 1, 5, 0], [True, False, False, False], 5)
    assert inputs.rank_scores.scores == (10, 9, 5, 0)
    assert top_n_note(inputs, 5) == ("k = TOP-N = top_k 5: ranks are positions in the normal retrieval; rank score "
                                     "= 10 - rank")
    report = cube_of_inputs(inputs, cfg)
    judge = report.judges[0]
    correlations = judge.weights.correlations
    assert (correlations["relevance"].value, correlations["quality"].value) == pytest.approx(SEED_R)
    w_r, w_q = weights(SEED_R)
    assert judge.weights.weights == pytest.approx({"relevance": w_r, "quality": w_q})
    assert report.r_at_k.value == 0.75
    wgt = (6 * w_r + 10 / 3 * w_q) / (8 * w_r + 4 * w_q)
    assert judge.weighted_score.value == pytest.approx(wgt)
    assert judge.cube_score.value == pytest.approx(0.75 * wgt)
    assert judge.cube_score.value == pytest.approx(0.577298, abs=1e-6)


async def test_the_top_n_rule_shifts_the_scale_to_the_runs_top_n(tmp_path: Path) -> None:
    cfg, inputs = await inputs_of(tmp_path, rank_score=RankScoreRule.TOP_N)
    assert inputs.rank_scores.scores == (7, 6, 2, 0)
    assert top_n_note(inputs, 5).endswith("rank score = 7 - rank")
    judge = cube_of_inputs(inputs, cfg).judges[0]
    correlations = judge.weights.correlations
    assert (correlations["relevance"].value, correlations["quality"].value) == pytest.approx(TOP_N_R)
    w_r, w_q = weights(TOP_N_R)
    assert judge.cube_score.value == pytest.approx(0.75 * (6 * w_r + 10 / 3 * w_q) / (8 * w_r + 4 * w_q))
    assert judge.cube_score.value == pytest.approx(0.574321, abs=1e-6)
