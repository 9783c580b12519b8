"""Scored verdicts: a binary verdict carries P(yes) / P(no) where its judge gives one (a baseline's similarity
mapped through its rule; an LLM's decision-token logprobs), and none where it does not."""

from __future__ import annotations

import json
import math
import re

import pytest
from fakes.openai_server import ChatRequest, FakeOpenAIServer, Reply

from ragcourt.judging import BaselineJudge, BaselineRule, LLMJudge, render_combined
from ragcourt.judging.baseline import similarity_probabilities
from ragcourt.judging.decision_tokens import (
    ListStart,
    item_decision_tokens,
    item_list_starts,
    nonempty_list_probabilities,
    yes_no_probabilities,
)
from ragcourt.llm.factory import build_client
from ragcourt.llm.reply import TokenLogprob
from ragcourt.llm.spec import ModelSpec, StructuredMethod
from ragcourt.schema import NORMAL, Check, CheckKind, Label


def element_check(subject: str, target: str, kind: CheckKind = CheckKind.ELEMENT_IN_CONTEXT) -> Check:
    return Check(kind=kind, sample_id="s1", condition=NORMAL, subject_id=subject, subject_text=subject,
                 target_id="context:normal", target_text=target, question="What did Marie Curie achieve?")


# --------------------------------------------------------------------------- baseline judges


def test_the_similarity_maps_to_half_at_the_threshold_and_is_monotone() -> None:
    assert similarity_probabilities(0.0, 0.5)[Label.YES] == 0.0
    assert similarity_probabilities(0.25, 0.5)[Label.YES] == 0.25
    assert similarity_probabilities(0.5, 0.5)[Label.YES] == 0.5
    assert similarity_probabilities(0.75, 0.5)[Label.YES] == 0.75
    assert similarity_probabilities(1.0, 0.55)[Label.YES] == 1.0
    assert similarity_probabilities(-0.3, 0.55) == {Label.YES: 0.0, Label.NO: 1.0}  # a negative cosine
    # 0.55 threshold: 0.275 is half-way to it, so P(yes) = 0.25; probabilities add up to 1
    p = similarity_probabilities(0.275, 0.55)
    assert p[Label.YES] == pytest.approx(0.25) and p[Label.YES] + p[Label.NO] == pytest.approx(1.0)
    grid = [similarity_probabilities(s / 20, 0.34)[Label.YES] for s in range(21)]
    assert grid == sorted(grid)


async def test_a_lexical_verdict_carries_its_mapped_similarity_and_agrees_with_its_label() -> None:
    judge = BaselineJudge(BaselineRule.LEXICAL)
    # subject content words {marie, curie, won, two, nobel, prizes}; the target has curie, nobel, prizes: 3/6
    half = element_check("Marie Curie won two Nobel Prizes", "Curie received Nobel Prizes in physics")
    # subject {curie, discovered, radium}; the target has radium: 1/3 (threshold 0.5 -> P(yes) 1/3)
    third = element_check("Curie discovered radium", "Radium glows")
    yes, no = await judge.judge(CheckKind.ELEMENT_IN_CONTEXT, [half, third])
    assert yes.label is Label.YES and yes.probabilities == {Label.YES: 0.5, Label.NO: 0.5}
    assert no.label is Label.NO and no.probabilities == pytest.approx({Label.YES: 1 / 3, Label.NO: 2 / 3})


async def test_a_number_the_target_lacks_is_a_certain_no() -> None:
    judge = BaselineJudge(BaselineRule.LEXICAL)
    (verdict,) = await judge.judge(CheckKind.ELEMENT_IN_CONTEXT,
                                   [element_check("报销须在30天内提交", "报销须在60天内提交")])
    assert verdict.label is Label.NO and verdict.probabilities == {Label.YES: 0.0, Label.NO: 1.0}


