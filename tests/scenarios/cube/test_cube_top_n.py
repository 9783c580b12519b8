"""CuBE on precomputed contexts longer than top_k (issue 19, item 1): the seed itself retrieves TOP-N 8.

The rank field and R@k count the chunks the system returned: the run's TOP-N is the config's top_k, or the
longest normal retrieval when the system showed its generator more (precomputed contexts are taken whole).
A gold document at rank 7 of 8 contexts with top_k 5 is retrieved at rank 7 of TOP-N 8: rank score 10 - 7 = 3.

Python-API flow, four precomputed samples, top_k 5, trim proportion 0 (plain means), automatic weights:
  s1: 8 contexts, gold at rank 7 -> rank score 3;  s2: 8 contexts, gold at rank 1 -> 9;
  s3: 8 contexts, no gold -> 0;                    s4: 6 contexts, no gold -> 0.      TOP-N 8, R@k = 2/4.
  judge j (per sample s1..s4):   rag relevance 8 10 2 4, quality 6 8 4 6;  closed relevance 2, quality 4 (all);
                                 oracle relevance 10, quality 8 (all).
  Pearson with x = (3, 9, 0, 0), dx = (0, 6, -3, -3), sxx = 54:
    relevance dy = (2, 4, -4, -2): sxy 42, syy 40 -> r = 42 / sqrt(2160) = 3.5 / sqrt(15)
    quality   dy = (0, 2, -2, 0):  sxy 18, syy 8  -> r = 18 / sqrt(432) = sqrt(3) / 2
  All samples (every RAG score averaged): means 6, 6 -> normalized 0.5, 0.5 -> Wgt. Score 0.5, CuBE 0.25.
  Retrieved cases (seed 000, 5.4: s1, s2 only; bounds over every sample): means 9, 7 -> normalized 7/8, 3/4;
    Wgt. Score (7 w_r + 3 w_q) / (8 w_r + 4 w_q), CuBE = that x 0.5: the default CuBE score.
"""

from __future__ import annotations

import json
import math
import re
from html import unescape
from pathlib import Path
from typing import cast

import pytest
from fakes.scripted_scores import ScriptedScores
from typer.testing import CliRunner

from ragcourt.analysis.cube_tables import CubeInputs, cube_inputs, cube_noted_frame, cube_of_inputs
from ragcourt.cli import app
from ragcourt.judging.decomposers import SentenceDecomposer
from ragcourt.metrics.cube import AnswerSet, CubeReading
from ragcourt.nodes.state import EvalContext
from ragcourt.runs.runner import Runner
from ragcourt.schema import Chunk, ConditionKind, Sample
from ragcourt.schema.config import DimensionSpec, EvalConfig, JudgeSpec, Method
from ragcourt.stores.records import RecordStore
from ragcourt.systems import ExtractiveGenerator, Precomputed

CB, RAG, ORC = ConditionKind.CLOSED_BOOK, ConditionKind.NORMAL, ConditionKind.ORACLE
IDS = ("s1", "s2", "s3", "s4")
GOLD_AT = {"s1": 7, "s2": 1, "s3": 0, "s4": 0}
N_CONTEXTS = {"s1": 8, "s2": 8, "s3": 8, "s4": 6}
SCRIPT = {(RAG, "relevance"): [8, 10, 2, 4], (RAG, "quality"): [6, 8, 4, 6],
          (CB, "relevance"): [2] * 4, (CB, "quality"): [4] * 4,
          (ORC, "relevance"): [10] * 4, (ORC, "quality"): [8] * 4}
R_REL, R_Q = 3.5 / math.sqrt(15), math.sqrt(3) / 2
W_REL, W_Q = R_REL / (R_REL + R_Q), R_Q / (R_REL + R_Q)
WGT_RETRIEVED = (7 * W_REL + 3 * W_Q) / (8 * W_REL + 4 * W_Q)


def gold(sample_id: str) -> Chunk:
    return Chunk(id=f"{sample_id}-gold", title=f"Gold {sample_id}", text=f"The gold fact of {sample_id}.")


def contexts(sample_id: str) -> tuple[Chunk, ...]:
    shown = [Chunk(id=f"{sample_id}-c{i}", title=f"Other {sample_id} {i}", text=f"Filler {i} of {sample_id}.")
             for i in range(1, N_CONTEXTS[sample_id] + 1)]
    if GOLD_AT[sample_id]:
        shown[GOLD_AT[sample_id] - 1] = gold(sample_id)
    return tuple(c.model_copy(update={"rank": i}) for i, c in enumerate(shown, start=1))


SAMPLES = [Sample(id=s, question=f"What is the gold fact of {s}?", gold_documents=(gold(s),), contexts=contexts(s),
                  answer=f"precomputed {s}") for s in IDS]


