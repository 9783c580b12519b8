"""A simulated OpenAI-compatible LLM server on 127.0.0.1 for cost and speed benchmarks.

    python bench/sim_server.py --latency-ms 200 [--jitter-ms 50 --distribution lognormal]
                               [--tokens-per-s 0] [--port 0]
                               [--faults 0.25 --fault-seed 7 --fault-mix 500,429,timeout,reset,garbage,truncated]
prints its base URL (http://127.0.0.1:PORT/v1) on the first line and serves until stdin closes or it is
killed. It answers every chat request at once (asyncio: 32+ requests in flight are served concurrently)
after the drawn latency plus completion_tokens / tokens-per-s, with:

- a tool call carrying a valid instance of the tool's JSON schema (function calling), or JSON content
  valid for `response_format` json_schema, or for a JSON schema written into the prompt (JSON mode and
  prompt-only formats such as RAGAS's); RAGChecker's triplet and label lists; plain text otherwise;
- item ids taken from the prompt where the schema asks for them: a field `item_id` whose description
  names an example id (e.g. "E1") gets one entry per id of that prefix listed at a line start in the
  prompt ("[E1] ..."), and id lists (e.g. "ctx_0", "Q1") get one or two such ids, so verdicts map back.

Logprob mode (`--logprobs`, for judges that read decision-token probabilities): a request that asks for
logprobs and gets JSON content (json_schema or JSON mode; tool-call arguments carry none, as with OpenAI) has
every decision value (`verdict`, `in_context`, `in_answer`, `answered`: yes / no; `decision`: A / B / Tie)
drawn from probabilities seeded by the prompt and the value's position, the most probable one chosen, and the
content's tokens returned with those probabilities as the decision token's top alternatives; a non-empty list
of linked ids (`ids`, `supporting_chunk_ids`, `chunk_ids`, `served_subquery_ids`) is kept or emptied the same way,
its first token (the first id, or `]`) carrying both as alternatives. Deterministic:
the same prompt gets the same decisions and probabilities. It proves the plumbing of scored verdicts, not a
judge's quality: the draws ignore what the prompt says.

Fault mode (`--faults RATE`, for the reliability tests and bench/fault_rerun.py): that share of chat requests
gets a fault drawn from `--fault-mix`: `500`; `429` with Retry-After (`--fault-retry-after-s`); `timeout` (held
`--fault-hold-s`, longer than the client waits, then dropped unanswered); `reset` (the connection reset, no
reply); `garbage` (HTTP 200, an HTML page as the body); `truncated` (HTTP 200, the first half of the reply's
JSON as the whole body); `tool_args` (a well-formed reply whose tool arguments or content are cut in half,
finish_reason "length": the model's fault, not the server's). A kind named twice in the mix is drawn twice as
often. The draw for the n-th time a conversation (the
request body's model, messages, tools and output format, hashed) is sent depends on the seed, that hash and n
only, never on the order requests arrive in, so a seeded run meets the same faults however it is scheduled.
Every completed reply is counted by conversation hash: `repeated_answers` in the stats is how many replies
repeated a conversation that had been answered before (what a client's cache should make 0).

Dropped items (`--drop-items RATE --drop-items-over N`, for the follow-up of long replies): in a reply whose
lists of `item_id` entries hold more than N entries in all (a long combined judgement), each entry is left out
with probability RATE, drawn from `--drop-seed` and the conversation's hash, so the same prompt loses the same
items and a shorter follow-up (N entries or fewer) loses none. `dropped_items` in the stats counts them.

Endpoints: POST /v1/chat/completions, POST /v1/embeddings (deterministic unit vectors), GET /v1/models,
GET /sim/stats (counters), POST /sim/reset. Tokens are counted as characters // 4 (no tokenizer data
is downloaded), prompt tokens over all message contents and tool/schema definitions, completion tokens
over the output text. Nothing here is imported from tests/.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import math
import random
import re
import socket
import struct
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

CHARS_PER_TOKEN = 4
_DECODER = json.JSONDecoder()
# "[E1] <<<ITEM-..." or "[ctx_0] title: ..." at a line start: a shown id, with the label of its text if any.
_SHOWN_ID = re.compile(r"^\[([A-Za-z]+_?)(\d+)\](?:[^\n<]*?<<<([A-Z_]+)-)?", re.MULTILINE)
_EXAMPLE_ID = re.compile(r"\b([A-Za-z]+_?)(?:\d+|(?<=_)N)\b")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{3,}")


def tokens(text: str) -> int:
    return len(text) // CHARS_PER_TOKEN


# --------------------------------------------------------------------------- ids in a prompt


@dataclass(frozen=True)
class ShownId:
    prefix: str
    number: str
    label: str | None

    @property
    def text(self) -> str:
        return f"{self.prefix}{self.number}"


def shown_ids(prompt: str) -> list[ShownId]:
    """Ids listed at line starts, in order, each once."""
    seen: dict[str, ShownId] = {}
    for match in _SHOWN_ID.finditer(prompt):
        shown = ShownId(match.group(1), match.group(2), match.group(3))
        seen.setdefault(shown.text, shown)
    return list(seen.values())


def _prefix_in(description: str, ids: list[ShownId]) -> str | None:
    """The id prefix a field description names by example ("e.g. E1", "ctx_N") among the prompt's ids."""
    prefixes = {s.prefix for s in ids}
    for match in _EXAMPLE_ID.finditer(description):
        if match.group(1) in prefixes:
            return match.group(1)
    return None


