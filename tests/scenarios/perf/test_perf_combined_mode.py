"""The combined check mode decides the same atomic checks, with the same labels, as the per-kind mode."""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from fakes.scripted_model import ScriptedChatModel, ScriptedRequest

from ragcourt.judging import LLMJudge, SampleJudge
from ragcourt.judging.combined_checks import COMBINABLE, context_segments, render_combined
from ragcourt.llm.client import LLMClient
from ragcourt.prompts.library import PromptId
from ragcourt.schema import NORMAL, Check, CheckKind, Label, UnscoredReason, VerdictStatus

_BLOCK = re.compile(r"(?:\[(\w+)\] (?:\([^)]*\) )?)?<<<([A-Z_]+)-([0-9a-f]+)>>>\n(.*?)\n<<<END-\2-\3>>>", re.DOTALL)
_RELATED = re.compile(r"\[(\w+)\] \(related claims: ([^)]*)\)")

CHUNKS = [("k1", "Paris lies on the Seine."), ("k2", "Berlin has many museums."), ("k3", "Rome and Paris are old.")]
TITLES = ["Paris", "Berlin", "Rome"]
CONTEXT = "\n\n".join(f"[{title}] {text}" for title, (_, text) in zip(TITLES, CHUNKS, strict=True))
ELEMENTS = [("e1", "Seine river"), ("e2", "museums exist"), ("e3", "Tokyo is big")]
SUBQUERIES = [("q1", "Paris location"), ("q2", "Berlin culture")]
CLAIMS = [("c1", "Paris is on the Seine."), ("c2", "Berlin museums are old."), ("c3", "Madrid is sunny.")]
ANSWER = "The Seine runs through Paris, which is old."


def keyword(text: str) -> str:
    """The rule the scripted judge applies: a subject holds for a target that contains its first word."""
    return text.split()[0].lower()


def holds(subject: str, target: str) -> bool:
    return keyword(subject) in target.lower()


def sample_checks() -> list[Check]:
    def check(kind: CheckKind, subject: tuple[str, str], target: tuple[str, str]) -> Check:
        return Check(kind=kind, sample_id="s1", condition=NORMAL, subject_id=subject[0], subject_text=subject[1],
                     target_id=target[0], target_text=target[1], question="Where is Paris?")

    claims_text = "\n".join(text for _, text in CLAIMS)
    checks = []
    for element in ELEMENTS:
        checks.append(check(CheckKind.ELEMENT_IN_CONTEXT, element, ("context:normal", CONTEXT)))
        checks.append(check(CheckKind.ELEMENT_IN_ANSWER, element, ("answer", ANSWER)))
    for sq in SUBQUERIES:
        checks += [check(CheckKind.SUBQUERY_IN_CHUNK, sq, chunk) for chunk in CHUNKS]
        checks.append(check(CheckKind.SUBQUERY_ANSWERED, sq, ("claims", claims_text)))
    for claim in CLAIMS:
        checks += [check(CheckKind.CLAIM_SUPPORTED, claim, chunk) for chunk in CHUNKS]
        checks += [check(CheckKind.CLAIM_SERVES_SUBQUERY, claim, sq) for sq in SUBQUERIES]
    return checks


def blocks(request: ScriptedRequest) -> list[tuple[str | None, str, str]]:
    """(shown id or None, label, text) of every marked block of the human prompt, in order."""
    prompt = str(request.messages[-1].content)
    return [(m.group(1), m.group(2), m.group(4)) for m in _BLOCK.finditer(prompt)]


def per_kind_binary(request: ScriptedRequest) -> dict[str, Any]:
    found = blocks(request)
    items = [(i, t) for i, label, t in found if label == "ITEM"]
    claims = {i: t for i, label, t in found if label == "CLAIM"}
    if claims:  # subquery_answered: each sub-query against the claims its note names (its R(q))
        related = dict(_RELATED.findall(str(request.messages[-1].content)))
        targets = {i: " ".join(claims[c.strip()] for c in related[i].split(",")) for i, _ in items}
    else:
        (target,) = [t for i, label, t in found if label not in ("ITEM", "QUESTION")]
        targets = {i: target for i, _ in items}
    return {"judgements": [{"item_id": i, "reasoning": "r", "verdict": "yes" if holds(t, targets[i]) else "no"}
                           for i, t in items]}


def per_kind_linked(request: ScriptedRequest) -> dict[str, Any]:
    found = blocks(request)
    items = [(i, t) for i, label, t in found if label == "ITEM"]
    targets = [(i, t) for i, label, t in found if label == "TARGET"]
    return {"judgements": [{"item_id": i, "reasoning": "r", "ids": [tid for tid, tt in targets if holds(t, tt)]}
                           for i, t in items]}


