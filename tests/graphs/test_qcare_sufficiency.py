"""Q-CARE sufficiency is judged on R(q), the claims the jury found to serve q (seed 002, 3.4.2; issue 19 item 4).

The fixture, worked out by hand (decomposer: sentences; judge: a needle in the target text, graph_fixtures.py):

question "Who founded Acme? When was Acme founded?" -> Qa "Who founded Acme?", Qb "When was Acme founded?"
one chunk c1 "Ada Lovelace founded Acme in 1990."
answer "Ada Lovelace founded Acme. Acme sells rockets since 1990. Acme is old." -> claims
  A1 "Ada Lovelace founded Acme."       serves Qa (needle "who")
  A2 "Acme sells rockets since 1990."   serves nothing (no needle): rejected by the serve check
  A3 "Acme is old."                     serves Qb (needle "when")
R(Qa) = {A1}, R(Qb) = {A3}. Sufficiency needles: Qa "Lovelace" (in A1: yes), Qb "1990" (not in A3: no).
  Completeness = |{Qa}| / 2 = 1/2; Conciseness = |{A1}| / 3 = 1/3 (A3 serves Qb, which is not covered).
On all claims (the old target), Qb's sufficiency found "1990" in the rejected A2: Qb covered, Completeness 2/2
and Conciseness 2/3 (A1, A3), both inflated by a claim that does not serve Qb.
Checks: 2 sub-query x chunk, 3 claim x chunk, 3 x 2 serves, then 2 sufficiency (one per R(q)) = 13; the
judge is asked in two rounds: serves first, sufficiency on R(q) after (3 kinds + 1 = 4 calls).
"""

from __future__ import annotations

import sys

import pytest
from fixtures import FIXTURES

sys.path.insert(0, str(FIXTURES / "graph"))

from graph_fixtures import NeedleJudge, ScriptedSystem, make_context, ranked

from ragcourt.graphs.sample import build_sample_graph
from ragcourt.judging.combined_checks import render_combined
from ragcourt.judging.llm_judge import claims_target_text, render_batch
from ragcourt.schema import NORMAL, Check, CheckKind, Label, Review, ReviewAction, Sample, WholeTarget
from ragcourt.schema.config import EvalConfig, JudgeSpec, Method
from ragcourt.stores.records import RecordStore

K = CheckKind
RUN = "run-rq"
SAMPLE = Sample(id="q1", question="Who founded Acme? When was Acme founded?")
QA, QB = "Who founded Acme?", "When was Acme founded?"
A1, A2, A3 = "Ada Lovelace founded Acme.", "Acme sells rockets since 1990.", "Acme is old."
NEEDLES = {
    (K.SUBQUERY_IN_CHUNK, QA): "Lovelace", (K.SUBQUERY_IN_CHUNK, QB): "1990",
    (K.CLAIM_SERVES_SUBQUERY, A1): "who", (K.CLAIM_SERVES_SUBQUERY, A3): "when",
    (K.SUBQUERY_ANSWERED, QA): "Lovelace", (K.SUBQUERY_ANSWERED, QB): "1990",
    (K.CLAIM_SUPPORTED, A1): "Lovelace",
}


@pytest.fixture
async def state(tmp_path):
    system = ScriptedSystem(ranked={"q1": ranked("q1", ("Ada Lovelace founded Acme in 1990.", 0.9))},
                            answers={"q1": f"{A1} {A2} {A3}"})
    judge = NeedleJudge("judge-a", NEEDLES)
    config = EvalConfig(judges=(JudgeSpec(model="judge-a"),), methods=(Method.QCARE,), top_k=3)
    with RecordStore(tmp_path / "store.sqlite") as store:
        result = await build_sample_graph().ainvoke({"run_id": RUN, "sample": SAMPLE},
                                                    context=make_context(store, config, [judge], system))
        yield result, judge


