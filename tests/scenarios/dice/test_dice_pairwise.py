"""The pairwise node: both orders, position bias as Tie, probabilities from the decision token's logprobs
(through the real HTTP client against FakeOpenAIServer), the jury's vote fallback, and store reuse."""

from __future__ import annotations

import math
import re

import pytest
from fakes.openai_server import CHAT_PATH, ChatRequest, FakeOpenAIServer, Reply

from ragcourt.graphs.tournament import build_match_graph
from ragcourt.judging import LLMJudge
from ragcourt.judging.decision_tokens import decision_label_of_token, token_decision_probabilities
from ragcourt.llm.factory import build_client
from ragcourt.llm.reply import TokenLogprob
from ragcourt.llm.spec import ModelSpec, StructuredMethod
from ragcourt.metrics.dice import ProbabilitySource
from ragcourt.nodes.match_scorer import jury_probabilities, resolve_orders
from ragcourt.nodes.pairwise import both_orders
from ragcourt.nodes.tournament_state import AnswerSet, MatchContext
from ragcourt.schema import Chunk, Label, Sample, UnscoredReason, Verdict, VerdictStatus
from ragcourt.stores.records import RecordStore

QUESTION = Sample(id="q1", question="What is the capital of France?", reference_answer="Paris")
GOOD = Sample(id="q1", question=QUESTION.question, answer="The capital of France is Paris.",
              contexts=(Chunk(id="c1", title="France", text="Paris is the capital of France."),))
BAD = Sample(id="q1", question=QUESTION.question, answer="It is Lyon.", contexts=())


def verdict(check_id: str, label: Label | None, judge: str = "j", probabilities: dict | None = None) -> Verdict:
    if label is None:
        return Verdict(check_id=check_id, judge_id=judge, status=VerdictStatus.UNSCORED,
                       unscored_reason=UnscoredReason.PARSE_FAILURE)
    return Verdict(check_id=check_id, judge_id=judge, status=VerdictStatus.OK, label=label,
                   probabilities=probabilities)


# --------------------------------------------------------------------------- checks and order resolution


def test_both_orders_swap_answers_and_evidence() -> None:
    first, second = both_orders(QUESTION, GOOD, BAD)
    assert (first.subject_text, first.target_text) == (GOOD.answer, BAD.answer)
    assert (second.subject_text, second.target_text) == (BAD.answer, GOOD.answer)
    assert first.id != second.id and first.reference == "Paris"
    assert first.evidence is not None and first.evidence.startswith("Retrieved for answer A:\n[A1] (France) Paris")
    assert "Retrieved for answer B: nothing" in first.evidence
    assert second.evidence is not None and second.evidence.startswith("Retrieved for answer A: nothing")
    # content addressed: the same texts under other system names give the same checks
    assert both_orders(QUESTION, GOOD.model_copy(update={"id": "x"}), BAD)[0].id == first.id


def test_consistent_orders_keep_the_label_and_average_probabilities() -> None:
    decision = resolve_orders(
        "j",
        verdict("c1", Label.A, probabilities={Label.A: 0.8, Label.B: 0.1, Label.TIE: 0.1}),
        verdict("c2", Label.B, probabilities={Label.A: 0.2, Label.B: 0.6, Label.TIE: 0.2}),
    )
    assert (decision.label, decision.position_bias) == (Label.A, False)
    # A in A's frame: (0.8 + 0.6) / 2; B: (0.1 + 0.2) / 2; Tie: (0.1 + 0.2) / 2
    assert decision.probabilities == pytest.approx({Label.A: 0.7, Label.B: 0.15, Label.TIE: 0.15})


def test_disagreeing_orders_count_as_tie_and_are_flagged() -> None:
    # "A" both times = prefers whatever is shown first: the two orders contradict each other
    decision = resolve_orders("j", verdict("c1", Label.A), verdict("c2", Label.A))
    assert (decision.label, decision.position_bias) == (Label.TIE, True)
    assert (decision.label_first, decision.label_second) == (Label.A, Label.B)


def test_an_unscored_order_gives_no_decision() -> None:
    decision = resolve_orders("j", verdict("c1", Label.A), verdict("c2", None))
    assert decision.label is None and "unscored with B shown first" in (decision.na_reason or "")