def test_hand_computed_constants() -> None:
    assert pytest.approx((0.903696, 0.866025, 0.510643), abs=1e-6) == (R_REL, R_Q, W_REL)
    assert pytest.approx(0.834508, abs=1e-6) == WGT_RETRIEVED


async def test_gold_at_rank_7_of_8_contexts_with_top_k_5(tmp_path: Path) -> None:
    cfg = EvalConfig(judges=(JudgeSpec(model="j"),), methods=(Method.CUBE,), top_k=5, trim_proportion=0.0,
                     bounds_generator="extractive",
                     dimensions=(DimensionSpec(name="relevance"), DimensionSpec(name="quality")))
    with RecordStore(tmp_path / "store.sqlite") as store:
        context = EvalContext(config=cfg, system=Precomputed(bounds=ExtractiveGenerator()),
                              judges=[ScriptedScores(SCRIPT, IDS)], decomposer=SentenceDecomposer(), store=store)
        async for _ in Runner(context, "pre", tmp_path / "pre").astream(SAMPLES):
            pass
        inputs = cube_inputs(store, "pre", cfg)
    assert isinstance(inputs, CubeInputs)
    assert (inputs.ranks, inputs.top_n) == ([7, 1, 0, 0], 8)
    report = cube_of_inputs(inputs, cfg)  # crashed here: "rank must be 0 (not retrieved) or in 1..5, got 7"
    assert report.r_at_k.value == 0.5 and report.r_at_k.n == 4
    judge = report.judges[0]
    assert judge.weights.correlations["relevance"].value == pytest.approx(R_REL)
    assert judge.weights.correlations["quality"].value == pytest.approx(R_Q)

    # The default is seed 000's reading: the RAG set on the retrieved cases, then x R@k.
    assert judge.reading is CubeReading.RETRIEVED
    assert {d: m.value for d, m in judge.dimension_means[AnswerSet.RAG].items()} == {"relevance": 9, "quality": 7}
    assert judge.dimension_means[AnswerSet.RAG]["relevance"].n == 2
    assert judge.normalized_dimensions["relevance"].value == pytest.approx(7 / 8)
    assert judge.normalized_dimensions["quality"].value == pytest.approx(3 / 4)
    assert judge.weighted_score.value == pytest.approx(WGT_RETRIEVED)
    assert judge.cube_score.value == pytest.approx(0.5 * WGT_RETRIEVED)
    assert judge.cube_score.value == pytest.approx(0.417254, abs=1e-6)

    # The other reading, every sample's RAG score averaged (a miss counts in the mean and again in R@k).
    every = judge.readings[CubeReading.ALL]
    assert {d: m.value for d, m in every.rag_means.items()} == {"relevance": 6, "quality": 6}
    assert every.weighted_score.value == pytest.approx(0.5)
    assert every.cube_score.value == pytest.approx(0.25)
    # the bounds are the same in both readings: every sample's closed-book and oracle answers
    assert judge.dimension_means[AnswerSet.ORACLE]["quality"].n == 4

    frame = cube_noted_frame(report, spread=True).frame
    assert list(frame.columns) == ["judge", "relevance", "quality", "wgt_score", "cube_score", "wgt_score_all",
                                   "cube_score_all"]
    assert frame.iloc[0]["cube_score"] == pytest.approx(0.417254, abs=1e-6)
    assert frame.iloc[0]["cube_score_all"] == pytest.approx(0.25)


def _dataset(path: Path) -> Path:
    """Three samples with 8 contexts each: the gold document at rank 7, at rank 2, not retrieved. The first two
    answers are the reference, the third is wrong."""
    rows = []
    for i, (at, answer) in enumerate(((7, None), (2, None), (0, "I am not sure."))):
        reference = f"The capital of country {i} is city {i}."
        document = {"id": f"g{i}", "title": f"Gold {i}", "text": reference}
        shown: list[dict[str, str]] = [{"id": f"c{i}-{n}", "title": f"Other {i} {n}", "text": f"Filler {n} {i}."}
                                       for n in range(1, 9)]
        if at:
            shown[at - 1] = document
        rows.append({"id": f"q{i}", "question": f"What is the capital of country {i}?", "reference_answer": reference,
                     "gold_documents": [document], "contexts": shown, "answer": answer or reference})
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_cli_run_and_report_on_contexts_longer_than_top_k(tmp_path: Path) -> None:
    """`ragcourt run --system precomputed --method cube` and `ragcourt report` finish and print both readings.

    The lexical judge scores the answers' token overlap with the source (the gold document): the two right RAG
    answers and the oracle answer (the gold document's sentence) score the same S, the wrong answer and closed book
    ("I don't know.") 0. One dimension, weight 1, R@k = 2/3 (TOP-N 8).
    Retrieved cases: S -> normalized 1.0, CuBE 0.667; all samples: 2 S / 3 -> 0.667, CuBE 0.444."""
    dataset = _dataset(tmp_path / "pre.jsonl")
    config = tmp_path / "cube.yaml"
    config.write_text("top_k: 5\nbounds_generator: extractive\ndimensions:\n  - {name: relevance, weight: 1}\n",
                      encoding="utf-8")
    home = tmp_path / "home"
    result = CliRunner().invoke(app, ["run", str(dataset), "--system", "precomputed", "--method", "cube", "--judge",
                                      "lexical", "--config", str(config), "--run-id", "pre", "--home", str(home)])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert "R@k = 66.67% (k = TOP-N 8)" in out
    table = next(line for line in result.output.splitlines() if "│ lexical" in line)
    assert [cell.strip() for cell in table.split("│")[1:-1]] == ["lexical", "1.000", "1.000", "0.667", "0.667",
                                                                 "0.444"]
    report = CliRunner().invoke(app, ["report", "pre", "--home", str(home)])
    assert report.exit_code == 0, report.output
    html = (home / "runs" / "pre" / "report.html").read_text(encoding="utf-8")
    assert "cube_score_all" in html and "retrieved cases" in html


