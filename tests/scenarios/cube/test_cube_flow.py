"""CuBE end to end through the per-sample graph and the run level, with a scripted system and scripted judges.

Five samples, top_k 3, trim proportion 0.2 (cut int(0.2 x 5) = 1 score from each end), dimensions relevance
and quality with automatic weights. The gold document of s1, s2, s3 is retrieved at rank 1, 2, 3; s4 and s5
miss it. Rank scores under `rank_score: top_n` (top_n + 2 - rank, 0 when missed; seed 000's default 10 - rank is
test_cube_rank_score.py's): x = [4, 3, 2, 0, 0]; R@k = 3/5.

Judge j1 (per sample s1..s5)           trimmed mean (middle three)
  rag        relevance 10 8 6 2 4      6       quality 8 8 8 4 8       8
  closed     relevance  1 2 3 0 9      2       quality 4 4 4 4 4       4
  oracle     relevance 10 10 10 10 0  10       quality 10 10 9 10 10  10
  Pearson with x (mean 1.8, dx = 2.2 1.2 0.2 -1.8 -1.8, sxx = 12.8):
    relevance: dy = 4 2 0 -4 -2, sxy = 22, syy = 40 -> r = 22 / sqrt(512) = 0.97227
    quality:   dy = .8 .8 .8 -3.2 .8, sxy = 7.2, syy = 12.8 -> r = 7.2 / 12.8 = 0.5625
  weights w_r = r_rel / (r_rel + r_q) = 0.633496, w_q = 0.366504
  normalized relevance (6 - 2) / (10 - 2) = 0.5; quality (8 - 4) / (10 - 4) = 2/3
  weighted totals rag 6 w_r + 8 w_q, closed 2 w_r + 4 w_q, oracle 10
  Wgt. Score = 4 / (10 - 2 w_r - 4 w_q) = 0.55043; CuBE = 0.6 x 0.55043 = 0.33026

Judge j2: the same RAG scores (so the same weights), other bounds, one bad reply:
  closed     relevance 0 0 0 0 (s5: score 11, unscored out_of_range) -> mean of 4 = 0 (n 4, unscored 1)
             quality 10 10 10 10 10 -> 10
  oracle     relevance 10 x5 -> 10; quality 10 x5 -> 10: oracle <= closed book -> quality n/a (degenerate)
  normalized relevance 6/10 = 0.6
  Wgt. Score = (6 w_r + 8 w_q - 10 w_q) / (10 - 10 w_q) = 0.6 - 0.2 w_q / w_r = 0.48429; CuBE 0.29058

Mean +- sd across judges (sample sd): relevance 0.55 +- 0.07071; quality 2/3 (sd n/a: one value).
Retrieved-only (s1..s3, x = 4 3 2): relevance 10 8 6 -> r = 1, mean 8, sd 2; quality 8 8 8 -> r n/a, mean 8, sd 0.

The figures above average every sample's RAG score (the all-samples reading, `CubeReading.ALL`). The default is
seed 000's reading (5.4: "performance on successfully retrieved cases", then x R@k): the RAG means over s1..s3
(three values, int(0.2 x 3) = 0 cut), relevance 10 8 6 -> 8, quality 8 8 8 -> 8; the bounds and weights as above.
  j1: normalized relevance (8 - 2) / 8 = 0.75, quality 2/3; Wgt. Score (6 w_r + 4 w_q) / (10 - 2 w_r - 4 w_q)
      = 0.72478; CuBE 0.6 x that = 0.43487
  j2: normalized relevance 8/10 = 0.8, quality n/a; Wgt. Score (8 - 10 w_q) / (10 - 10 w_q) = 0.68429
  relevance across judges 0.775 +- 0.03536
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ragcourt.analysis.cube_tables import (
    CubeCount,
    CubeInputs,
    Unavailable,
    cube_inputs,
    cube_noted_frame,
    cube_of_inputs,
    cube_retrieved_only_noted,
)
from ragcourt.judging.decomposers import SentenceDecomposer
from ragcourt.metrics.cube import AnswerSet, CubeReading
from ragcourt.nodes.state import EvalContext
from ragcourt.report.cube_chart import cube_bounds_svg
from ragcourt.report.method_charts import CUBE_CHART, write_method_charts
from ragcourt.runs.runner import Runner
from ragcourt.schema import (
    CLOSED_BOOK,
    Answer,
    Check,
    CheckKind,
    Chunk,
    Condition,
    ConditionKind,
    Sample,
    UnscoredReason,
    Verdict,
    VerdictStatus,
)
from ragcourt.schema.config import DimensionSpec, EvalConfig, JudgeSpec, Method, RankScoreRule
from ragcourt.stores.records import RecordStore
from ragcourt.systems import ExtractiveGenerator, Generation, Precomputed

CB, RAG, ORC = ConditionKind.CLOSED_BOOK, ConditionKind.NORMAL, ConditionKind.ORACLE
DEGENERATE = ("degenerate bounds: oracle 10 <= closed book 10: the judge does not score the gold-document answers "
              "above the no-context ones, so there is no scale to place RAG on (check the oracle answers and the "
              "judge's rubric, or use another judge)")
IDS = ("s1", "s2", "s3", "s4", "s5")
GOLD_RANK = {"s1": 1, "s2": 2, "s3": 3, "s4": 0, "s5": 0}


def gold(sample_id: str) -> Chunk:
    return Chunk(id=f"{sample_id}-gold", text=f"The gold fact of {sample_id}.", title=f"Gold {sample_id}")


def normal_retrieval(sample_id: str) -> list[Chunk]:
    others = [Chunk(id=f"{sample_id}-x{i}", text=f"Filler {i} of {sample_id}.", title=f"Other {i}") for i in (1, 2, 3)]
    rank = GOLD_RANK[sample_id]
    shown = others[:2] if rank else others
    if rank:
        shown.insert(rank - 1, gold(sample_id))
    return [c.model_copy(update={"rank": i}) for i, c in enumerate(shown, start=1)]


SAMPLES = [Sample(id=s, question=f"What is the gold fact of {s}?", gold_documents=(gold(s),),
                  gold_titles=(f"Gold {s}",)) for s in IDS]


@dataclass
class CubeSystem:
    """Retrieves `normal_retrieval`; answers name the condition, so each answer set has its own text."""

    name: str = "cube-scripted"
    calls: list[tuple[str, str]] = field(default_factory=list)

    async def retrieve(self, sample: Sample, k: int, score_threshold: float | None) -> list[Chunk]:
        return normal_retrieval(sample.id)[:k]

    async def generate(self, sample: Sample, chunks: Sequence[Chunk], condition: Condition) -> Generation:
        self.calls.append((sample.id, condition.key))
        return Generation(text=f"{condition.kind} answer of {sample.id} from {len(chunks)} chunks")


Script = Mapping[tuple[ConditionKind, str], Sequence[int | None]]


@dataclass
class ScoreJudge:
    """Scores a dimension check with the scripted score of (condition, dimension)[sample]; None is a bad
    reply (out of range) and comes back unscored, as LLMJudge returns it."""

    judge_id: str
    script: Script

    async def judge(self, kind: CheckKind, checks: Sequence[Check]) -> list[Verdict]:
        assert kind is CheckKind.DIMENSION_SCORE
        out = []
        for check in checks:
            score = self.script[(check.condition.kind, check.dimension)][IDS.index(check.sample_id)]
            if score is None:
                out.append(Verdict(check_id=check.id, judge_id=self.judge_id, status=VerdictStatus.UNSCORED,
                                   unscored_reason=UnscoredReason.OUT_OF_RANGE, detail="score 11 is outside 0-10"))
            else:
                out.append(Verdict(check_id=check.id, judge_id=self.judge_id, status=VerdictStatus.OK,
                                   score=float(score)))
        return out


RAG_SCORES = {(RAG, "relevance"): [10, 8, 6, 2, 4], (RAG, "quality"): [8, 8, 8, 4, 8]}
J1 = {**RAG_SCORES, (CB, "relevance"): [1, 2, 3, 0, 9], (CB, "quality"): [4] * 5,
      (ORC, "relevance"): [10, 10, 10, 10, 0], (ORC, "quality"): [10, 10, 9, 10, 10]}
J2 = {**RAG_SCORES, (CB, "relevance"): [0, 0, 0, 0, None], (CB, "quality"): [10] * 5,
      (ORC, "relevance"): [10] * 5, (ORC, "quality"): [10] * 5}

R_REL, R_Q = 22 / math.sqrt(512), 7.2 / 12.8
W_REL, W_Q = R_REL / (R_REL + R_Q), R_Q / (R_REL + R_Q)
WGT_J1 = 4 / (10 - 2 * W_REL - 4 * W_Q)
WGT_J2 = 0.6 - 0.2 * W_Q / W_REL
SEED_J1 = (6 * W_REL + 4 * W_Q) / (10 - 2 * W_REL - 4 * W_Q)  # seed 000's reading: the retrieved cases
SEED_J2 = (8 - 10 * W_Q) / (10 - 10 * W_Q)


def config(**changes) -> EvalConfig:
    settings = {"judges": (JudgeSpec(model="j1"), JudgeSpec(model="j2")), "methods": (Method.CUBE,), "top_k": 3,
                "trim_proportion": 0.2, "concurrency": 2, "rank_score": RankScoreRule.TOP_N,
                "dimensions": (DimensionSpec(name="relevance"), DimensionSpec(name="quality"))}
    return EvalConfig(**{**settings, **changes})


async def run(store: RecordStore, tmp_path: Path, system, cfg: EvalConfig, run_id: str = "cube-run") -> None:
    context = EvalContext(config=cfg, system=system, judges=[ScoreJudge("j1", J1), ScoreJudge("j2", J2)],
                          decomposer=SentenceDecomposer(), store=store)
    async for _ in Runner(context, run_id, tmp_path / run_id).astream(SAMPLES):
        pass


@pytest.fixture
def store(tmp_path: Path) -> RecordStore:
    with RecordStore(tmp_path / "store.sqlite") as opened:
        yield opened


def test_hand_computed_constants() -> None:
    assert pytest.approx((0.972272, 0.633496, 0.366504), abs=1e-6) == (R_REL, W_REL, W_Q)
    assert pytest.approx((0.550434, 0.484292), abs=1e-6) == (WGT_J1, WGT_J2)
    assert pytest.approx((0.724783, 0.684292), abs=1e-6) == (SEED_J1, SEED_J2)


async def test_three_answer_sets_to_weights_to_cube_score(store: RecordStore, tmp_path: Path) -> None:
    system = CubeSystem()
    cfg = config()
    await run(store, tmp_path, system, cfg)
    # Every sample was answered under the three answer sets, and each was judged on both dimensions.
    assert sorted(system.calls) == sorted((s, c) for s in IDS for c in ("normal", "closed_book", "oracle"))
    inputs = cube_inputs(store, "cube-run", cfg)
    assert isinstance(inputs, CubeInputs)
    assert inputs.ranks == [1, 2, 3, 0, 0]
    assert inputs.scores["j2"][AnswerSet.CLOSED_BOOK]["relevance"] == [0, 0, 0, 0, None]

    report = cube_of_inputs(inputs, cfg)
    assert report.r_at_k.value == pytest.approx(0.6)
    j1, j2 = report.judges
    assert (j1.judge, j2.judge) == ("j1", "j2")
    for judge in (j1, j2):
        assert judge.weights.correlations["relevance"].value == pytest.approx(R_REL)
        assert judge.weights.correlations["quality"].value == pytest.approx(R_Q)
        assert judge.weights.weights == pytest.approx({"relevance": W_REL, "quality": W_Q})
    # Every sample's RAG score averaged (the all-samples reading: the figures of the module docstring).
    every1, every2 = j1.readings[CubeReading.ALL], j2.readings[CubeReading.ALL]
    means = {aset: {d: m.value for d, m in per.items()} for aset, per in j1.dimension_means.items()}
    assert means == {AnswerSet.RAG: {"relevance": 8, "quality": 8}, AnswerSet.CLOSED_BOOK: {"relevance": 2, "quality": 4},
                     AnswerSet.ORACLE: {"relevance": 10, "quality": 10}}
    assert {d: m.value for d, m in every1.rag_means.items()} == {"relevance": 6, "quality": 8}
    assert every1.rag_total.value == pytest.approx(6 * W_REL + 8 * W_Q)
    assert j1.weighted_totals[AnswerSet.CLOSED_BOOK].value == pytest.approx(2 * W_REL + 4 * W_Q)
    assert j1.weighted_totals[AnswerSet.ORACLE].value == pytest.approx(10)
    assert every1.normalized_dimensions["relevance"].value == pytest.approx(0.5)
    assert every1.normalized_dimensions["quality"].value == pytest.approx(2 / 3)
    assert every1.weighted_score.value == pytest.approx(WGT_J1)
    assert every1.cube_score.value == pytest.approx(0.6 * WGT_J1)
    assert every1.cube_score.value == pytest.approx(0.330260, abs=1e-6)
    # The default, seed 000's reading: the RAG means over the three retrieved cases.
    assert j1.reading is CubeReading.RETRIEVED and j1.dimension_means[AnswerSet.RAG]["relevance"].n == 3
    assert j1.weighted_totals[AnswerSet.RAG].value == pytest.approx(8)
    assert j1.normalized_dimensions["relevance"].value == pytest.approx(0.75)
    assert j1.normalized_dimensions["quality"].value == pytest.approx(2 / 3)
    assert j1.weighted_score.value == pytest.approx(SEED_J1)
    assert j1.cube_score.value == pytest.approx(0.434870, abs=1e-6)

    # j2: the unscored reply is excluded and counted, never a 0; the degenerate quality bounds are n/a.
    closed_relevance = j2.dimension_means[AnswerSet.CLOSED_BOOK]["relevance"]
    assert (closed_relevance.value, closed_relevance.n, closed_relevance.n_unscored) == (0.0, 4, 1)
    assert every2.normalized_dimensions["relevance"].value == pytest.approx(0.6)
    assert j2.normalized_dimensions["relevance"].value == pytest.approx(0.8)
    for quality in (j2.normalized_dimensions["quality"], every2.normalized_dimensions["quality"]):
        assert quality.value is None and quality.na_reason == DEGENERATE
    assert every2.weighted_score.value == pytest.approx(WGT_J2)
    assert every2.cube_score.value == pytest.approx(0.6 * WGT_J2)
    assert j2.weighted_score.value == pytest.approx(SEED_J2)
    assert j2.cube_score.value == pytest.approx(0.6 * SEED_J2)

    spread_all = report.spreads[CubeReading.ALL]
    assert spread_all.dimensions["relevance"].mean == pytest.approx(0.55)
    assert spread_all.dimensions["relevance"].sd == pytest.approx(math.sqrt(0.005))
    assert report.dimension_spread["relevance"].mean == pytest.approx(0.775)
    assert report.dimension_spread["relevance"].sd == pytest.approx(0.05 / math.sqrt(2))
    assert (report.dimension_spread["quality"].mean, report.dimension_spread["quality"].sd) == (
        pytest.approx(2 / 3), None)
    assert spread_all.cube_score.mean == pytest.approx(0.3 * (WGT_J1 + WGT_J2))
    assert spread_all.cube_score.sd == pytest.approx(0.6 * abs(WGT_J1 - WGT_J2) / math.sqrt(2))
    assert report.cube_score_spread.mean == pytest.approx(0.3 * (SEED_J1 + SEED_J2))
    assert report.cube_score_spread.sd == pytest.approx(0.6 * abs(SEED_J1 - SEED_J2) / math.sqrt(2))

    # What the CLI prints: the table with the mean +- sd row, its n/a notes (no "R@k n/a": R@k is 0.6), the
    # retrieved-only analysis.
    table4 = cube_noted_frame(report, spread=True)
    frame = table4.frame
    assert list(frame["judge"]) == ["j1", "j2", "mean ± sd"]
    assert frame.iloc[2]["relevance"] == "0.775 ± 0.035"
    assert frame.iloc[2]["quality"] == "0.667 ± n/a"
    assert frame.iloc[2]["cube_score_all"] == (f"{0.3 * (WGT_J1 + WGT_J2):.3f} ± "
                                               f"{0.6 * abs(WGT_J1 - WGT_J2) / math.sqrt(2):.3f}")
    assert frame.iloc[2]["cube_score"] == (f"{0.3 * (SEED_J1 + SEED_J2):.3f} ± "
                                           f"{0.6 * abs(SEED_J1 - SEED_J2) / math.sqrt(2):.3f}")
    assert table4.lines() == [f"[1] j2: quality n/a: {DEGENERATE}",
                              "[2] mean ± sd across judges: quality n/a: an sd needs at least 2 judges with a "
                              "quality; 1 has one (add a judge, or see the notes of the others)"]
    noted = cube_retrieved_only_noted(inputs)
    retrieved = noted.frame
    rows = {(r.judge, r.dimension): r for r in retrieved.itertuples(index=False)}
    relevance = rows[("j1", "relevance")]
    assert (relevance.r_all, relevance.r_retrieved, relevance.mean_retrieved, relevance.sd_retrieved,
            relevance.n_retrieved) == (pytest.approx(R_REL), pytest.approx(1.0), 8.0, 2.0, 3)
    quality_row = rows[("j1", "quality")]
    assert quality_row.r_all == pytest.approx(R_Q)
    assert math.isnan(quality_row.r_retrieved)  # n/a: constant scores on retrieved samples
    assert (quality_row.mean_retrieved, quality_row.sd_retrieved) == (8.0, 0.0)
    # with its reason: the judges gave the three retrieved samples the same quality score
    assert noted.lines() == [
        "[1] j1: quality r_retrieved; j2: quality r_retrieved n/a: a correlation needs variation: the RAG score is "
        "constant (the same for all 3 samples) among the samples whose gold document was retrieved; the judge gave "
        "every sample the same score: nothing to correlate (rule-based judges and coarse rubrics do this)"]
    assert noted.marked().iloc[1]["r_retrieved"] == "n/a [1]"

    # The checks and verdicts behind the figures: j2's bad reply is unscored; the escalated checks are those
    # whose two scores differ by more than 3: closed quality (4 vs 10) on every sample, oracle relevance on s5.
    counts = inputs.counts
    assert counts.count(AnswerSet.CLOSED_BOOK, "relevance") == CubeCount(checks=5, scored=9, unscored=1, escalated=0)
    assert counts.count(AnswerSet.CLOSED_BOOK, "quality") == CubeCount(checks=5, scored=10, escalated=5)
    assert counts.count(AnswerSet.ORACLE) == CubeCount(checks=10, scored=20, escalated=1)
    assert counts.count(judge="j2") == CubeCount(checks=30, scored=29, unscored=1, escalated=6)
    assert counts.count(AnswerSet.CLOSED_BOOK, "relevance", "j2").scored == closed_relevance.n == 4

    # `ragcourt run --method cube` writes the bounds chart of this report, with its counts, into the run directory.
    assert write_method_charts(store, "cube-run", cfg, tmp_path / "charts") == {tmp_path / "charts" / CUBE_CHART: None}
    written = (tmp_path / "charts" / CUBE_CHART).read_text(encoding="utf-8")
    assert written == cube_bounds_svg(report, counts=counts)
    assert "closed_book: n=19 scored verdicts · unscored 1 · escalated 5 of 10 checks" in written


async def test_fixed_weights_from_the_config_replace_the_correlation(store: RecordStore, tmp_path: Path) -> None:
    cfg = config(dimensions=(DimensionSpec(name="relevance", weight=3), DimensionSpec(name="quality", weight=1)))
    await run(store, tmp_path, CubeSystem(), cfg)
    report = cube_of_inputs(cube_inputs(store, "cube-run", cfg), cfg)
    j1 = report.judges[0]
    assert j1.weights.weights == {"relevance": 0.75, "quality": 0.25}
    # all samples: (0.75 x 6 + 0.25 x 8 - (0.75 x 2 + 0.25 x 4)) / (10 - 2.5) = 4 / 7.5
    assert j1.readings[CubeReading.ALL].weighted_score.value == pytest.approx(4 / 7.5)
    # retrieved cases (the default): (0.75 x 8 + 0.25 x 8 - 2.5) / 7.5 = 5.5 / 7.5
    assert j1.weighted_score.value == pytest.approx(5.5 / 7.5)


def precomputed_samples() -> list[Sample]:
    return [s.model_copy(update={"contexts": tuple(normal_retrieval(s.id)), "answer": f"precomputed {s.id}"})
            for s in SAMPLES]


async def test_precomputed_system_without_a_bounds_generator_reports_the_bounds_missing(
        store: RecordStore, tmp_path: Path) -> None:
    cfg = config()
    context = EvalContext(config=cfg, system=Precomputed(), judges=[ScoreJudge("j1", J1), ScoreJudge("j2", J2)],
                          decomposer=SentenceDecomposer(), store=store)
    async for _ in Runner(context, "pre", tmp_path / "pre").astream(precomputed_samples()):
        pass
    assert {a.condition.key for a in store.get_answers("pre")} == {"normal"}  # nothing invented
    missing = cube_inputs(store, "pre", cfg)
    assert isinstance(missing, Unavailable)
    assert missing.reason.startswith("no closed_book answers: the CuBE bounds are missing")
    assert "bounds_generator" in missing.reason
    assert write_method_charts(store, "pre", cfg, tmp_path / "charts") == {tmp_path / "charts" / CUBE_CHART: missing.reason}
    assert not (tmp_path / "charts" / CUBE_CHART).exists()
    # samples without gold documents have no oracle bound whatever the system: that is the reason given
    store.put_samples("pre", [s.model_copy(update={"gold_documents": ()}) for s in precomputed_samples()])
    store.put(Answer(run_id="pre", sample_id=precomputed_samples()[0].id, condition=CLOSED_BOOK, text="a guess"))
    no_gold = cube_inputs(store, "pre", cfg)
    assert isinstance(no_gold, Unavailable) and "no sample has gold_documents" in no_gold.reason


async def test_precomputed_system_with_a_bounds_generator_answers_closed_book_and_oracle(
        store: RecordStore, tmp_path: Path) -> None:
    cfg = config(bounds_generator="extractive")
    context = EvalContext(config=cfg, system=Precomputed(bounds=ExtractiveGenerator()),
                          judges=[ScoreJudge("j1", J1), ScoreJudge("j2", J2)],
                          decomposer=SentenceDecomposer(), store=store)
    async for _ in Runner(context, "pre", tmp_path / "pre").astream(precomputed_samples()):
        pass
    answers = {(a.sample_id, a.condition.key): a.text for a in store.get_answers("pre")}
    assert answers[("s1", "normal")] == "precomputed s1"
    assert answers[("s1", "closed_book")] == "I don't know."  # the extractive generator without chunks
    assert answers[("s1", "oracle")] == "The gold fact of s1."  # ... and from the gold document alone
    inputs = cube_inputs(store, "pre", cfg)
    assert not isinstance(inputs, Unavailable)
    report = cube_of_inputs(inputs, cfg)
    assert report.judges[0].readings[CubeReading.ALL].cube_score.value == pytest.approx(0.6 * WGT_J1)  # same scores
    assert report.judges[0].cube_score.value == pytest.approx(0.6 * SEED_J1)