# --------------------------------------------------------------------------- schema instances


@dataclass
class InstanceMaker:
    """Minimal valid instances of a JSON schema, ids taken from `prompt`, deterministic per prompt."""

    root: dict[str, Any]
    prompt: str = ""
    list_length: int = 2
    _ids: list[ShownId] = field(init=False)
    _rng: random.Random = field(init=False)
    _words: list[str] = field(init=False)

    def __post_init__(self) -> None:
        self._ids = shown_ids(self.prompt)
        self._rng = random.Random(hashlib.sha256(self.prompt.encode()).hexdigest())
        self._words = _WORD.findall(self.prompt[-2000:]) or ["plausible", "output", "text"]

    def make(self) -> Any:
        return self._value(self.root, "value", "")

    def _resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in schema:
            path = schema["$ref"].removeprefix("#/").split("/")
            target: Any = self.root
            for part in path:
                target = target[part]
            schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
        return schema

    def _value(self, schema: dict[str, Any], name: str, description: str) -> Any:
        schema = self._resolve(schema)
        description = schema.get("description", description)
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            return schema["enum"][0]
        for combinator in ("anyOf", "oneOf"):
            if combinator in schema:
                options = [o for o in schema[combinator] if self._resolve(o).get("type") != "null"]
                return self._value(options[0] if options else {"type": "null"}, name, description)
        if "allOf" in schema:
            merged: dict[str, Any] = {}
            for part in schema["allOf"]:
                merged |= self._resolve(part)
            return self._value(merged, name, description)
        kind = schema.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "null")
        if kind == "object" or "properties" in schema:
            return self._object(schema)
        if kind == "array":
            return self._array(schema, name, description)
        if kind == "integer":
            low, high = schema.get("minimum", 0), schema.get("maximum", 1)
            return max(int(low), min(1, int(high)))
        if kind == "number":
            low, high = schema.get("minimum"), schema.get("maximum")
            if low is not None and high is not None:
                return (low + high) / 2
            return float(low) + 1.0 if low is not None else 1.0
        if kind == "boolean":
            return True
        if kind == "null":
            return None
        return self._string(name, schema)

    def _object(self, schema: dict[str, Any]) -> dict[str, Any]:
        properties: dict[str, Any] = schema.get("properties", {})
        out = {}
        for key, sub in properties.items():
            out[key] = self._value(sub, key, "")
        return out

    def _string(self, name: str, schema: dict[str, Any]) -> str:
        words = " ".join(self._rng.choice(self._words) for _ in range(6))
        text = f"{name.replace('_', ' ')} {self._rng.randrange(10**6)}: {words}"
        max_length = schema.get("maxLength")
        return text[:max_length] if max_length else text

    def _array(self, schema: dict[str, Any], name: str, description: str) -> list[Any]:
        items = self._resolve(schema.get("items", {}))
        low, high = schema.get("minItems", 0), schema.get("maxItems")
        properties = items.get("properties", {})
        if "item_id" in properties:  # one entry per listed item
            item_schema = self._resolve(properties["item_id"])
            wanted = self._ids_for(item_schema.get("description", ""), item_labels=True)
            out = []
            for shown in wanted:
                entry = self._object(items)
                entry["item_id"] = shown
                out.append(entry)
            return out
        if self._resolve(items).get("type") == "string" and (prefix := _prefix_in(description, self._ids)):
            candidates = [s.text for s in self._ids if s.prefix == prefix]
            count = min(len(candidates), 1 + self._rng.randrange(2))
            return sorted(self._rng.sample(candidates, count), key=candidates.index)
        if "ids" in name and self._resolve(items).get("type") == "string":
            candidates = [s.text for s in self._ids if s.label in ("TARGET", "CHUNK")]
            count = min(len(candidates), 1 + self._rng.randrange(2))
            return sorted(self._rng.sample(candidates, count), key=candidates.index)
        length = max(low, self.list_length)
        if high is not None:
            length = min(length, high)
        return [self._value(items, f"{name} {i + 1}", "") for i in range(length)]

    def _ids_for(self, description: str, *, item_labels: bool) -> list[str]:
        prefix = _prefix_in(description, self._ids)
        if prefix is not None:
            return [s.text for s in self._ids if s.prefix == prefix]
        labelled = [s.text for s in self._ids if s.label == "ITEM"] if item_labels else []
        if not labelled and item_labels and _EXAMPLE_ID.search(description):
            return []  # its example names a kind of item the prompt lists none of (a combined reply's empty list)
        return labelled or [s.text for s in self._ids]