async def test_sufficiency_is_judged_on_the_claims_that_serve_the_subquery(state) -> None:
    result, judge = state
    diagnostics = result["diagnostics"]
    assert diagnostics.metric("completeness").value == pytest.approx(1 / 2)
    assert diagnostics.metric("conciseness").value == pytest.approx(1 / 3)
    assert diagnostics.metric("verifiableness").value == pytest.approx(1 / 3)
    answered = {c.subject_text: c for c in result["checks"].values() if c.kind is K.SUBQUERY_ANSWERED}
    assert {q: c.target_text for q, c in answered.items()} == {QA: A1, QB: A3}
    assert {c.target_id for c in answered.values()} == {WholeTarget.CLAIMS}
    assert diagnostics.n_checks == 13
    # two rounds: the serve checks (with the others) first, then sufficiency on the reconciled R(q)
    kinds = [kind for kind, _ in judge.calls]
    assert set(kinds[:3]) == {K.SUBQUERY_IN_CHUNK, K.CLAIM_SUPPORTED, K.CLAIM_SERVES_SUBQUERY}
    assert kinds[3:] == [K.SUBQUERY_ANSWERED]


async def test_a_subquery_no_claim_serves_gets_no_sufficiency_check(tmp_path) -> None:
    needles = {key: value for key, value in NEEDLES.items() if key != (K.CLAIM_SERVES_SUBQUERY, A3)}
    system = ScriptedSystem(ranked={"q1": ranked("q1", ("Ada Lovelace founded Acme in 1990.", 0.9))},
                            answers={"q1": f"{A1} {A2} {A3}"})
    config = EvalConfig(judges=(JudgeSpec(model="judge-a"),), methods=(Method.QCARE,), top_k=3)
    with RecordStore(tmp_path / "store.sqlite") as store:
        result = await build_sample_graph().ainvoke(
            {"run_id": RUN, "sample": SAMPLE},
            context=make_context(store, config, [NeedleJudge("judge-a", needles)], system))
    answered = [c.subject_text for c in result["checks"].values() if c.kind is K.SUBQUERY_ANSWERED]
    assert answered == [QA]  # R(Qb) is empty: Qb is not covered, nothing to ask
    assert result["diagnostics"].metric("completeness").value == pytest.approx(1 / 2)
    assert result["diagnostics"].metric("completeness").n_unscored == 0


def test_the_llm_prompts_show_each_subquery_its_own_related_claims() -> None:
    """The focused prompt lists the claims once with ids and names each sub-query's related ones (the prompt's
    "related claims" note); the combined one shows each sub-query's R(q) under its id."""
    checks = [Check(kind=K.SUBQUERY_ANSWERED, sample_id="q1", condition=NORMAL, subject_id=sid, subject_text=text,
                    target_id=WholeTarget.CLAIMS, target_text=claims_target_text(claims), question=SAMPLE.question)
              for sid, text, claims in (("qa", QA, [A1]), ("qb", QB, [A3, A2]))]
    prompt, shown, _ = render_batch(K.SUBQUERY_ANSWERED, checks)
    assert shown == {"Q1": "qa", "Q2": "qb"}
    assert "[Q1] (related claims: A1) " in prompt and "[Q2] (related claims: A2, A3) " in prompt
    for claim_id, claim in (("A1", A1), ("A2", A3), ("A3", A2)):  # ids in order of first appearance
        start = prompt.index(f"[{claim_id}] <<<CLAIM-")
        assert prompt.index(claim, start) < prompt.index("<<<END-CLAIM-", start)
    combined = render_combined(checks).prompt
    assert "Answer claims related to each sub-query" in combined
    assert combined.index("[Q1] <<<CLAIMS-") < combined.index(A1) < combined.index("[Q2] <<<CLAIMS-")


