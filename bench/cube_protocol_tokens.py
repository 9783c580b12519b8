"""Tokens of CuBE's two dimension-score protocols: `reasoned` (ragcourt's default: a justification through the
rubric's five criteria, then the score) and `score_only` (seed 000 4.3: "Only output the final score").

Run: python bench/cube_protocol_tokens.py [--questions 100] [--local 0]

For each bundled HotpotQA question and each of seed 000's four dimensions, the dimension-score check
ragcourt's check planner makes for the RAG answer (source = the gold paragraphs, answer = the reference
answer span, rubric = the bundled rubric) is sent through `LLMJudge` once per protocol:

1. to a scripted chat model in this process (no network): it replies by output schema, the reasoned reply
   going through the five criteria of the prompt's rubric as the prompt asks ("1. <first words of the
   criterion>: 2/2 points; ..."), the score-only reply `{"score": 8}`. Tokens are counted as sim_server.py
   counts them: characters // 4, prompt tokens over the messages and the tool definition, completion
   tokens over the tool-call arguments. A real model's justification may be longer or shorter: the scripted
   one is the shortest that does what the prompt asks.
2. with `--local N`, also to the bundled local model (SmolLM2-135M-Instruct, llama.cpp in this process) for
   the first N questions and the relevance dimension: its own tokenizer's counts of a real reply (its
   grammar caps a string at 300 characters).

Prints per protocol the mean prompt and completion tokens per call and the totals; the figures go to the
README's CuBE section.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool

from ragcourt.data.loaders import BundledDataset, bundled, load_hotpotqa
from ragcourt.judging import LLMJudge
from ragcourt.llm.client import LLMClient
from ragcourt.llm.factory import build_client
from ragcourt.llm.spec import ModelSpec
from ragcourt.nodes.check_planner import RUBRICS, render_context
from ragcourt.prompts.library import load_prompt
from ragcourt.schema import NORMAL, Check, CheckKind, Sample, Verdict
from ragcourt.schema.config import DimensionProtocol

CHARS_PER_TOKEN = 4  # as bench/sim_server.py and the test fakes count
_CRITERION = re.compile(r"^(\d)\. (.+)$", re.MULTILINE)


class RubricReplies(BaseChatModel):
    """Replies by output schema: the reasoned one goes through the rubric's five criteria, two points each."""

    @property
    def _llm_type(self) -> str:
        return "scripted-rubric"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        tool = kwargs["tools"][0]
        prompt = str(messages[-1].content)
        if "reasoning" in tool["function"]["parameters"]["properties"]:
            criteria = [f"{n}. {' '.join(text.split()[:6])}: 2/2 points" for n, text in _CRITERION.findall(prompt)]
            args: dict[str, Any] = {"reasoning": "; ".join(criteria) + ". Total 10.", "score": 10}
        else:
            args = {"score": 10}
        sent = sum(len(str(m.content)) for m in messages) + len(json.dumps(tool))
        text = json.dumps(args)
        message = AIMessage(content="", tool_calls=[{"name": tool["function"]["name"], "args": args, "id": "c1"}])
        message.usage_metadata = {"input_tokens": sent // CHARS_PER_TOKEN,
                                  "output_tokens": len(text) // CHARS_PER_TOKEN,
                                  "total_tokens": (sent + len(text)) // CHARS_PER_TOKEN}
        return ChatResult(generations=[ChatGeneration(message=message)])


def dimension_checks(sample: Sample, dimensions: Sequence[str]) -> list[Check]:
    """The RAG answer's dimension-score checks as nodes/check_planner.py makes them (the reference span as the
    answer under judgement)."""
    source = render_context(sample.gold_documents) or sample.reference_answer
    return [Check(kind=CheckKind.DIMENSION_SCORE, sample_id=sample.id, condition=NORMAL, subject_id="answer",
                  subject_text=sample.reference_answer or "", target_id=f"rubric:{d}",
                  target_text=load_prompt(RUBRICS[d]).template, question=sample.question, dimension=d,
                  reference=source) for d in dimensions]


async def tokens_of(client: LLMClient, checks: Sequence[Check]) -> dict[DimensionProtocol, list[Verdict]]:
    out: dict[DimensionProtocol, list[Verdict]] = {}
    for protocol in DimensionProtocol:
        judge = LLMJudge(client, f"bench+{protocol}", dimension_protocol=protocol)
        out[protocol] = [v for c in checks for v in await judge.judge(CheckKind.DIMENSION_SCORE, [c])]
    return out


def report(title: str, verdicts: dict[DimensionProtocol, list[Verdict]]) -> None:
    print(title)
    totals = {}
    for protocol, found in verdicts.items():
        prompt = [v.usage.prompt_tokens for v in found]
        completion = [v.usage.completion_tokens for v in found]
        totals[protocol] = sum(prompt) + sum(completion)
        unscored = sum(not v.scored for v in found)
        print(f"  {protocol:<10} calls {len(found)}, unscored {unscored}: prompt {statistics.mean(prompt):.1f} "
              f"tokens per call, completion {statistics.mean(completion):.1f} (min {min(completion)}, max "
              f"{max(completion)}); total {totals[protocol]}")
    reasoned, score_only = totals[DimensionProtocol.REASONED], totals[DimensionProtocol.SCORE_ONLY]
    print(f"  score_only / reasoned tokens: {score_only / reasoned:.3f} ({reasoned - score_only} fewer)")


async def main(questions: int, local: int) -> None:
    samples = load_hotpotqa(bundled(BundledDataset.HOTPOTQA_DEV_100)).samples[:questions]
    checks = [c for s in samples for c in dimension_checks(s, tuple(RUBRICS))]
    scripted = LLMClient(RubricReplies(), model_id="scripted:rubric")
    report(f"scripted model, {len(samples)} questions x {len(RUBRICS)} dimensions (characters // 4):",
           await tokens_of(scripted, checks))
    if local:
        real = build_client(ModelSpec.parse("local"), role="bench")
        first = [c for s in samples[:local] for c in dimension_checks(s, ("relevance",))]
        report(f"bundled local model (SmolLM2-135M), {len(first)} questions x relevance (its tokenizer):",
               await tokens_of(real, first))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--local", type=int, default=0, help="also the bundled local model on the first N")
    args = parser.parse_args()
    asyncio.run(main(args.questions, args.local))