def schema_instance(schema: dict[str, Any], prompt: str = "") -> Any:
    return InstanceMaker(schema, prompt).make()


def find_json_schema(text: str) -> dict[str, Any] | None:
    """The first JSON object in `text` that is a JSON schema of an object (has properties)."""
    start = text.find("{")
    while start != -1:
        try:
            candidate, _ = _DECODER.raw_decode(text, start)
        except json.JSONDecodeError:
            candidate = None
        if isinstance(candidate, dict) and isinstance(candidate.get("properties"), dict):
            return candidate
        start = text.find("{", start + 1)
    return None


# --------------------------------------------------------------------------- requests


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content if isinstance(p, dict))


@dataclass(frozen=True)
class Answer:
    """What one chat request gets: the output text, whether it is a tool call, and its name for counting."""

    text: str
    tool: str | None
    name: str


def answer_for(body: dict[str, Any]) -> Answer:
    messages = body.get("messages", [])
    prompt = "\n".join(_text(m.get("content")) for m in messages)
    tools = body.get("tools") or []
    if tools:
        function = tools[0]["function"]
        value = schema_instance(function.get("parameters", {}), prompt)
        return Answer(json.dumps(value), function["name"], function["name"])
    response_format = body.get("response_format") or {}
    if response_format.get("type") == "json_schema":
        spec = response_format.get("json_schema", {})
        return Answer(json.dumps(schema_instance(spec.get("schema", {}), prompt)), None, spec.get("name", "json"))
    schema = find_json_schema(prompt)
    if schema is not None:
        return Answer(json.dumps(schema_instance(schema, prompt)), None, str(schema.get("title", "prompt_schema")))
    if response_format.get("type") == "json_object":
        return Answer(json.dumps({"answer": " ".join(_WORD.findall(prompt)[-8:])}), None, "json_object")
    refchecker = refchecker_answer(prompt)
    if refchecker is not None:
        return refchecker
    return Answer(" ".join(_WORD.findall(prompt)[-12:]) or "ok", None, "text")


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_TRIPLET_LINE = re.compile(r"^\(.*\)\s*$", re.MULTILINE)


