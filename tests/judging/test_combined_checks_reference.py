"""The combined call with the reference-side checks (method reference), replies cut to fit, and the follow-up
round for what a reply leaves out (batching joint)."""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from fakes.scripted_model import ScriptedChatModel, ScriptedRequest

from ragcourt.judging import LLMJudge
from ragcourt.judging.combined_checks import (
    ANSWERED_FROM_LINKS,
    CombinedJudgements,
    CombinedReferenceJudgements,
    render_combined,
    split_for_reply,
)
from ragcourt.judging.llm_judge import claims_target_text
from ragcourt.llm.client import LLMClient
from ragcourt.prompts.library import PromptId
from ragcourt.schema import NORMAL, Check, CheckKind, Label, UnscoredReason, VerdictStatus, WholeTarget

_BLOCK = re.compile(r"(?:\[(\w+)\] (?:\([^)]*\) )?)?<<<([A-Z_]+)-([0-9a-f]+)>>>\n(.*?)\n<<<END-\2-\3>>>", re.DOTALL)

CHUNKS = [("k1", "Paris lies on the Seine."), ("k2", "Berlin has many museums.")]
ELEMENTS = [("e1", "Paris is on the Seine"), ("e2", "Berlin has museums")]
CLAIMS = [("c1", "Paris is by a river."), ("c2", "Madrid is sunny.")]
REFERENCE_TEXT = claims_target_text(text for _, text in ELEMENTS)
# What the scripted judge holds: chunk k1 states e1, k2 states e2; the reference supports c1, not c2.
STATES = {("e1", "k1"), ("e2", "k2")}
SUPPORTED_BY_REFERENCE = {"c1"}


def check(kind: CheckKind, subject: tuple[str, str], target: tuple[str, str]) -> Check:
    return Check(kind=kind, sample_id="s1", condition=NORMAL, subject_id=subject[0], subject_text=subject[1],
                 target_id=target[0], target_text=target[1], question="Where is Paris?")


def reference_checks() -> list[Check]:
    checks = [check(CheckKind.ELEMENT_IN_CHUNK, element, chunk) for element in ELEMENTS for chunk in CHUNKS]
    checks += [check(CheckKind.CLAIM_IN_REFERENCE, claim, (WholeTarget.REFERENCE, REFERENCE_TEXT)) for claim in CLAIMS]
    return checks


def shown(request: ScriptedRequest) -> dict[str, list[tuple[str, str]]]:
    of: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for match in _BLOCK.finditer(str(request.messages[-1].content)):
        of[match.group(2)].append((match.group(1), match.group(4)))
    return of


def our(text: str, pairs: list[tuple[str, str]]) -> str:
    return next(i for i, t in pairs if t == text)


def reply(request: ScriptedRequest, skip: set[str] = frozenset()) -> dict[str, Any]:  # type: ignore[assignment]
    of = shown(request)
    chunk_of = {sid: our(text, CHUNKS) for sid, text in of["CHUNK"]}
    elements = [{"item_id": sid, "reasoning": "r",
                 "chunk_ids": [c for c, k in chunk_of.items() if (our(text, ELEMENTS), k) in STATES]}
                for sid, text in of["ELEMENT"] if our(text, ELEMENTS) not in skip]
    claims = [{"item_id": sid, "reasoning": "r",
               "in_reference": "yes" if our(text, CLAIMS) in SUPPORTED_BY_REFERENCE else "no"}
              for sid, text in of["CLAIM"] if our(text, CLAIMS) not in skip]
    return {"elements": elements, "subqueries": [], "claims": claims}


def judge_for(model: ScriptedChatModel) -> LLMJudge:
    return LLMJudge(LLMClient(model, model_id="scripted:judge"), judge_id="scripted")