def combined(request: ScriptedRequest, skip: str | None = None) -> dict[str, Any]:
    found = blocks(request)
    of = defaultdict(list)
    for shown, label, text in found:
        of[label].append((shown, text))
    context = " ".join(t for _, t in of["CHUNK"] + of["CONTEXT"])
    answer = " ".join(t for _, t in of["ANSWER"])
    claims = " ".join(t for _, t in of["CLAIM"])
    reply = {
        "elements": [{"item_id": i, "reasoning": "r", "in_context": "yes" if holds(t, context) else "no",
                      "in_answer": "yes" if holds(t, answer) else "no"} for i, t in of["ELEMENT"]],
        "subqueries": [{"item_id": i, "reasoning": "r", "chunk_ids": [c for c, ct in of["CHUNK"] if holds(t, ct)],
                        "answered": "yes" if holds(t, claims) else "no"} for i, t in of["SUBQUERY"]],
        "claims": [{"item_id": i, "reasoning": "r",
                    "supporting_chunk_ids": [c for c, ct in of["CHUNK"] if holds(t, ct)],
                    "served_subquery_ids": [q for q, qt in of["SUBQUERY"] if holds(t, qt)]} for i, t in of["CLAIM"]],
    }
    for group in reply.values():
        group[:] = [entry for entry in group if entry["item_id"] != skip]
    return reply


def judge_for(model: ScriptedChatModel) -> LLMJudge:
    return LLMJudge(LLMClient(model, model_id="scripted:judge"), judge_id="scripted")


async def test_perf_combined_mode_gives_the_per_kind_verdicts_in_one_call() -> None:
    checks = sample_checks()
    per_kind_model = ScriptedChatModel(builders={"BinaryJudgements": per_kind_binary,
                                                 "LinkJudgements": per_kind_linked})
    by_kind: dict[CheckKind, list[Check]] = defaultdict(list)
    for check in checks:
        by_kind[check.kind].append(check)
    per_kind = [v for kind, group in by_kind.items() for v in await judge_for(per_kind_model).judge(kind, group)]

    combined_model = ScriptedChatModel(builders={"CombinedJudgements": combined})
    judge = judge_for(combined_model)
    assert isinstance(judge, SampleJudge)
    together = await judge.judge_sample(checks)

    assert per_kind_model.calls == 6 and combined_model.calls == 1
    assert {v.check_id: v.label for v in together} == {v.check_id: v.label for v in per_kind}
    assert len(together) == len(checks) == 3 * 2 + 2 * 4 + 3 * 5
    assert {v.prompt_id for v in together} == {str(PromptId.JUDGE_COMBINED)}
    labels = {(c.kind, c.subject_id, c.target_id): v.label for c, v in zip(checks, together, strict=True)}
    # Hand-checked against the keyword rule: "seine" is in chunk k1 and the answer, "tokyo" nowhere,
    # "berlin" in chunk k2 only, claim c3 ("madrid") supports nothing and serves nothing.
    assert labels[(CheckKind.ELEMENT_IN_CONTEXT, "e1", "context:normal")] is Label.YES
    assert labels[(CheckKind.ELEMENT_IN_ANSWER, "e2", "answer")] is Label.NO
    assert labels[(CheckKind.ELEMENT_IN_CONTEXT, "e3", "context:normal")] is Label.NO
    assert labels[(CheckKind.SUBQUERY_IN_CHUNK, "q2", "k2")] is Label.YES
    assert labels[(CheckKind.SUBQUERY_IN_CHUNK, "q2", "k1")] is Label.NO
    assert labels[(CheckKind.CLAIM_SUPPORTED, "c1", "k3")] is Label.YES
    assert labels[(CheckKind.CLAIM_SERVES_SUBQUERY, "c2", "q2")] is Label.YES
    assert labels[(CheckKind.CLAIM_SUPPORTED, "c3", "k1")] is Label.NO


async def test_perf_combined_mode_leaves_a_missing_item_unscored() -> None:
    checks = sample_checks()
    model = ScriptedChatModel(builders={"CombinedJudgements": lambda request: combined(request, skip="C2")})
    verdicts = await judge_for(model).judge_sample(checks)
    missing = {v.check_id for v in verdicts if v.status is VerdictStatus.UNSCORED}
    assert missing == {c.id for c in checks if c.subject_id == "c2"}  # 3 chunks + 2 sub-queries
    assert len(missing) == 5
    assert {v.unscored_reason for v in verdicts if v.check_id in missing} == {UnscoredReason.MISSING_ITEM}


def test_perf_combined_prompt_sends_each_piece_of_evidence_once() -> None:
    batch = render_combined(sample_checks())
    for _, text in CHUNKS:
        assert batch.prompt.count(text) == 1  # the context is shown as the chunks, not a second time
    assert batch.prompt.count(ANSWER) == 1
    assert batch.prompt.count("Retrieved context: the retrieved chunks above, taken together.") == 1
    assert batch.chunks == {"ctx_0": "k1", "ctx_1": "k2", "ctx_2": "k3"}
    assert batch.subqueries == {"Q1": "q1", "Q2": "q2"}
    assert "[Paris] Paris lies on the Seine." in batch.prompt  # the chunk's title travels with it


def test_perf_context_segments_only_when_the_context_is_exactly_the_chunks() -> None:
    texts = [t for _, t in CHUNKS]
    assert context_segments(CONTEXT, texts) == [f"[{title}] {text}" for title, text in zip(TITLES, texts, strict=True)]
    assert context_segments(CONTEXT, list(reversed(texts))) is None  # another order: not the same context
    assert context_segments(CONTEXT + "\n\nMore text.", texts) is None  # more than the chunks
    assert context_segments(CONTEXT, []) is None


def test_perf_every_alignment_kind_is_combinable_and_scores_are_not() -> None:
    assert {k for k in CheckKind if k.is_binary} == COMBINABLE
