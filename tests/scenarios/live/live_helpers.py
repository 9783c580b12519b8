"""Test doubles shared by tests/scenarios/live: the example app on a FakeOpenAIServer, and an agreeable judge."""

from __future__ import annotations

import re
import sys
from typing import Any

from fakes.openai_server import ChatRequest
from fixtures import REPO

EXAMPLE_DIR = REPO / "examples" / "langchain_app"
if str(EXAMPLE_DIR) not in sys.path:
    sys.path.insert(0, str(EXAMPLE_DIR))

import app as example_app

from ragcourt.stores.embeddings import HashingEmbedding

SHOWN_ID = re.compile(r"^\[(\w+)\]", re.MULTILINE)


def request_text(request: ChatRequest) -> str:
    parts = []
    for message in request.messages:
        content = message.get("content")
        parts.append(content if isinstance(content, str) else "".join(p.get("text", "") for p in content or []))
    return "\n".join(parts)


def first_context_sentence(request: ChatRequest) -> str:
    """The app model's answer: the first sentence of the context it was shown (or 'I don't know.')."""
    text = request_text(request)
    context = text.split("Context:\n", 1)[1].split("\n\nQuestion:", 1)[0] if "Context:\n" in text else ""
    first = context.strip().split(". ")[0].strip()
    return (first.rstrip(".") + ".") if first else "I don't know."


def judge_builders(binary_label: str = "yes") -> dict[str, Any]:
    """A judge that links every item to every target, and answers `binary_label` to every yes/no item."""

    def shown_ids(request: ChatRequest) -> list[str]:
        return list(dict.fromkeys(SHOWN_ID.findall(request_text(request))))

    def binary(request: ChatRequest) -> dict[str, Any]:
        return {"judgements": [{"item_id": i, "reasoning": "scripted", "verdict": binary_label}
                               for i in shown_ids(request)]}

    def links(request: ChatRequest) -> dict[str, Any]:
        ids = shown_ids(request)
        chunks = [i for i in ids if i.startswith("ctx_")]
        if chunks:
            items, targets = [i for i in ids if not i.startswith("ctx_")], chunks
        else:
            items, targets = [i for i in ids if i.startswith("C")], [i for i in ids if i.startswith("Q")]
        return {"judgements": [{"item_id": i, "reasoning": "scripted", "ids": targets} for i in items]}

    return {"BinaryJudgements": binary, "LinkJudgements": links}


def example_store() -> Any:
    """The example's Chroma store with feature-hashing embeddings (fast, offline), in memory."""
    return example_app.build_vectorstore(example_app.RagcourtEmbeddings(HashingEmbedding()))