def test_reference_kinds_get_their_own_reply_model_and_the_reference_is_sent_as_the_elements() -> None:
    batch = render_combined(reference_checks())
    assert batch.schema is CombinedReferenceJudgements
    assert "Reference answer: its elements, listed below, taken together." in batch.prompt
    assert batch.prompt.count("Paris is on the Seine") == 1  # the reference is not sent a second time
    assert batch.elements == {"E1": "e1", "E2": "e2"} and batch.claims == {"C1": "c1", "C2": "c2"}
    # a batch without those kinds sends the request it sent before they existed
    plain = render_combined([c for c in reference_checks() if c.kind is CheckKind.ELEMENT_IN_CHUNK][:0] + [
        check(CheckKind.ELEMENT_IN_ANSWER, ELEMENTS[0], ("answer", "Paris."))])
    assert plain.schema is CombinedJudgements and "Reference answer" not in plain.prompt


def test_a_reference_that_is_not_the_listed_elements_is_shown_on_its_own() -> None:
    checks = [check(CheckKind.CLAIM_IN_REFERENCE, CLAIMS[0], (WholeTarget.REFERENCE, REFERENCE_TEXT)),
              check(CheckKind.ELEMENT_IN_CHUNK, ELEMENTS[0], CHUNKS[0])]  # one element listed of two
    batch = render_combined(checks)
    assert "Reference answer (its elements):" in batch.prompt and "<<<REFERENCE-" in batch.prompt


async def test_the_reference_checks_are_decided_in_one_call_by_the_hand_checked_table() -> None:
    model = ScriptedChatModel(builders={"CombinedReferenceJudgements": reply})
    checks = reference_checks()
    verdicts = await judge_for(model).judge_sample(checks)
    assert model.calls == 1 and len(verdicts) == len(checks) == 2 * 2 + 2
    labels = {(c.kind, c.subject_id, c.target_id): v.label for c, v in zip(checks, verdicts, strict=True)}
    assert labels == {
        (CheckKind.ELEMENT_IN_CHUNK, "e1", "k1"): Label.YES, (CheckKind.ELEMENT_IN_CHUNK, "e1", "k2"): Label.NO,
        (CheckKind.ELEMENT_IN_CHUNK, "e2", "k1"): Label.NO, (CheckKind.ELEMENT_IN_CHUNK, "e2", "k2"): Label.YES,
        (CheckKind.CLAIM_IN_REFERENCE, "c1", "reference"): Label.YES,
        (CheckKind.CLAIM_IN_REFERENCE, "c2", "reference"): Label.NO,
    }
    assert {v.prompt_id for v in verdicts} == {str(PromptId.JUDGE_COMBINED_REFERENCE)}


