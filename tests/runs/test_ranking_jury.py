"""The pairwise jury rule in a DICE ranking (runs.ranking, nodes.match_scorer): with two judges that differ (A
and Tie), majority_tie scores the question 0.5 for A and mean_probability 1 unless the tie margin covers
|P_B - P_A| = 0.5. Two scalar metric judges play the jury (no model call): `x` prefers A, `y` ties."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragcourt.metrics.dice import TournamentMode
from ragcourt.nodes.tournament_state import AnswerSet
from ragcourt.runs.ranking import RankSettings, rank_systems
from ragcourt.schema import Sample
from ragcourt.schema.config import PairwiseJury, ThresholdJudgeSpec
from ragcourt.stores.records import RecordStore

JUDGES = (ThresholdJudgeSpec(columns=("x",)), ThresholdJudgeSpec(columns=("y",)))


def _set(name: str, x: float) -> AnswerSet:
    return AnswerSet(name, {"q1": Sample(id="q1", question="Who?", answer=f"{name} says", metadata={"x": x, "y": 0.5})})


@pytest.mark.parametrize(("jury", "margin", "score_a"), [
    (PairwiseJury.MAJORITY_TIE, 0.0, 0.5),
    (PairwiseJury.MEAN_PROBABILITY, 0.0, 1.0),
    (PairwiseJury.MEAN_PROBABILITY, 0.6, 0.5),
])
async def test_the_jury_rule_decides_the_hard_score(tmp_path: Path, jury: PairwiseJury, margin: float,
                                                    score_a: float) -> None:
    settings = RankSettings(mode=TournamentMode.ROUND_ROBIN, metric_judges=JUDGES, n_bootstrap=10, jury=jury,
                            tie_margin=margin)
    with RecordStore(tmp_path / "store.sqlite") as store:
        report = await rank_systems([_set("a", 1.0), _set("b", 0.0)], [], store, settings)
    (outcomes,) = report.outcomes.values()
    (outcome,) = outcomes
    assert (outcome.probabilities.p_a, outcome.probabilities.p_tie) == (0.5, 0.5)
    played_a = next(iter(report.outcomes))[0]
    assert outcome.score_a == (score_a if played_a == "a" else 1 - score_a)


def test_the_default_rule_leaves_the_recorded_settings_and_run_ids_as_they_were() -> None:
    assert "jury" not in RankSettings().run_config() and "tie_margin" not in RankSettings().run_config()
    chosen = RankSettings(jury=PairwiseJury.MEAN_PROBABILITY, tie_margin=0.25).run_config()
    assert (chosen["jury"], chosen["tie_margin"]) == ("mean_probability", 0.25)