async def test_a_split_serve_check_gets_the_sufficiency_its_review_needs_and_a_rescore_asks_no_judge(
    tmp_path,
) -> None:
    """Judges A and B split on whether A3 serves Qb: A3 is not in R(Qb) (no majority), so Qb is undecided; the
    sufficiency of R(Qb) with A3 ({A3}: "old" -> yes) is asked at once, so after a person's "yes" the same
    graph replayed decides Qb covered with no judge call: Completeness 1 of 1 decided -> 2 of 2."""
    needles_a = {**NEEDLES, (K.SUBQUERY_ANSWERED, QB): "old"}
    needles_b = {key: value for key, value in needles_a.items() if key != (K.CLAIM_SERVES_SUBQUERY, A3)}
    system = ScriptedSystem(ranked={"q1": ranked("q1", ("Ada Lovelace founded Acme in 1990.", 0.9))},
                            answers={"q1": f"{A1} {A2} {A3}"})
    config = EvalConfig(judges=(JudgeSpec(model="judge-a"), JudgeSpec(model="judge-b")), methods=(Method.QCARE,),
                        top_k=3)
    judges = [NeedleJudge("judge-a", needles_a), NeedleJudge("judge-b", needles_b)]
    with RecordStore(tmp_path / "store.sqlite") as store:
        context = make_context(store, config, judges, system)
        first = await build_sample_graph().ainvoke({"run_id": RUN, "sample": SAMPLE}, context=context)
        answered = {c.subject_text: c.target_text for c in first["checks"].values() if c.kind is K.SUBQUERY_ANSWERED}
        assert answered == {QA: A1, QB: A3}
        completeness = first["diagnostics"].metric("completeness")
        assert (completeness.value, completeness.n, completeness.n_unscored) == (1.0, 1, 1)
        (split,) = [r for r in first["reconciled"].values() if r.split]
        assert first["checks"][split.check_id].subject_text == A3
        store.add_review(Review(run_id=RUN, check_id=split.check_id, reviewer="ann", action=ReviewAction.OVERRIDE,
                                label=Label.YES))
        calls = [len(j.calls) for j in judges]
        again = await build_sample_graph().ainvoke({"run_id": RUN, "sample": SAMPLE}, context=context)
    assert [len(j.calls) for j in judges] == calls  # every verdict came from the store
    completeness = again["diagnostics"].metric("completeness")
    assert (completeness.value, completeness.n, completeness.n_unscored) == (1.0, 2, 0)
    assert again["diagnostics"].metric("conciseness").value == pytest.approx(2 / 3)  # A1 and A3


async def test_a_split_serve_check_beside_a_decided_one_leaves_an_insufficient_r_q_undecided(tmp_path) -> None:
    """Issue 35, item 5: judges A and B split on whether A2 serves Qb, both say A3 does. The sufficiency of
    {A3} is "no" ("1990" is in A2 only), but A2 may belong to R(Qb): Qb is undecided, not a decided "not
    covered" (it was: Completeness 1/2 with n_unscored 0). A "yes" on the known claims would decide it: more
    claims cannot answer a sub-query less."""
    needles_a = {**NEEDLES, (K.CLAIM_SERVES_SUBQUERY, A2): "when"}
    system = ScriptedSystem(ranked={"q1": ranked("q1", ("Ada Lovelace founded Acme in 1990.", 0.9))},
                            answers={"q1": f"{A1} {A2} {A3}"})
    config = EvalConfig(judges=(JudgeSpec(model="judge-a"), JudgeSpec(model="judge-b")), methods=(Method.QCARE,),
                        top_k=3)
    judges = [NeedleJudge("judge-a", needles_a), NeedleJudge("judge-b", NEEDLES)]
    with RecordStore(tmp_path / "store.sqlite") as store:
        result = await build_sample_graph().ainvoke({"run_id": RUN, "sample": SAMPLE},
                                                    context=make_context(store, config, judges, system))
    (split,) = [r for r in result["reconciled"].values() if r.split]
    assert result["checks"][split.check_id].subject_text == A2
    completeness = result["diagnostics"].metric("completeness")
    assert (completeness.value, completeness.n, completeness.n_unscored) == (1.0, 1, 1)