async def test_the_semantic_judge_maps_its_cosine() -> None:
    def embed(texts: list[str]):  # the subject and the one sentence of the target, 60 degrees apart
        import numpy as np
        return np.array([[1.0, 0.0], [0.5, math.sqrt(3) / 2]][: len(texts)])

    (verdict,) = await BaselineJudge(BaselineRule.SEMANTIC, embed=embed).judge(
        CheckKind.CLAIM_SUPPORTED, [element_check("a claim", "a sentence.", CheckKind.CLAIM_SUPPORTED)])
    # cosine 0.5 under the strict threshold 0.55: P(yes) = 0.5 / 1.1
    assert verdict.label is Label.NO
    assert verdict.probabilities == pytest.approx({Label.YES: 0.5 / 1.1, Label.NO: 0.6 / 1.1})


# --------------------------------------------------------------------------- decision tokens


def tokens_of(reply: dict, decisions: dict[str, list[tuple[str, float]]]) -> list[TokenLogprob]:
    """The reply's JSON cut into tokens; each yes/no value named in `decisions` (by its order of appearance,
    "1", "2", ...) is one token with those top alternatives."""
    text = json.dumps(reply)
    out, pos = [], 0
    for n, match in enumerate(re.finditer(r'(?<=": ")(yes|no)(?=")', text), start=1):
        out.append(TokenLogprob(token=text[pos:match.start()], logprob=-0.01))
        top = decisions.get(str(n), [])
        out.append(TokenLogprob(token=match.group(1), logprob=dict(top).get(match.group(1), -0.01), top=top))
        pos = match.end()
    out.append(TokenLogprob(token=text[pos:], logprob=-0.01))
    return out


def test_decision_tokens_are_found_per_item_whatever_the_order_of_keys() -> None:
    reply = {"judgements": [
        {"item_id": "E1", "reasoning": 'says "yes": {not a key}', "verdict": "yes"},
        {"verdict": "no", "reasoning": "no evidence", "item_id": "[E2]"},
    ]}
    found = item_decision_tokens(tokens_of(reply, {}), ["verdict"])
    assert {name: token.token for name, token in found.items()} == {("E1", "verdict"): "yes", ("E2", "verdict"): "no"}


def test_an_item_named_twice_gets_no_decision_token() -> None:
    reply = {"judgements": [{"item_id": "E1", "verdict": "yes"}, {"item_id": "E1", "verdict": "no"}]}
    assert item_decision_tokens(tokens_of(reply, {}), ["verdict"]) == {}


def test_yes_no_probabilities_pool_variants_and_need_alternatives() -> None:
    top = [("yes", math.log(0.6)), (" Yes", math.log(0.1)), ("no", math.log(0.2)), ("maybe", math.log(0.1))]
    token = TokenLogprob(token="yes", logprob=math.log(0.6), top=top)
    assert yes_no_probabilities(token, Label.YES) == pytest.approx({Label.YES: 0.7 / 0.9, Label.NO: 0.2 / 0.9})
    assert yes_no_probabilities(token, Label.NO) is None  # the token does not state the parsed label
    assert yes_no_probabilities(TokenLogprob(token="yes", logprob=-0.1), Label.YES) is None  # no alternatives
    assert yes_no_probabilities(None, Label.YES) is None


# --------------------------------------------------------------------------- the LLM judge over HTTP


def llm_judge(server: FakeOpenAIServer, logprobs: bool) -> LLMJudge:
    spec = ModelSpec.parse(f"openai:judge@{server.base_url}", method=StructuredMethod.JSON_SCHEMA)
    return LLMJudge(build_client(spec, logprobs=logprobs, top_logprobs=3 if logprobs else None), "judge")


def item_ids(request: ChatRequest) -> list[str]:
    prompt = "".join(str(m.get("content")) for m in request.messages)
    return list(dict.fromkeys(re.findall(r"\[(E\d+)\]", prompt)))


