"""The tournament over scripted judges: Swiss 16 matches vs round robin 28 for 8 systems, deterministic for a
seed, no judge call on a re-run, the Elo table, and the baseline tiers."""

from __future__ import annotations

import re
from collections.abc import Sequence

import pytest

from ragcourt.metrics.dice import BaselineTier, Placement, TournamentMode, expected_score
from ragcourt.nodes.tournament_state import AnswerSet
from ragcourt.runs.ranking import (
    RankSettings,
    load_answer_set,
    place_against_baselines,
    rank_systems,
    save_pool,
)
from ragcourt.schema import Check, CheckKind, Label, Sample, Verdict, VerdictStatus
from ragcourt.stores.records import RecordStore

N_QUESTIONS = 3


def quality(text: str) -> int:
    return int(re.search(r"quality (\d+)", text).group(1))  # type: ignore[union-attr]


class QualityJudge:
    """Prefers the answer stating the higher quality; Tie when equal. Counts its calls."""

    def __init__(self, judge_id: str = "quality") -> None:
        self.judge_id = judge_id
        self.calls = 0

    async def judge(self, kind: CheckKind, checks: Sequence[Check]) -> list[Verdict]:
        self.calls += len(checks)
        out = []
        for c in checks:
            a, b = quality(c.subject_text), quality(c.target_text)
            label = Label.TIE if a == b else Label.A if a > b else Label.B
            out.append(Verdict(check_id=c.id, judge_id=self.judge_id, status=VerdictStatus.OK, label=label))
        return out


def answer_set(name: str, level: int, questions: int = N_QUESTIONS) -> AnswerSet:
    answers = {f"q{i}": Sample(id=f"q{i}", question=f"question {i}?", answer=f"{name} says quality {level}")
               for i in range(questions)}
    return AnswerSet(name=name, answers=answers)


SYSTEMS = [answer_set(f"S{level}", level) for level in range(8)]


@pytest.mark.parametrize(("mode", "matches"), [(TournamentMode.SWISS, 16), (TournamentMode.ROUND_ROBIN, 28)])
async def test_eight_systems_swiss_plays_16_matches_round_robin_28(tmp_path, mode, matches) -> None:
    judge = QualityJudge()
    with RecordStore(tmp_path / "s.sqlite") as store:
        report = await rank_systems(SYSTEMS, [judge], store, RankSettings(mode=mode, n_bootstrap=200))
    assert report.tournament.n_matches == matches
    assert judge.calls == matches * N_QUESTIONS * 2  # every question, both orders
    assert report.calls.asked == judge.calls and report.calls.reused == 0
    best = report.tournament.standings[0]
    assert best.system == "S7" and (best.wins, best.ties, best.losses) == (best.matches, 0, 0)
    assert report.tournament.standings[-1].system == "S0"
    if mode is TournamentMode.ROUND_ROBIN:  # every pair met: the order of quality is recovered exactly
        assert [s.system for s in report.tournament.standings] == [f"S{i}" for i in range(7, -1, -1)]


async def test_same_seed_same_tournament_and_a_rerun_makes_no_judge_call(tmp_path) -> None:
    settings = RankSettings(seed=7, n_bootstrap=100)
    with RecordStore(tmp_path / "a.sqlite") as store_a, RecordStore(tmp_path / "b.sqlite") as store_b:
        first = await rank_systems(SYSTEMS, [QualityJudge()], store_a, settings)
        other_store = await rank_systems(SYSTEMS, [QualityJudge()], store_b, settings)
        rerun_judge = QualityJudge()
        rerun = await rank_systems(SYSTEMS, [rerun_judge], store_a, settings)
    assert first.tournament == other_store.tournament == rerun.tournament
    assert rerun_judge.calls == 0 and rerun.calls.asked == 0 and rerun.calls.reused == 16 * N_QUESTIONS * 2
    assert first.run_id == rerun.run_id


async def test_a_seeded_sample_of_questions(tmp_path) -> None:
    many = [answer_set(f"S{level}", level, questions=10) for level in range(3)]
    with RecordStore(tmp_path / "s.sqlite") as store:
        one = await rank_systems(many, [QualityJudge()], store, RankSettings(questions=4, seed=1, n_bootstrap=0))
        two = await rank_systems(many, [QualityJudge()], store, RankSettings(questions=4, seed=1, n_bootstrap=0))
    assert len(one.questions) == 4 and [q.id for q in one.questions] == [q.id for q in two.questions]
    assert all(len(o) == 4 for o in one.outcomes.values())


async def test_new_system_against_the_baseline_tiers(tmp_path) -> None:
    pool_sets = [answer_set(name, level) for name, level in (("low", 1), ("mid", 4), ("high", 8))]
    with RecordStore(tmp_path / "s.sqlite") as store:
        ranked = await rank_systems(pool_sets, [QualityJudge()], store, RankSettings(n_bootstrap=0))
        pool = save_pool(tmp_path / "pool", ranked, pool_sets)
        assert {e.name: e.tier for e in pool.entries} == {
            "high": BaselineTier.HIGH, "mid": BaselineTier.MEDIUM, "low": BaselineTier.LOW}
        new_file = tmp_path / "new.jsonl"
        new_file.write_text("".join(
            Sample(id=f"q{i}", question=f"question {i}?", answer="new says quality 4").model_dump_json() + "\n"
            for i in range(N_QUESTIONS)), encoding="utf-8")
        report = await place_against_baselines(load_answer_set(new_file), tmp_path / "pool", [QualityJudge()], store,
                                               RankSettings())
    by_tier = {r.baseline.tier: r for r in report.position.records}
    assert (by_tier[BaselineTier.HIGH].question_losses, by_tier[BaselineTier.HIGH].score_share) == (3, 0.0)
    assert (by_tier[BaselineTier.MEDIUM].question_ties, by_tier[BaselineTier.MEDIUM].score_share) == (3, 0.5)
    assert (by_tier[BaselineTier.LOW].question_wins, by_tier[BaselineTier.LOW].score_share) == (3, 1.0)
    # pool Elo after its round robin: high 1531.26, mid 1500.70, low 1468.03; it scored exactly half against mid:
    # level with it
    assert report.position.placement is Placement.LEVEL_MEDIUM
    mid_rating = by_tier[BaselineTier.MEDIUM].baseline.rating
    high_rating, low_rating = by_tier[BaselineTier.HIGH].baseline.rating, by_tier[BaselineTier.LOW].baseline.rating
    # shares 0, 0.5, 1, one round from 1500 with the settings' K (seed 001, 3.3):
    # R = 1500 + K sum(share - E(1500, R_i)) = 1500 + 32 (0 - 0.455 + 0.5 - 0.499 + 1 - 0.546) = 1500.0
    elo = report.position.elo.value
    assert elo is not None and low_rating < elo < high_rating
    shares = (0.0, 0.5, 1.0)
    ratings = (high_rating, mid_rating, low_rating)
    assert elo == pytest.approx(1500 + 32 * sum(s - expected_score(1500, r) for s, r in zip(shares, ratings, strict=True)))