def refchecker_answer(prompt: str) -> Answer | None:
    """RAGChecker's (refchecker's) two text formats: a KG of ("subject", "predicate", "object") lines, one
    triplet per sentence of the candidate answer; and joint checking, one label per listed claim."""
    if "extract a KG" in prompt and prompt.rstrip().endswith("### KG:"):
        text = prompt.rsplit("### Candidate Answer:", 1)[-1].rsplit("### KG:", 1)[0].strip()
        triplets = []
        for index, sentence in enumerate(s for s in _SENTENCE_END.split(text) if s.strip()):
            words = _WORD.findall(sentence)
            triplets.append(json.dumps([f"S{index + 1}", "states", " ".join(words[:8])])[1:-1])
        return Answer("\n".join(f"({t})" for t in triplets) or "Abstain", None, "refchecker_triplets")
    if "### Claims:" in prompt and "only a list of labels" in prompt:
        claims = prompt.rsplit("### Claims:", 1)[-1].split("Your answer", 1)[0]
        return Answer("\n".join("Entailment" for _ in _TRIPLET_LINE.findall(claims)), None, "refchecker_joint_check")
    return None


# --------------------------------------------------------------------------- logprobs

DECISION_OPTIONS = {"verdict": ("yes", "no"), "in_context": ("yes", "no"), "in_answer": ("yes", "no"),
                    "answered": ("yes", "no"), "decision": ("A", "B", "Tie")}
_DECISION_VALUE = re.compile(r'"(' + "|".join(DECISION_OPTIONS) + r')": "([^"]*)"')
# Linked ids (a list): whether it is empty is decided at its first token, an id's or the closing bracket.
LINK_FIELDS = ("ids", "supporting_chunk_ids", "chunk_ids", "served_subquery_ids")
_LINK_LIST = re.compile(r'"(' + "|".join(LINK_FIELDS) + r')": \[([^\]]*)\]')


def decision_probabilities(prompt: str, position: int | str, options: tuple[str, ...]) -> list[float]:
    rng = random.Random(f"{hashlib.sha256(prompt.encode()).hexdigest()}:{position}")
    weights = [rng.random() + 1e-3 for _ in options]
    total = sum(weights)
    return [w / total for w in weights]