def binary_reply(request: ChatRequest) -> Reply:
    first, second = item_ids(request)[:2]
    output = {"judgements": [{"item_id": first, "reasoning": "stated", "verdict": "yes"},
                             {"verdict": "no", "item_id": second, "reasoning": "not stated"}]}
    decisions = {"1": [("yes", math.log(0.8)), ("no", math.log(0.2))],
                 "2": [("no", math.log(0.9)), ("yes", math.log(0.1))]}
    return Reply(output=output, logprobs=[(t.token, t.logprob, t.top) for t in tokens_of(output, decisions)])


async def test_an_llm_verdict_carries_the_probabilities_of_its_decision_token(openai_server: FakeOpenAIServer) -> None:
    openai_server.builders["BinaryJudgements"] = binary_reply
    checks = [element_check("Curie won two Nobel Prizes", "ctx"), element_check("Curie was born in Warsaw", "ctx")]
    yes, no = await llm_judge(openai_server, logprobs=True).judge(CheckKind.ELEMENT_IN_CONTEXT, checks)
    assert (yes.label, no.label) == (Label.YES, Label.NO)
    assert yes.probabilities == pytest.approx({Label.YES: 0.8, Label.NO: 0.2})
    assert no.probabilities == pytest.approx({Label.YES: 0.1, Label.NO: 0.9})


async def test_without_logprobs_an_llm_verdict_has_no_probability(openai_server: FakeOpenAIServer) -> None:
    openai_server.builders["BinaryJudgements"] = binary_reply
    checks = [element_check("Curie won two Nobel Prizes", "ctx"), element_check("Curie was born in Warsaw", "ctx")]
    verdicts = await llm_judge(openai_server, logprobs=False).judge(CheckKind.ELEMENT_IN_CONTEXT, checks)
    assert [v.label for v in verdicts] == [Label.YES, Label.NO]
    assert [v.probabilities for v in verdicts] == [None, None]


async def test_a_combined_reply_gives_each_yes_no_field_its_probability(openai_server: FakeOpenAIServer) -> None:
    in_context = element_check("Curie won two Nobel Prizes", "ctx")
    in_answer = Check(kind=CheckKind.ELEMENT_IN_ANSWER, sample_id="s1", condition=NORMAL,
                      subject_id=in_context.subject_id, subject_text=in_context.subject_text, target_id="answer",
                      target_text="She won two Nobel Prizes.", question=in_context.question)
    shown = next(iter(render_combined([in_context, in_answer]).elements))

    def combined(request: ChatRequest) -> Reply:
        output = {"elements": [{"in_answer": "yes", "item_id": shown, "reasoning": "both", "in_context": "no"}],
                  "subqueries": [], "claims": []}
        decisions = {"1": [("yes", math.log(0.7)), ("no", math.log(0.3))],
                     "2": [("no", math.log(0.6)), ("yes", math.log(0.4))]}
        return Reply(output=output, logprobs=[(t.token, t.logprob, t.top) for t in tokens_of(output, decisions)])

    openai_server.builders["CombinedJudgements"] = combined
    by_kind = {v.check_id: v for v in await llm_judge(openai_server, logprobs=True).judge_sample([in_context, in_answer])}
    assert by_kind[in_answer.id].label is Label.YES
    assert by_kind[in_answer.id].probabilities == pytest.approx({Label.YES: 0.7, Label.NO: 0.3})
    assert by_kind[in_context.id].label is Label.NO
    assert by_kind[in_context.id].probabilities == pytest.approx({Label.YES: 0.4, Label.NO: 0.6})


# --------------------------------------------------------------------------- pairwise: two baselines, two opinions