async def test_items_a_reply_leaves_out_are_asked_again_once_and_no_verdict_is_lost() -> None:
    first = {"done": False}

    def dropping(request: ScriptedRequest) -> dict[str, Any]:
        if not first["done"]:  # the long reply loses element e2 and claim c1
            first["done"] = True
            return reply(request, skip={"e2", "c1"})
        return reply(request)

    model = ScriptedChatModel(builders={"CombinedReferenceJudgements": dropping})
    checks = reference_checks()
    verdicts = await judge_for(model).judge_sample(checks, follow_up=True)
    assert model.calls == 2
    again = shown(model.requests[1])  # the follow-up lists just what was left out
    assert [t for _, t in again["ELEMENT"]] == ["Berlin has museums"] and [t for _, t in again["CLAIM"]] == [
        "Paris is by a river."]
    assert all(v.status is VerdictStatus.OK for v in verdicts)
    assert [v.check_id for v in verdicts] == [c.id for c in checks]
    by_id = {v.check_id: v for v in verdicts}
    assert by_id[checks[3].id].label is Label.YES  # e2 in k2, decided by the follow-up
    # counted: one follow-up call, three checks asked again (e2 x 2 chunks, c1); the tokens of both calls add up
    assert sum(v.usage.follow_up_calls for v in verdicts) == 1
    assert sum(v.usage.follow_up_checks for v in verdicts) == 3
    sent = sum(sum(len(str(m.content)) for m in r.messages) // 4 for r in model.requests)
    assert sum(v.usage.prompt_tokens for v in verdicts) == sent


async def test_what_the_follow_up_also_leaves_out_is_unscored_not_asked_a_third_time() -> None:
    model = ScriptedChatModel(builders={"CombinedReferenceJudgements": lambda r: reply(r, skip={"c2"})})
    checks = reference_checks()
    verdicts = await judge_for(model).judge_sample(checks, follow_up=True)
    assert model.calls == 2
    (lost,) = [v for v in verdicts if v.status is VerdictStatus.UNSCORED]
    assert lost.check_id == checks[-1].id and lost.unscored_reason is UnscoredReason.MISSING_ITEM
    assert "also when asked again in a follow-up call" in (lost.detail or "")


def test_a_long_batch_is_cut_into_as_few_calls_as_fit_the_reply_limit() -> None:
    elements = [(f"e{i}", f"element {i}") for i in range(5)]
    claims = [(f"c{i}", f"claim {i}") for i in range(2)]
    checks = [check(CheckKind.ELEMENT_IN_CHUNK, e, chunk) for e in elements for chunk in CHUNKS]
    checks += [check(CheckKind.CLAIM_IN_REFERENCE, c, (WholeTarget.REFERENCE, "x")) for c in claims]
    parts = split_for_reply(checks, limit=3)  # 7 items: ceil(7 / 3) = 3 calls of 3, 2 and 2 items
    items = [sorted({c.subject_id for c in part}) for part in parts]
    assert items == [["e0", "e1", "e2"], ["e3", "e4"], ["c0", "c1"]]
    assert sorted(c.id for part in parts for c in part) == sorted(c.id for c in checks)
    assert split_for_reply(checks, limit=7) == [checks]
    assert split_for_reply(list(reversed(checks)), limit=3)[0][0].subject_id == "e4"  # its items, in given order


async def test_a_joint_reply_decides_each_subquery_on_its_own_serve_links() -> None:
    """Sufficiency on R(q) (seed 002 3.4.2) from the same reply: the check the planner makes once the serve
    checks are reconciled (same id), so its round finds the verdict stored."""
    subqueries = [("q1", "Where is Paris?"), ("q2", "Is Madrid sunny?")]
    checks = [check(CheckKind.CLAIM_SERVES_SUBQUERY, claim, sq) for claim in CLAIMS for sq in subqueries]
    checks.append(check(CheckKind.CLAIM_SUPPORTED, CLAIMS[0], CHUNKS[0]))

    def combined(request: ScriptedRequest) -> dict[str, Any]:
        assert ANSWERED_FROM_LINKS in str(request.messages[-1].content)
        of = shown(request)
        q_of = {sid: our(text, subqueries) for sid, text in of["SUBQUERY"]}
        serves = {"c1": "q1", "c2": "q2"}
        return {"elements": [], "subqueries": [{"item_id": s, "reasoning": f"{q} covered", "answered":
                                                "yes" if q == "q1" else "no"} for s, q in q_of.items()],
                "claims": [{"item_id": sid, "reasoning": "r", "supporting_chunk_ids": [],
                            "served_subquery_ids": [s for s, q in q_of.items() if serves[our(text, CLAIMS)] == q]}
                           for sid, text in of["CLAIM"]]}

    model = ScriptedChatModel(builders={"CombinedJudgements": combined})
    verdicts = await judge_for(model).judge_sample(checks, sufficiency_from_links=True)
    assert model.calls == 1
    assert [v.check_id for v in verdicts[:len(checks)]] == [c.id for c in checks]
    later = {v.check_id: v.label for v in verdicts[len(checks):]}
    planned = [check(CheckKind.SUBQUERY_ANSWERED, sq, (WholeTarget.CLAIMS, claims_target_text([claim[1]])))
               for sq, claim in zip(subqueries, CLAIMS, strict=True)]
    assert later == {planned[0].id: Label.YES, planned[1].id: Label.NO}
    assert all(v.usage.prompt_tokens == 0 for v in verdicts[len(checks):])  # the call's tokens are counted once