def _token(text: str, logprob: float, top: list[tuple[str, float]] | None = None) -> dict[str, Any]:
    return {"token": text, "logprob": logprob, "bytes": list(text.encode()),
            "top_logprobs": [{"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in top or []]}


def with_decision_logprobs(text: str, prompt: str) -> tuple[str, list[dict[str, Any]]]:
    """The JSON content with each decision value redrawn (the most probable option), and its tokens: the text
    between decisions as one token each, every decision value a token with its options as top alternatives.
    A non-empty list of linked ids is redrawn too (kept, or emptied when its seeded P(empty) is the larger):
    its first token, the first id (quoted) or ``]``, has both as top alternatives. Decision values and lists
    are seeded by their own counts, so lists leave the decision values' draws as they were."""
    found = sorted([*_DECISION_VALUE.finditer(text), *(m for m in _LINK_LIST.finditer(text) if m.group(2).strip())],
                   key=lambda m: m.start())
    out_text, tokens_out, pos, decisions, lists = [], [], 0, 0, 0
    for match in found:
        before = text[pos:match.start(2)]
        if match.re is _DECISION_VALUE:
            options = DECISION_OPTIONS[match.group(1)]
            probabilities = decision_probabilities(prompt, decisions, options)
            decisions += 1
            chosen = options[max(range(len(options)), key=probabilities.__getitem__)]
            pos = match.end(2)
        else:
            first = match.group(2).split(",")[0].strip()
            options = (first, "]")
            probabilities = decision_probabilities(prompt, f"list {lists}", options)
            lists += 1
            keep = probabilities[0] >= probabilities[1]
            chosen = first if keep else "]"
            pos = match.start(2) + len(first) if keep else match.end()  # emptied: past the list's own "]"
        out_text += [before, chosen]
        tokens_out += [_token(before, -0.01), _token(chosen, math.log(max(probabilities)),
                                                     [(o, math.log(p)) for o, p in zip(options, probabilities, strict=True)])]
    rest = text[pos:]
    out_text.append(rest)
    tokens_out.append(_token(rest, -0.01))
    return "".join(out_text), tokens_out


# --------------------------------------------------------------------------- latency


@dataclass(frozen=True)
class Latency:
    """Seconds before a reply: a base latency drawn from a distribution plus the completion's token time."""

    mean_s: float
    jitter_s: float = 0.0
    distribution: str = "fixed"  # fixed | uniform (mean ± jitter) | lognormal (mean, sd = jitter)
    tokens_per_s: float = 0.0  # 0: the whole completion arrives with the first token
    seed: int = 0

    def draws(self) -> Iterator[float]:
        rng = random.Random(self.seed)
        while True:
            if self.distribution == "uniform":
                yield max(0.0, rng.uniform(self.mean_s - self.jitter_s, self.mean_s + self.jitter_s))
            elif self.distribution == "lognormal" and self.mean_s > 0 and self.jitter_s > 0:
                sigma2 = math.log(1 + (self.jitter_s / self.mean_s) ** 2)
                yield rng.lognormvariate(math.log(self.mean_s) - sigma2 / 2, math.sqrt(sigma2))
            else:
                yield self.mean_s

    def token_time(self, completion_tokens: int) -> float:
        return completion_tokens / self.tokens_per_s if self.tokens_per_s > 0 else 0.0


# --------------------------------------------------------------------------- faults

SERVER_FAULTS = ("500", "429", "timeout", "reset", "garbage", "truncated")  # the server's (or a proxy's) fault
FAULT_KINDS = (*SERVER_FAULTS, "tool_args")
GARBAGE_BODY = b"<html><body><h1>502 Bad Gateway</h1>upstream hiccup</body></html>"


def conversation_hash(body: dict[str, Any]) -> str:
    """What makes two requests the same question: a client's retry sends the same hash again."""
    asked = {key: body.get(key) for key in ("model", "messages", "tools", "tool_choice", "response_format")}
    return hashlib.sha256(json.dumps(asked, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


@dataclass(frozen=True)
class Faults:
    """A seeded share of chat requests faulted (see the module docstring)."""

    rate: float = 0.0
    seed: int = 0
    mix: tuple[str, ...] = SERVER_FAULTS
    retry_after_s: float = 0.05
    hold_s: float = 5.0

    def __post_init__(self) -> None:
        unknown = sorted(set(self.mix) - set(FAULT_KINDS))
        if unknown or not self.mix:
            raise ValueError(f"unknown fault kinds {unknown} (known: {', '.join(FAULT_KINDS)})")
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"a fault rate is a share in [0, 1], not {self.rate}")

    def draw(self, conversation: str, attempt: int) -> str | None:
        """The fault of the `attempt`-th (1-based) request of a conversation, or None."""
        if self.rate <= 0.0:
            return None
        rng = random.Random(f"{self.seed}:{conversation}:{attempt}")
        return rng.choice(self.mix) if rng.random() < self.rate else None


@dataclass(frozen=True)
class Drops:
    """Items left out of long replies (see the module docstring)."""

    rate: float = 0.0
    over: int = 10
    seed: int = 0

    def apply(self, answer: Answer, conversation: str) -> tuple[Answer, int]:
        """The answer with its dropped entries left out, and how many were dropped."""
        if self.rate <= 0.0:
            return answer, 0
        try:
            value = json.loads(answer.text)
        except json.JSONDecodeError:
            return answer, 0
        if not isinstance(value, dict):
            return answer, 0
        lists = [key for key, items in value.items()
                 if isinstance(items, list) and items and all(isinstance(i, dict) and "item_id" in i for i in items)]
        if sum(len(value[key]) for key in lists) <= self.over:
            return answer, 0
        rng = random.Random(f"{self.seed}:{conversation}")
        dropped = 0
        for key in lists:
            kept = [item for item in value[key] if rng.random() >= self.rate]
            dropped += len(value[key]) - len(kept)
            value[key] = kept
        return Answer(json.dumps(value), answer.tool, answer.name), dropped


def _drop(request: web.Request) -> web.Response:
    """Reset the request's connection (linger 0: RST, not FIN); the response returned is never sent."""
    transport = request.transport
    if transport is not None:
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        transport.abort()
    return web.Response(status=599)


# --------------------------------------------------------------------------- counters


@dataclass
class Stats:
    requests: int = 0
    embedding_requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    by_name: Counter[str] = field(default_factory=Counter)
    prompt_tokens_by_name: Counter[str] = field(default_factory=Counter)
    completion_tokens_by_name: Counter[str] = field(default_factory=Counter)
    in_flight: int = 0
    max_in_flight: int = 0
    busy_s: float = 0.0  # sum of every request's service time (its latency): concurrency = busy / span
    first_start: float | None = None
    last_end: float | None = None
    sent: Counter[str] = field(default_factory=Counter)  # chat requests per conversation hash
    answered: Counter[str] = field(default_factory=Counter)  # completed replies per conversation hash
    faults: Counter[str] = field(default_factory=Counter)
    dropped_items: int = 0

    def as_json(self) -> dict[str, Any]:
        span = (self.last_end - self.first_start) if self.first_start and self.last_end else 0.0
        return {
            "requests": self.requests, "embedding_requests": self.embedding_requests,
            "chat_requests": sum(self.sent.values()), "faults": dict(self.faults),
            "answered_conversations": len(self.answered),
            "repeated_answers": sum(n - 1 for n in self.answered.values()),
            "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
            "by_name": dict(self.by_name), "prompt_tokens_by_name": dict(self.prompt_tokens_by_name),
            "completion_tokens_by_name": dict(self.completion_tokens_by_name),
            "in_flight": self.in_flight, "max_in_flight": self.max_in_flight, "busy_s": self.busy_s, "span_s": span,
            "dropped_items": self.dropped_items,
        }


class SimServer:
    def __init__(self, latency: Latency, faults: Faults | None = None, logprobs: bool = False,
                 drops: Drops | None = None) -> None:
        self.latency = latency
        self.faults = faults or Faults()
        self.drops = drops or Drops()
        self.logprobs = logprobs
        self._draws = latency.draws()
        self.stats = Stats()

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self.chat)
        app.router.add_post("/v1/embeddings", self.embeddings)
        app.router.add_get("/v1/models", self.models)
        app.router.add_get("/sim/stats", self.get_stats)
        app.router.add_post("/sim/reset", self.reset)
        return app

    async def chat(self, request: web.Request) -> web.Response:
        body = await request.json()
        conversation = conversation_hash(body)
        self.stats.sent[conversation] += 1
        fault = self.faults.draw(conversation, self.stats.sent[conversation])
        if fault is not None:
            self.stats.faults[fault] += 1
            if fault in ("500", "429", "timeout", "reset", "garbage"):
                return await self._fault_reply(request, fault)
        started = time.monotonic()
        stats = self.stats
        stats.first_start = stats.first_start or started
        stats.in_flight += 1
        stats.max_in_flight = max(stats.max_in_flight, stats.in_flight)
        try:
            answer, dropped = self.drops.apply(answer_for(body), conversation)
            stats.dropped_items += dropped
            if fault == "tool_args":  # the model's output cut short, in a well-formed reply
                answer = Answer(answer.text[: max(1, len(answer.text) // 2)], answer.tool, answer.name)
            token_logprobs = None
            if self.logprobs and body.get("logprobs") and answer.tool is None:
                prompt = "\n".join(_text(m.get("content")) for m in body.get("messages", []))
                text, token_logprobs = with_decision_logprobs(answer.text, prompt)
                keep = int(body.get("top_logprobs") or 0)
                for token in token_logprobs:
                    token["top_logprobs"] = token["top_logprobs"][:keep]
                answer = Answer(text, answer.tool, answer.name)
            prompt_tokens = sum(tokens(_text(m.get("content"))) for m in body.get("messages", []))
            prompt_tokens += tokens(json.dumps(body.get("tools"))) if body.get("tools") else 0
            completion_tokens = tokens(answer.text)
            await asyncio.sleep(next(self._draws) + self.latency.token_time(completion_tokens))
            choices = []
            for index in range(int(body.get("n") or 1)):
                message: dict[str, Any] = {"role": "assistant", "content": None}
                if answer.tool is not None:
                    message["tool_calls"] = [{"id": f"call_{stats.requests}_{index}", "type": "function",
                                              "function": {"name": answer.tool, "arguments": answer.text}}]
                else:
                    message["content"] = answer.text
                finish = "length" if fault == "tool_args" else "tool_calls" if answer.tool else "stop"
                logprobs = {"content": token_logprobs} if token_logprobs is not None else None
                choices.append({"index": index, "message": message, "logprobs": logprobs, "finish_reason": finish})
            stats.requests += 1
            stats.prompt_tokens += prompt_tokens
            stats.completion_tokens += completion_tokens * len(choices)
            stats.by_name[answer.name] += 1
            stats.prompt_tokens_by_name[answer.name] += prompt_tokens
            stats.completion_tokens_by_name[answer.name] += completion_tokens * len(choices)
            reply = {
                "id": f"chatcmpl-{stats.requests}", "object": "chat.completion", "created": 0,
                "model": body.get("model", "sim"), "choices": choices,
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens * len(choices),
                          "total_tokens": prompt_tokens + completion_tokens * len(choices)},
            }
            if fault == "truncated":  # the body cut in half, its Content-Length saying so: no reply was had
                whole = json.dumps(reply).encode()
                return web.Response(body=whole[: len(whole) // 2], content_type="application/json")
            stats.answered[conversation] += 1
            return web.json_response(reply)
        finally:
            ended = time.monotonic()
            stats.in_flight -= 1
            stats.busy_s += ended - started
            stats.last_end = ended

    async def _fault_reply(self, request: web.Request, fault: str) -> web.Response:
        if fault == "500":
            return web.json_response({"error": {"message": "injected fault: HTTP 500", "type": "server_error"}},
                                     status=500)
        if fault == "429":
            wait = self.faults.retry_after_s
            return web.json_response({"error": {"message": "injected fault: HTTP 429", "type": "rate_limit_error"}},
                                     status=429, headers={"retry-after": f"{wait:g}",
                                                          "retry-after-ms": str(round(wait * 1000))})
        if fault == "garbage":
            return web.Response(body=GARBAGE_BODY, content_type="text/html")
        if fault == "timeout":
            await asyncio.sleep(self.faults.hold_s)
        return _drop(request)

    async def embeddings(self, request: web.Request) -> web.Response:
        body = await request.json()
        inputs = body.get("input", "")
        items = inputs if isinstance(inputs, list) and not all(isinstance(x, int) for x in inputs) else [inputs]
        dimensions = int(body.get("dimensions") or 64)
        self.stats.embedding_requests += 1
        await asyncio.sleep(next(self._draws))
        data = [{"object": "embedding", "index": i, "embedding": unit_vector(item, dimensions)}
                for i, item in enumerate(items)]
        used = sum(tokens(i) if isinstance(i, str) else len(i) for i in items)
        return web.json_response({"object": "list", "data": data, "model": body.get("model", "sim"),
                                  "usage": {"prompt_tokens": used, "total_tokens": used}})

    async def models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "sim", "object": "model", "created": 0,
                                                               "owned_by": "sim"}]})

    async def get_stats(self, request: web.Request) -> web.Response:
        return web.json_response(self.stats.as_json())

    async def reset(self, request: web.Request) -> web.Response:
        self.stats = Stats()
        return web.json_response({"ok": True})


def unit_vector(item: Any, dimensions: int) -> list[float]:
    """A deterministic unit vector of the text (or token list): the same input, the same vector."""
    digest = hashlib.sha256(json.dumps(item).encode()).digest()
    raw = [(digest[i % len(digest)] ^ (i * 31 % 256)) / 127.5 - 1.0 for i in range(dimensions)]
    norm = math.sqrt(sum(x * x for x in raw)) or 1.0
    return [x / norm for x in raw]


async def serve(latency: Latency, port: int, faults: Faults | None = None, logprobs: bool = False,
                drops: Drops | None = None) -> None:
    runner = web.AppRunner(SimServer(latency, faults, logprobs, drops).app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port, backlog=1024)
    await site.start()
    bound = runner.addresses[0][1]
    print(f"http://127.0.0.1:{bound}/v1", flush=True)
    # Serve until stdin closes (the parent went away) or the process is killed.
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    await runner.cleanup()


@contextlib.contextmanager
def running(*options: str, latency_ms: float = 0.0) -> Iterator[str]:
    """This server in a process of its own (its own core: it must not compete with the client it serves), for
    benchmarks and tests; yields its base URL and stops it when the block ends (stdin closed)."""
    process = subprocess.Popen([sys.executable, __file__, "--latency-ms", str(latency_ms), *options],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdin is not None
    try:
        yield process.stdout.readline().strip()
    finally:
        process.stdin.close()
        process.wait(timeout=30)


def stats(base_url: str) -> dict[str, Any]:
    """The counters of a running server (GET /sim/stats)."""
    with urllib.request.urlopen(base_url.removesuffix("/v1") + "/sim/stats") as response:
        return dict(json.loads(response.read()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--jitter-ms", type=float, default=0.0)
    parser.add_argument("--distribution", choices=("fixed", "uniform", "lognormal"), default="fixed")
    parser.add_argument("--tokens-per-s", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--faults", type=float, default=0.0, help="share of chat requests faulted, 0..1")
    parser.add_argument("--fault-seed", type=int, default=0)
    parser.add_argument("--fault-mix", default=",".join(SERVER_FAULTS),
                        help=f"comma-separated, drawn uniformly; kinds: {', '.join(FAULT_KINDS)}")
    parser.add_argument("--fault-retry-after-s", type=float, default=0.05)
    parser.add_argument("--fault-hold-s", type=float, default=5.0, help="how long a timeout fault holds a request")
    parser.add_argument("--logprobs", action="store_true",
                        help="decision values drawn with seeded probabilities, returned as logprobs (see above)")
    parser.add_argument("--drop-items", type=float, default=0.0,
                        help="share of item entries left out of long replies (see above), 0..1")
    parser.add_argument("--drop-items-over", type=int, default=10,
                        help="a reply is long when its item lists hold more entries than this")
    parser.add_argument("--drop-seed", type=int, default=0)
    args = parser.parse_args()
    if not 0.0 <= args.drop_items <= 1.0:
        parser.error(f"--drop-items is a share in [0, 1], not {args.drop_items}")
    latency = Latency(args.latency_ms / 1000, args.jitter_ms / 1000, args.distribution, args.tokens_per_s, args.seed)
    try:
        faults = Faults(args.faults, args.fault_seed, tuple(k.strip() for k in args.fault_mix.split(",") if k.strip()),
                        args.fault_retry_after_s, args.fault_hold_s)
    except ValueError as error:
        parser.error(str(error))
    asyncio.run(serve(latency, args.port, faults, args.logprobs, Drops(args.drop_items, args.drop_items_over,
                                                                       args.drop_seed)))


if __name__ == "__main__":
    main()