async def test_the_semantic_baseline_prefers_by_embeddings_where_lexical_prefers_by_tokens() -> None:
    reference = "Marie Curie discovered polonium."
    vectors = {reference: [1.0, 0.0], "Curie found polonium.": [0.9, 0.1],  # close in meaning, fewer shared words
               "Marie Curie discovered the planet Neptune.": [0.1, 0.9]}

    def embed(texts: list[str]):
        import numpy as np
        return np.array([vectors[t] for t in texts])

    pair = Check(kind=CheckKind.PAIRWISE, sample_id="s1", condition=NORMAL, subject_id="a",
                 subject_text="Curie found polonium.", target_id="b",
                 target_text="Marie Curie discovered the planet Neptune.", question="What did Curie discover?",
                 reference=reference)
    (lexical,) = await BaselineJudge(BaselineRule.LEXICAL).judge(CheckKind.PAIRWISE, [pair])
    (semantic,) = await BaselineJudge(BaselineRule.SEMANTIC, embed=embed).judge(CheckKind.PAIRWISE, [pair])
    # tokens: A shares {curie, polonium} of the reference's {marie, curie, discovered, polonium} (F1 4/7), B shares
    # {marie, curie, discovered} and adds {planet, neptune} (F1 2/3): lexical prefers the wrong answer B, while
    # the embeddings put A next to the reference (cosine 0.99) and B far from it (0.11)
    assert (lexical.label, lexical.rationale) == (Label.B, "A 0.57 vs B 0.67")
    assert (semantic.label, semantic.rationale) == (Label.A, "A 0.99 vs B 0.11")


# --------------------------------------------------------------------------- linked kinds: the list's first token


def list_tokens(reply: dict, key: str, first: list[tuple[str, float]]) -> list[TokenLogprob]:
    """The reply's JSON cut so that the first token after `"<key>": [` is one token (an id with its quotes, or
    the closing bracket) with the top alternatives `first`."""
    text = json.dumps(reply)
    at = text.index(f'"{key}": [') + len(f'"{key}": [')
    chosen = re.match(r'"[^"]*"|\]', text[at:]).group(0)  # type: ignore[union-attr]
    return [TokenLogprob(token=text[:at], logprob=-0.01),
            TokenLogprob(token=chosen, logprob=dict(first).get(chosen, -0.01), top=first),
            TokenLogprob(token=text[at + len(chosen):], logprob=-0.01)]


def test_a_list_start_gives_p_non_empty_with_id_variants_pooled() -> None:
    reply = {"judgements": [{"item_id": "C1", "reasoning": 'lists "ids": [x]', "ids": ["ctx_0"]}]}
    top = [('"ctx_0"', math.log(0.7)), (' "', math.log(0.05)), ("]", math.log(0.2)), ("null", math.log(0.05))]
    starts = item_list_starts(list_tokens(reply, "ids", top), ["ids"])
    assert {name: start.token.token for name, start in starts.items()} == {("C1", "ids"): '"ctx_0"'}
    # ids ("ctx_0", ' "') 0.75 against "]" 0.2; "null" reads neither way
    assert nonempty_list_probabilities(starts[("C1", "ids")], Label.YES) == pytest.approx(
        {Label.YES: 0.75 / 0.95, Label.NO: 0.2 / 0.95})
    # an empty list chosen: the same softmax, read at its "]"
    empty = {"judgements": [{"item_id": "C1", "reasoning": "none", "ids": []}]}
    start = item_list_starts(list_tokens(empty, "ids", [("]", math.log(0.6)), ('"ctx_0"', math.log(0.3))]), ["ids"])
    assert nonempty_list_probabilities(start[("C1", "ids")], Label.NO) == pytest.approx(
        {Label.YES: 1 / 3, Label.NO: 2 / 3})


def test_a_bracket_joined_to_the_next_token_is_read_after_the_bracket() -> None:
    text = json.dumps({"claims": [{"item_id": "C1", "supporting_chunk_ids": ["ctx_0"]}]})
    cut = text.index(' ["')
    tokens = [TokenLogprob(token=text[:cut], logprob=-0.01),
              TokenLogprob(token=' ["', logprob=math.log(0.6),
                           top=[(' ["', math.log(0.6)), (" []", math.log(0.3)), (" null", math.log(0.1))]),
              TokenLogprob(token=text[cut + 3:], logprob=-0.01)]
    (start,) = item_list_starts(tokens, ["supporting_chunk_ids"]).values()
    assert start.before == " ["
    # " null" does not continue ' [' (another value): only the list's two readings count, 0.6 vs 0.3
    assert nonempty_list_probabilities(start, Label.YES) == pytest.approx({Label.YES: 2 / 3, Label.NO: 1 / 3})