def test_jury_vote_fallback_and_logprob_mean() -> None:
    a = resolve_orders("j1", verdict("c1", Label.A), verdict("c2", Label.B))
    tie = resolve_orders("j2", verdict("c1", Label.A), verdict("c2", Label.A))
    none = resolve_orders("j3", verdict("c1", None), verdict("c2", Label.B))
    votes = jury_probabilities([a, tie, none])
    assert votes.source is ProbabilitySource.VOTES
    assert (votes.p_a, votes.p_b, votes.p_tie, votes.n_unscored) == (0.5, 0.0, 0.5, 1)
    p, p_swapped = {Label.A: 0.9, Label.B: 0.05, Label.TIE: 0.05}, {Label.A: 0.05, Label.B: 0.9, Label.TIE: 0.05}
    q, q_swapped = {Label.A: 0.5, Label.B: 0.2, Label.TIE: 0.3}, {Label.A: 0.3, Label.B: 0.4, Label.TIE: 0.3}
    sure = resolve_orders("j1", verdict("c1", Label.A, probabilities=p), verdict("c2", Label.B, probabilities=p_swapped))
    less = resolve_orders("j2", verdict("c1", Label.A, probabilities=q), verdict("c2", Label.B, probabilities=q_swapped))
    # c2 is B-first: its B is the match's A. j1: A (0.9 + 0.9) / 2 = 0.9, B 0.05, Tie 0.05;
    # j2: A (0.5 + 0.4) / 2 = 0.45, B (0.2 + 0.3) / 2 = 0.25, Tie 0.3; the jury's mean: 0.675, 0.15, 0.175
    mean = jury_probabilities([sure, less])
    assert (mean.p_a, mean.p_b, mean.p_tie) == pytest.approx((0.675, 0.15, 0.175))


# --------------------------------------------------------------------------- the decision token


def tokens(*pieces: str, decision_top: list[tuple[str, float]]) -> list[TokenLogprob]:
    out = []
    for piece in pieces:
        top = decision_top if piece.strip('" :') in ("A", "B", "Tie", "T") and decision_top else []
        out.append(TokenLogprob(token=piece, logprob=-0.01, top=top))
    return out


def test_decision_token_is_found_after_the_key_even_when_merged_or_split() -> None:
    top = [("A", math.log(0.6)), ("B", math.log(0.3)), ("T", math.log(0.1))]
    merged = tokens('{"', "analysis", '":"', "The decision is B", '","', "decision", '":"A', '"}', decision_top=[])
    merged[6] = TokenLogprob(token='":"A', logprob=math.log(0.6), top=[('":"A', math.log(0.6)), ('":"B', math.log(0.3)),
                                                                          ('":"Tie', math.log(0.1))])
    found = token_decision_probabilities(merged)
    assert found is not None and (found.p_a, found.p_b, found.p_tie) == pytest.approx((0.6, 0.3, 0.1))
    split = tokens('{"', "decision", '":"', "T", "ie", '"}', decision_top=top)
    found = token_decision_probabilities(split)
    assert found is not None and (found.p_a, found.p_b, found.p_tie) == pytest.approx((0.6, 0.3, 0.1))
    assert decision_label_of_token("a") is None and decision_label_of_token(" Tie") is Label.TIE


def test_no_probabilities_without_top_alternatives() -> None:
    assert token_decision_probabilities(tokens('{"decision":"', "A", '"}', decision_top=[])) is None
    assert token_decision_probabilities(None) is None


# --------------------------------------------------------------------------- through the HTTP client


def shown_answer(request: ChatRequest, label: str) -> str:
    prompt = "".join(str(m.get("content")) for m in request.messages)
    match = re.search(rf"<<<{label}-[0-9a-f]+>>>\n(.*?)\n<<<END-{label}-", prompt, re.DOTALL)
    assert match is not None
    return match.group(1)


def json_tokens(analysis: str, decision: str, top: list[tuple[str, float]]) -> list[tuple[str, float, list]]:
    """The arguments JSON the fake server sends (json.dumps spacing), cut into tokens; the decision is one."""
    return [('{"', -0.01, []), ("analysis", -0.01, []), ('": "', -0.01, []), (analysis, -0.01, []),
            ('", "', -0.01, []), ("decision", -0.01, []), ('": "', -0.01, []),
            (decision, dict(top)[decision], top), ('"}', -0.01, [])]


