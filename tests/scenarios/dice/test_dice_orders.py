"""Seed 001's single judging order (A/B position drawn per question, seeded) beside ragcourt's both orders,
the position bias rate per judge, and the threshold baseline (4.2) playing the tournament as a judge."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from ragcourt.graphs.tournament import build_match_graph
from ragcourt.metrics.dice import TournamentMode
from ragcourt.nodes.match_scorer import resolve_single
from ragcourt.nodes.pairwise import a_shown_first, both_orders, metric_verdict
from ragcourt.nodes.tournament_state import AnswerSet, MatchContext, OrderProtocol
from ragcourt.runs.ranking import (
    RankSettings,
    load_answer_set,
    place_against_baselines,
    rank_systems,
    save_pool,
)
from ragcourt.schema import Check, CheckKind, Label, Sample, UnscoredReason, Verdict, VerdictStatus
from ragcourt.schema.config import ConfigError, ThresholdJudgeSpec
from ragcourt.stores.records import RecordStore

N = 20
QUESTIONS = [Sample(id=f"q{i}", question=f"What is the capital of France ({i})?") for i in range(N)]


def answers(name: str, text: str) -> AnswerSet:
    return AnswerSet(name, {q.id: q.model_copy(update={"answer": text}) for q in QUESTIONS})


GOOD, BAD = answers("good", "Paris."), answers("bad", "Lyon.")


class FirstShownJudge:
    """Pure position bias: always prefers the answer shown as A."""

    judge_id = "first"

    def __init__(self) -> None:
        self.calls = 0

    async def judge(self, kind: CheckKind, checks: Sequence[Check]) -> list[Verdict]:
        self.calls += len(checks)
        return [Verdict(check_id=c.id, judge_id=self.judge_id, status=VerdictStatus.OK, label=Label.A)
                for c in checks]


class ParisJudge:
    """No position bias: prefers the answer that says Paris, wherever it is shown."""

    judge_id = "paris"

    def __init__(self) -> None:
        self.calls = 0

    async def judge(self, kind: CheckKind, checks: Sequence[Check]) -> list[Verdict]:
        self.calls += len(checks)
        return [Verdict(check_id=c.id, judge_id=self.judge_id, status=VerdictStatus.OK,
                        label=Label.A if "Paris" in c.subject_text else Label.B) for c in checks]


# --------------------------------------------------------------------------- the single order


def test_the_drawn_order_is_seeded_and_shows_each_system_first_on_some_questions() -> None:
    draws = [a_shown_first(0, q.id, "good", "bad") for q in QUESTIONS]
    assert draws == [a_shown_first(0, q.id, "good", "bad") for q in QUESTIONS]  # reproducible
    assert 0 < sum(draws) < N  # neither system is always shown first
    assert draws != [a_shown_first(1, q.id, "good", "bad") for q in QUESTIONS]  # another seed, another draw


async def test_single_order_judges_each_question_once_and_reads_it_in_as_frame(tmp_path) -> None:
    first, paris = FirstShownJudge(), ParisJudge()
    with RecordStore(tmp_path / "s.sqlite") as store:
        context = MatchContext(judges=[first, paris], store=store, answer_sets={"good": GOOD, "bad": BAD},
                               questions=QUESTIONS, run_id="r", orders=OrderProtocol.SINGLE, order_seed=0)
        state = await build_match_graph().ainvoke({"system_a": "good", "system_b": "bad"}, context=context)
        assert len(store.checks_for("r")) == N  # one check per question, not two
    assert (first.calls, paris.calls) == (N, N)  # half of both orders' 2N
    for outcome in state["outcomes"]:
        shown_first = a_shown_first(0, outcome.question_id, "good", "bad")
        biased, fair = outcome.decisions
        # "first" picks whichever answer it saw as A: good when good was shown first, else bad
        assert biased.label is (Label.A if shown_first else Label.B)
        assert fair.label is Label.A  # Paris wins in either position
        assert not biased.position_bias and len(outcome.check_ids) == 1
        assert (biased.label_first is None) is (not shown_first)
        assert (biased.label_second is None) is shown_first


async def test_both_orders_report_the_position_bias_rate_per_judge(tmp_path) -> None:
    settings = RankSettings(mode=TournamentMode.ROUND_ROBIN, n_bootstrap=10)
    with RecordStore(tmp_path / "s.sqlite") as store:
        report = await rank_systems([GOOD, BAD], [FirstShownJudge(), ParisJudge()], store, settings)
        single = await rank_systems([GOOD, BAD], [FirstShownJudge(), ParisJudge()], store,
                                    settings.model_copy(update={"orders": OrderProtocol.SINGLE}))
    assert report.position_bias == {"first": (N, N), "paris": (0, N)}
    rates = report.position_bias_rates
    assert (rates["first"].value, rates["paris"].value) == (1.0, 0.0)
    # both orders: the biased judge's disagreeing orders are Ties, and the jury's votes (A, Tie) give 0.5
    [(pair, outcomes)] = report.outcomes.items()
    assert pair == ("good", "bad") and {o.score_a for o in outcomes} == {0.5}
    # one order: votes (A, A) where good was shown first (1.0), (B, A) where bad was (a 0.5 vote tie)
    [(pair, outcomes)] = single.outcomes.items()
    shown = {q.id: a_shown_first(0, q.id, *pair) for q in QUESTIONS}
    assert pair == ("good", "bad") and {o.question_id: o.score_a for o in outcomes} == {
        q: 1.0 if good_first else 0.5 for q, good_first in shown.items()}
    assert all(r.value is None and r.na_reason == "not measured: one order per question"
               for r in single.position_bias_rates.values())
    assert single.run_id != report.run_id


def test_new_rank_options_leave_an_old_rankings_run_config_as_it_was() -> None:
    assert set(RankSettings().run_config()) == {"mode", "rounds", "k", "seed", "questions", "scheme",
                                                "n_bootstrap", "concurrency"}
    assert RankSettings(orders=OrderProtocol.SINGLE).run_config()["orders"] == "single"


# --------------------------------------------------------------------------- the threshold baseline (4.2)

SPEC = ThresholdJudgeSpec(columns=("f", "r", "u"), tie_margin=0.05)
# per question, each system's three dimensions; Score_S(q) = their mean, hand-computed in the comment
FIGURES = {
    "hi": {"q1": (0.9, 0.8, 0.7), "q2": (1.0, 0.8, 0.6), "q3": (0.9, 0.9, None)},  # 0.8, 0.8, n/a
    "mid": {"q1": (0.6, 0.6, 0.6), "q2": (0.6, 0.6, 0.6), "q3": (0.5, 0.5, 0.5)},  # 0.6, 0.6, 0.5
    "lo": {"q1": (0.7, 0.5, 0.54), "q2": (0.2, 0.2, 0.2), "q3": (0.5, 0.5, 0.5)},  # 0.58, 0.2, 0.5
}


def scored_set(name: str) -> AnswerSet:
    rows = {}
    for question_id, figures in FIGURES[name].items():
        metadata = {c: v for c, v in zip(SPEC.columns, figures, strict=True) if v is not None}
        rows[question_id] = Sample(id=question_id, question=f"question {question_id}?", answer=f"{name} answer",
                                   metadata=metadata)
    return AnswerSet(name, rows)


def test_threshold_spec_parses_columns_and_margin() -> None:
    assert ThresholdJudgeSpec.parse("f,r,u@0.05") == SPEC
    assert ThresholdJudgeSpec.parse("faithfulness").tie_margin == 0.05
    with pytest.raises(ConfigError, match="COLUMN"):
        ThresholdJudgeSpec.parse("f@-1")


def test_metric_verdict_compares_the_shown_answers_scores_and_says_why_it_cannot() -> None:
    hi, mid = scored_set("hi"), scored_set("mid")
    question = Sample(id="q1", question="question q1?")
    first, second = both_orders(question, hi.answers["q1"], mid.answers["q1"])
    assert metric_verdict(SPEC, first, hi.answers["q1"], mid.answers["q1"]).label is Label.A  # 0.8 vs 0.6
    assert metric_verdict(SPEC, second, mid.answers["q1"], hi.answers["q1"]).label is Label.B
    missing = metric_verdict(SPEC, first, hi.answers["q3"], mid.answers["q3"])
    assert missing.unscored_reason is UnscoredReason.MISSING_ITEM
    assert missing.detail == "no numeric figure for u in both answers"


async def test_a_scalar_metric_plays_the_tournament_as_a_judge(tmp_path) -> None:
    settings = RankSettings(mode=TournamentMode.ROUND_ROBIN, n_bootstrap=10, metric_judges=(SPEC,))
    sets = [scored_set(n) for n in ("hi", "mid", "lo")]
    with RecordStore(tmp_path / "s.sqlite") as store:
        report = await rank_systems(sets, [], store, settings)
    assert report.calls.asked == 0 and report.judge_ids == ["threshold:f+r+u@0.05"]
    scores = {frozenset(pair): {o.question_id: o.score_a for o in outcomes} for pair, outcomes in
              report.outcomes.items()}
    firsts = {frozenset(pair): pair[0] for pair in report.outcomes}
    # hi beats mid and lo on q1 and q2 (0.8 against 0.6 and 0.58 / 0.2); q3 has no u for hi: left out
    for other in ("mid", "lo"):
        pair = frozenset({"hi", other})
        expected = 1.0 if firsts[pair] == "hi" else 0.0
        assert scores[pair] == {"q1": expected, "q2": expected, "q3": None}
    # mid vs lo: q1 0.60 vs 0.58 is inside the 0.05 band (Tie), q2 0.6 vs 0.2 mid, q3 0.5 vs 0.5 Tie
    pair = frozenset({"mid", "lo"})
    mid_scores = {"q1": 0.5, "q2": 1.0, "q3": 0.5}
    assert scores[pair] == (mid_scores if firsts[pair] == "mid" else {q: 1 - s for q, s in mid_scores.items()})
    assert report.unscored_questions == 2  # q3 in hi's two matches
    assert [s.system for s in report.tournament.standings] == ["hi", "mid", "lo"]
    # a metric sees no position: its two orders always agree
    assert report.position_bias == {"threshold:f+r+u@0.05": (0, 7)}


def test_an_unscored_single_order_gives_no_decision_never_a_tie() -> None:
    unscored = Verdict.unscored("c1", "j", UnscoredReason.PARSE_FAILURE)
    decision = resolve_single("j", unscored, a_first=False)
    assert decision.label is None and decision.na_reason is not None
    assert decision.na_reason.startswith("unscored with B shown first")
    # a decided B-first verdict is put into A's frame, logprob probabilities with it
    b_first = Verdict(check_id="c2", judge_id="j", status=VerdictStatus.OK, label=Label.A,
                      probabilities={Label.A: 0.7, Label.B: 0.2, Label.TIE: 0.1})
    decision = resolve_single("j", b_first, a_first=False)
    assert (decision.label, decision.label_first, decision.label_second) == (Label.B, None, Label.B)
    assert decision.probabilities == {Label.A: 0.2, Label.B: 0.7, Label.TIE: 0.1}


async def test_baseline_tiers_under_the_single_order_judge_each_question_once_per_baseline(tmp_path) -> None:
    pool_sets = [answers("paris", "Paris."), answers("lyon", "Lyon."), answers("nice", "Nice.")]
    with RecordStore(tmp_path / "s.sqlite") as store:
        ranked = await rank_systems(pool_sets, [ParisJudge()], store, RankSettings(n_bootstrap=0))
        save_pool(tmp_path / "pool", ranked, pool_sets)
        new_file = tmp_path / "new.jsonl"
        new_file.write_text("".join(q.model_copy(update={"answer": "Paris, the capital."}).model_dump_json() + "\n"
                                    for q in QUESTIONS), encoding="utf-8")
        judge = ParisJudge()
        report = await place_against_baselines(load_answer_set(new_file), tmp_path / "pool", [judge], store,
                                               RankSettings(orders=OrderProtocol.SINGLE))
    assert report.orders is OrderProtocol.SINGLE and judge.calls == 3 * N  # one order, three baselines
    shares = {r.baseline.name: r.score_share for r in report.position.records}
    # against "paris" both answers say Paris, so ParisJudge prefers whichever is shown as A: the new system
    # scores 1 on the questions where the draw showed it first and 0 on the others
    drawn = sum(a_shown_first(0, q.id, "new", "paris") for q in QUESTIONS) / N
    assert shares == {"paris": drawn, "lyon": 1.0, "nice": 1.0}