def test_a_non_empty_list_that_misses_the_target_gets_no_probability() -> None:
    reply = {"judgements": [{"item_id": "C1", "reasoning": "r", "ids": ["ctx_7"]}]}
    tokens = list_tokens(reply, "ids", [('"ctx_7"', math.log(0.9)), ("]", math.log(0.1))])
    (start,) = item_list_starts(tokens, ["ids"]).values()
    assert nonempty_list_probabilities(start, Label.NO) is None  # the list is not empty, yet the label is no
    assert nonempty_list_probabilities(start, Label.YES) == pytest.approx({Label.YES: 0.9, Label.NO: 0.1})
    bare = TokenLogprob(token='"ctx_7"', logprob=-0.1)  # no alternatives: the chosen token alone would read 1
    assert nonempty_list_probabilities(ListStart(bare, ""), Label.YES) is None


def claim_check(target: str) -> Check:
    return Check(kind=CheckKind.CLAIM_SUPPORTED, sample_id="s1", condition=NORMAL, subject_id="c1",
                 subject_text="Curie won two Nobel Prizes", target_id=target, target_text=f"evidence {target}",
                 question="What did Curie win?")


def link_reply(request: ChatRequest) -> Reply:
    output = {"judgements": [{"item_id": "C1", "reasoning": "stated", "ids": ["ctx_0"]}]}
    top = [('"ctx_0"', math.log(0.8)), ("]", math.log(0.2))]
    return Reply(output=output, logprobs=[(t.token, t.logprob, t.top) for t in list_tokens(output, "ids", top)])


async def test_a_linked_verdict_with_one_target_carries_p_non_empty_over_http(openai_server: FakeOpenAIServer) -> None:
    openai_server.builders["LinkJudgements"] = link_reply
    (verdict,) = await llm_judge(openai_server, logprobs=True).judge(CheckKind.CLAIM_SUPPORTED, [claim_check("k1")])
    assert verdict.label is Label.YES
    assert verdict.probabilities == pytest.approx({Label.YES: 0.8, Label.NO: 0.2})
    # two targets offered: P(ctx_1 in the list) is not one token's choice, so neither check gets a probability
    both = await llm_judge(openai_server, logprobs=True).judge(CheckKind.CLAIM_SUPPORTED,
                                                               [claim_check("k1"), claim_check("k2")])
    assert [v.label for v in both] == [Label.YES, Label.NO]
    assert [v.probabilities for v in both] == [None, None]


async def test_a_combined_linked_field_with_one_chunk_carries_p_non_empty(openai_server: FakeOpenAIServer) -> None:
    def combined(request: ChatRequest) -> Reply:
        output = {"elements": [], "subqueries": [],
                  "claims": [{"item_id": "C1", "reasoning": "r", "supporting_chunk_ids": [], "in_reference": "yes"}]}
        top = [("]", math.log(0.7)), ('"ctx_0"', math.log(0.3))]
        return Reply(output=output, logprobs=[(t.token, t.logprob, t.top)
                                              for t in list_tokens(output, "supporting_chunk_ids", top)])

    openai_server.builders["CombinedReferenceJudgements"] = combined
    supported = claim_check("k1")
    in_reference = Check(kind=CheckKind.CLAIM_IN_REFERENCE, sample_id="s1", condition=NORMAL, subject_id="c1",
                         subject_text=supported.subject_text, target_id="reference",
                         target_text="Curie won two Nobel Prizes", question=supported.question)
    verdicts = {v.check_id: v for v in await llm_judge(openai_server, logprobs=True).judge_sample([supported,
                                                                                                 in_reference])}
    assert verdicts[supported.id].label is Label.NO
    assert verdicts[supported.id].probabilities == pytest.approx({Label.YES: 0.3, Label.NO: 0.7})
    assert verdicts[in_reference.id].probabilities is None  # its "yes" token carries no alternatives here
