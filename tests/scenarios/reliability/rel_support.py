"""Shared by the reliability tests: reading prompts the FakeOpenAIServer received, a fake server's
builders that answer from what the prompt shows, and a system that retrieves by script but answers
through the real LLM path.

Builders answer by output schema name (never by prompt wording) and derive their output from the
untrusted blocks of the request, so every sample gets its own outputs and its own prompts:
  QueryDecomposition: the QUESTION split at each "?"; ElementList: the REFERENCE's sentences;
  GroundedAnswer: "<first chunk's text> It is tall." using ctx_0; ClaimList: the ANSWER's sentences;
  BinaryJudgements: "yes" to every shown item; LinkJudgements: every item linked to the first target.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from fakes.openai_server import ChatRequest

from ragcourt.prompts.library import parse_untrusted
from ragcourt.schema import Chunk, Condition, Sample
from ragcourt.systems import Generation, Generator

START_MARKER = re.compile(r"<<<([A-Z][A-Z0-9_]*)-([0-9a-f]+)>>>\n")
# an id, then its note if any ("[Q1] (related claims: A1, A2)"), then its block (removed before matching)
SHOWN_ID = re.compile(r"^\[([A-Za-z_]+\d+)\](?: \([^)\n]*\))? *$", re.MULTILINE)


@dataclass(frozen=True)
class Block:
    label: str
    text: str
    start: int  # offset of the start marker in the prompt
    end: int  # offset just after the end marker


def blocks(prompt: str) -> list[Block]:
    """The untrusted blocks of a prompt, outermost only, in order: a fake marker inside a block's text is
    part of that text, never a block of its own (parse_untrusted skips to the block's real end marker)."""
    found, position = [], 0
    while (match := START_MARKER.search(prompt, position)) is not None:
        label, text = parse_untrusted(prompt[match.start():])
        end = match.end() + len(text) + len(f"\n<<<END-{label}-{match.group(2)}>>>")
        found.append(Block(label, text, match.start(), end))
        position = end
    return found


def outside_blocks(prompt: str) -> str:
    """The prompt with every untrusted block cut out: what the model is told to read as instructions."""
    kept, position = [], 0
    for block in blocks(prompt):
        kept.append(prompt[position:block.start])
        position = block.end
    kept.append(prompt[position:])
    return "".join(kept)


def user_text(request: ChatRequest) -> str:
    return "\n".join(str(m.get("content") or "") for m in request.messages if m.get("role") == "user")


def first_prompt(request: ChatRequest) -> str:
    """The first user message: the rendered prompt (a repair request adds a second one)."""
    return next(str(m.get("content") or "") for m in request.messages if m.get("role") == "user")


def texts(request: ChatRequest, label: str) -> list[str]:
    return [b.text for b in blocks(first_prompt(request)) if b.label == label]


def shown_ids(request: ChatRequest) -> list[str]:
    """Ids the prompt shows items and targets with ("[E1] <<<ITEM-..."), read outside the untrusted blocks
    only: an id written inside a block is data, and the template's own examples sit mid-line."""
    return list(dict.fromkeys(SHOWN_ID.findall(outside_blocks(first_prompt(request)))))


def sentences_of(text: str) -> list[str]:
    return [s.strip() + "." for s in text.split(".") if s.strip()]


def item_and_target_ids(request: ChatRequest) -> tuple[list[str], list[str]]:
    shown = shown_ids(request)
    if any(s.startswith("ctx_") for s in shown):
        return [s for s in shown if not s.startswith("ctx_")], [s for s in shown if s.startswith("ctx_")]
    if any(s.startswith("C") for s in shown):  # claim -> sub-query links
        return [s for s in shown if s.startswith("C")], [s for s in shown if s.startswith("Q")]
    return shown, []  # a yes/no batch: every shown id is an item


def binary(request: ChatRequest) -> dict:
    items, _ = item_and_target_ids(request)
    return {"judgements": [{"item_id": i, "reasoning": "stated", "verdict": "yes"} for i in items]}


def links(request: ChatRequest) -> dict:
    items, targets = item_and_target_ids(request)
    return {"judgements": [{"item_id": i, "reasoning": "first one", "ids": targets[:1]} for i in items]}


def grounded_answer(request: ChatRequest) -> dict:
    chunks = texts(request, "CHUNK")
    return {"answer": f"{chunks[0]} It is tall." if chunks else "I do not know.",
            "used_ids": ["ctx_0"] if chunks else [], "confidence": 0.8}


BUILDERS = {
    "QueryDecomposition": lambda r: {"query_type": "multi_aspect",
                                     "sub_queries": [q.strip() + "?" for q in texts(r, "QUESTION")[0].split("?")
                                                     if q.strip()]},
    "ElementList": lambda r: {"elements": sentences_of(texts(r, "REFERENCE")[0])},
    "GroundedAnswer": grounded_answer,
    "ClaimList": lambda r: {"claims": sentences_of(texts(r, "ANSWER")[0])},
    "BinaryJudgements": binary,
    "LinkJudgements": links,
}


@dataclass
class ScriptedRetrievalLLMAnswer:
    """Retrieval from a script (no index to build), answers from a Generator (the real LLM path)."""

    ranked: dict[str, Sequence[Chunk]]
    generator: Generator
    name: str = "scripted-retrieval-llm"
    calls: list[str] = field(default_factory=list)

    async def retrieve(self, sample: Sample, k: int, score_threshold: float | None) -> list[Chunk]:
        top = list(self.ranked[sample.id])[:k]
        return [c for c in top if score_threshold is None or (c.score or 0.0) >= score_threshold]

    async def generate(self, sample: Sample, chunks: Sequence[Chunk], condition: Condition) -> Generation:
        self.calls.append(sample.id)
        return await self.generator.generate(sample.question, chunks)