def test_cli_report_places_human_ratings_between_the_judges_bounds(tmp_path: Path) -> None:
    """Seed 000's Table 5 through `ragcourt report --human-scores`: ratings q0 8, q1 6, q2 3 (q2's gold document
    was not retrieved) placed between the lexical judge's bounds lo (closed book) and hi (oracle), R@k = 2/3:
    retrieved cases (q0, q1) 7 -> (7 - lo) / (hi - lo); all samples 17/3 -> (17/3 - lo) / (hi - lo); CuBE x 2/3."""
    dataset = _dataset(tmp_path / "pre.jsonl")
    config = tmp_path / "cube.yaml"
    config.write_text("top_k: 5\nbounds_generator: extractive\ndimensions:\n  - {name: relevance, weight: 1}\n",
                      encoding="utf-8")
    home = tmp_path / "home"
    ran = CliRunner().invoke(app, ["run", str(dataset), "--system", "precomputed", "--method", "cube", "--judge",
                                   "lexical", "--config", str(config), "--run-id", "pre", "--home", str(home)])
    assert ran.exit_code == 0, ran.output
    ratings = tmp_path / "human.jsonl"
    ratings.write_text("".join(json.dumps({"sample_id": s, "relevance": r}) + "\n"
                               for s, r in (("q0", 8), ("q1", 6), ("q2", 3))), encoding="utf-8")
    result = CliRunner().invoke(app, ["report", "pre", "--human-scores", str(ratings), "--home", str(home)])
    assert result.exit_code == 0, result.output
    with RecordStore(home / "store.sqlite") as store:
        run = store.get_run("pre")
        assert run is not None
        cfg = EvalConfig.model_validate(run.config)
        judge = cube_of_inputs(cast(CubeInputs, cube_inputs(store, "pre", cfg)), cfg).judges[0]
    lo, hi = (judge.bound_means[aset]["relevance"].value for aset in (AnswerSet.CLOSED_BOOK, AnswerSet.ORACLE))
    assert lo is not None and hi is not None and hi > lo
    seed, every = (7 - lo) / (hi - lo), (17 / 3 - lo) / (hi - lo)
    expected = [f"{v:.3f}" for v in (seed, seed, 2 / 3 * seed, every, 2 / 3 * every)] + ["3"]
    # a narrow terminal wraps the labels ("human @" / "lexical"), not the figures: the row's first line has them
    lines = [[c.strip() for c in line.split("│")[1:-1]] for line in result.output.splitlines() if line.startswith("│")]
    assert next(cells[1:] for cells in lines if cells[0] == "human @") == expected
    html = (home / "runs" / "pre" / "report.html").read_text(encoding="utf-8")
    table = html[html.index("CuBE human ratings between the judges&#39; bounds (seed 000, Table 5)"):]
    table = table[:table.index("</table>")]
    assert [unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<td>(.*?)</td>", table, re.S)][:7] == [
        "human @ lexical", *expected]

    # bad ratings files: a clear error naming the file, line and field, or the unknown samples; exit 2
    ratings.write_text('{"sample_id": "q0", "relevance": 11}\n{"sample_id": "zz", "relevance": 5}\n', encoding="utf-8")
    bad = CliRunner().invoke(app, ["report", "pre", "--human-scores", str(ratings), "--home", str(home)])
    assert bad.exit_code == 2 and "human.jsonl:1: field 'relevance': must be a number from 0 to 10, got 11" in (
        " ".join(bad.output.split()))
    ratings.write_text('{"sample_id": "zz", "relevance": 5}\n', encoding="utf-8")
    unknown = CliRunner().invoke(app, ["report", "pre", "--human-scores", str(ratings), "--home", str(home)])
    assert unknown.exit_code == 2 and "1 rated sample(s) are not in this run: zz" in " ".join(unknown.output.split())