def paris_judge(request: ChatRequest) -> Reply:
    """Prefers the answer naming Paris, whichever position it is shown in; 80 % sure."""
    decision = "A" if "Paris" in shown_answer(request, "ANSWER_A") else "B"
    other = "B" if decision == "A" else "A"
    top = [(decision, math.log(0.8)), (other, math.log(0.15)), ("Tie", math.log(0.05))]
    output = {"analysis": "one answer names Paris", "decision": decision}
    return Reply(output=output, logprobs=json_tokens(output["analysis"], decision, top))


def first_shown_judge(request: ChatRequest) -> dict[str, str]:
    return {"analysis": "the first one reads better", "decision": "A"}


def llm_judge(server: FakeOpenAIServer, judge_id: str, method: StructuredMethod, store: RecordStore) -> LLMJudge:
    spec = ModelSpec.parse(f"openai:{judge_id}@{server.base_url}", method=method)
    client = build_client(spec, cache=store, logprobs=True, top_logprobs=3)
    return LLMJudge(client, judge_id)


@pytest.mark.parametrize("method", [StructuredMethod.FUNCTION_CALLING, StructuredMethod.JSON_SCHEMA])
async def test_llm_judge_fills_probabilities_from_the_decision_token(
    openai_server: FakeOpenAIServer, tmp_path, method: StructuredMethod
) -> None:
    openai_server.builders["PairwiseDecision"] = paris_judge
    with RecordStore(tmp_path / "s.sqlite") as store:
        judge = llm_judge(openai_server, "paris", method, store)
        first, second = both_orders(QUESTION, GOOD, BAD)
        [v1] = await judge.judge(first.kind, [first])
        [v2] = await judge.judge(second.kind, [second])
    assert (v1.label, v2.label) == (Label.A, Label.B)
    assert v1.probabilities == pytest.approx({Label.A: 0.8, Label.B: 0.15, Label.TIE: 0.05})
    assert v2.probabilities == pytest.approx({Label.B: 0.8, Label.A: 0.15, Label.TIE: 0.05})
    assert v1.rationale == "one answer names Paris"
    prompt = openai_server.chat_requests()[0].messages[-1]["content"]
    assert "Paris is the capital of France." in prompt and "(no reference answer given)" not in prompt


async def test_match_graph_judges_both_orders_flags_bias_and_reuses_the_store(
    openai_server: FakeOpenAIServer, tmp_path
) -> None:
    def respond(request: ChatRequest) -> dict | Reply:
        return paris_judge(request) if request.model == "paris" else first_shown_judge(request)

    openai_server.responder = respond
    sets = {"good": AnswerSet("good", {"q1": GOOD}), "bad": AnswerSet("bad", {"q1": BAD})}
    with RecordStore(tmp_path / "s.sqlite") as store:
        judges = [llm_judge(openai_server, m, StructuredMethod.FUNCTION_CALLING, store) for m in ("paris", "first")]
        context = MatchContext(judges=judges, store=store, answer_sets=sets, questions=[QUESTION], run_id="r")
        state = await build_match_graph().ainvoke({"system_a": "good", "system_b": "bad"}, context=context)
        assert openai_server.count(CHAT_PATH) == 4  # 2 judges x 2 orders
        [outcome] = state["outcomes"]
        paris, first = outcome.decisions
        assert (paris.label, paris.position_bias) == (Label.A, False)
        assert (first.label, first.position_bias) == (Label.TIE, True)
        # "first" has no logprobs: the jury falls back to votes (A, Tie) and the hard score is the argmax tie
        assert outcome.probabilities.source is ProbabilitySource.VOTES
        assert (outcome.probabilities.p_a, outcome.probabilities.p_tie) == (0.5, 0.5)
        assert outcome.score_a == 0.5 and state["result"].n_questions == 1
        assert len(store.checks_for("r")) == 2

        again = MatchContext(judges=judges, store=store, answer_sets=sets, questions=[QUESTION], run_id="r")
        state2 = await build_match_graph().ainvoke({"system_a": "good", "system_b": "bad"}, context=again)
        assert openai_server.count(CHAT_PATH) == 4 and (again.calls.asked, again.calls.reused) == (0, 4)
        assert state2["outcomes"] == state["outcomes"]
