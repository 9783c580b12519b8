"""A real OpenAI-compatible HTTP server on 127.0.0.1 for tests, with scripted answers and faults.

    with FakeOpenAIServer(builders={"Decision": lambda req: {"label": "yes"}}) as server:
        model = ChatOpenAI(base_url=server.base_url, api_key="x", model="fake-model")
        ...
        assert server.count("/v1/chat/completions") == 1

Endpoints: POST /v1/chat/completions, POST /v1/embeddings, GET /v1/models.

Answers come from `responder(ChatRequest) -> dict | str | Reply`: a dict is the structured output
(a tool call when tools were sent, JSON content otherwise), a str is raw content (or raw tool
arguments). The default responder, `schema_responder(server.builders)`, answers by the output schema
name: the tool name, the json_schema name, or in JSON mode the "title" of the JSON schema the client
embedded in its system message. Never by prompt wording.

Usage is counted as: prompt_tokens = (sum of len(text) over the request's message contents) // 4,
completion_tokens = len(output text) // 4, where output text is the tool arguments or the content.

Faults (`FaultPlan`): by request number (1-based over all POST requests), queued for the next
requests, or drawn with a seeded probability. Every request, faulted or not, is logged and counted.
Faults of the output (`malformed_json`, `truncated`) come in a well-formed reply; faults of the HTTP
exchange (`garbage_body`, `truncated_body`, `connection_reset`) give a reply the API never promised.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import socket
import struct
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from fakes.schema_text import find_json_schema

CHAT_PATH = "/v1/chat/completions"
EMBEDDINGS_PATH = "/v1/embeddings"
MODELS_PATH = "/v1/models"

# --------------------------------------------------------------------------- requests and replies


class OutputMode(StrEnum):
    TOOL = "tool"
    JSON_SCHEMA = "json_schema"
    JSON_OBJECT = "json_object"
    TEXT = "text"


@dataclass(frozen=True)
class ToolSpec:
    name: str
    parameters: dict[str, Any]


def _text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


@dataclass(frozen=True)
class ChatRequest:
    """A parsed POST /v1/chat/completions body, as a responder sees it."""

    body: dict[str, Any]
    number: int

    @property
    def model(self) -> str:
        return str(self.body.get("model", ""))

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", []))

    @property
    def tool(self) -> ToolSpec | None:
        tools = self.body.get("tools") or []
        if not tools:
            return None
        function = tools[0]["function"]
        return ToolSpec(name=function["name"], parameters=function.get("parameters", {}))

    @property
    def tool_choice(self) -> Any:
        return self.body.get("tool_choice")

    @property
    def response_format(self) -> dict[str, Any] | None:
        return self.body.get("response_format")

    @property
    def mode(self) -> OutputMode:
        if self.tool is not None:
            return OutputMode.TOOL
        format_type = (self.response_format or {}).get("type")
        if format_type == "json_schema":
            return OutputMode.JSON_SCHEMA
        if format_type == "json_object":
            return OutputMode.JSON_OBJECT
        return OutputMode.TEXT

    @property
    def schema(self) -> dict[str, Any] | None:
        """The JSON schema of the requested output, however it was requested."""
        if self.mode is OutputMode.TOOL:
            assert self.tool is not None
            return self.tool.parameters
        if self.mode is OutputMode.JSON_SCHEMA:
            return (self.response_format or {}).get("json_schema", {}).get("schema")
        if self.mode is OutputMode.JSON_OBJECT:
            for message in self.messages:
                if message.get("role") in ("system", "developer"):
                    found = find_json_schema(_text_of(message.get("content")))
                    if found is not None:
                        return found
        return None

    @property
    def schema_name(self) -> str | None:
        if self.mode is OutputMode.TOOL:
            assert self.tool is not None
            return self.tool.name
        if self.mode is OutputMode.JSON_SCHEMA:
            return (self.response_format or {}).get("json_schema", {}).get("name")
        schema = self.schema
        return schema.get("title") if schema else None

    @property
    def logprobs(self) -> bool:
        return bool(self.body.get("logprobs"))

    @property
    def top_logprobs(self) -> int | None:
        return self.body.get("top_logprobs")

    @property
    def prompt_chars(self) -> int:
        return sum(len(_text_of(message.get("content"))) for message in self.messages)


TokenLogprobs = tuple[str, float, Sequence[tuple[str, float]]]
"""(token, logprob, top alternatives as (token, logprob)) for one output token."""


@dataclass(frozen=True)
class Reply:
    """A full answer, when a responder needs more than the output: logprobs, a refusal, a finish reason."""

    output: dict[str, Any] | str = ""
    logprobs: Sequence[TokenLogprobs] | None = None
    refusal: str | None = None
    finish_reason: str | None = None


Responder = Callable[[ChatRequest], "dict[str, Any] | str | Reply"]


def schema_responder(builders: Mapping[str, Callable[[ChatRequest], Any]]) -> Responder:
    """Answer by output schema name; a request for a schema without a builder is a test bug (HTTP 400)."""

    def respond(request: ChatRequest) -> dict[str, Any] | str | Reply:
        name = request.schema_name
        if name is None or name not in builders:
            raise LookupError(
                f"no builder for output schema {name!r} (mode {request.mode}); builders: {sorted(builders)}"
            )
        return builders[name](request)

    return respond


# --------------------------------------------------------------------------- faults


@dataclass(frozen=True)
class StatusFault:
    status: int
    retry_after_s: float | None = None


@dataclass(frozen=True)
class DelayFault:
    seconds: float


@dataclass(frozen=True)
class MalformedFault:
    pass


@dataclass(frozen=True)
class TruncatedFault:
    pass


@dataclass(frozen=True)
class BodyFault:
    """HTTP 200 with a body that is not the API's JSON."""

    body: bytes
    content_type: str = "application/json"


@dataclass(frozen=True)
class TruncatedBodyFault:
    """HTTP 200 with the first half of the reply's JSON as the whole body (its Content-Length says so)."""


@dataclass(frozen=True)
class ResetFault:
    """The connection reset (TCP RST) without any reply."""


Fault = StatusFault | DelayFault | MalformedFault | TruncatedFault | BodyFault | TruncatedBodyFault | ResetFault


def status_429(retry_after: float | None = 0.1) -> StatusFault:
    return StatusFault(status=429, retry_after_s=retry_after)


def status_500() -> StatusFault:
    return StatusFault(status=500)


def delay(seconds: float) -> DelayFault:
    """Answer normally, but only after `seconds` (make it longer than the client's timeout)."""
    return DelayFault(seconds=seconds)


def malformed_json() -> MalformedFault:
    """Garbage content, or broken tool-call arguments."""
    return MalformedFault()


def truncated() -> TruncatedFault:
    """The output cut in the middle of the JSON, finish_reason 'length'."""
    return TruncatedFault()


def garbage_body(content_type: str = "application/json") -> BodyFault:
    """An error page where the completion should be (a proxy's, say), under `content_type`."""
    return BodyFault(body=b"<html><body>502 upstream hiccup</body></html>", content_type=content_type)


def not_a_completion() -> BodyFault:
    """Valid JSON, but no chat completion: no choices."""
    return BodyFault(body=b'{"object": "chat.completion", "note": "no choices"}')


def truncated_body() -> TruncatedBodyFault:
    return TruncatedBodyFault()


def connection_reset() -> ResetFault:
    return ResetFault()


class FaultPlan:
    """Which request gets which fault. Precedence: `at(n)`, then the queue, then the random mix."""

    def __init__(self, *, seed: int | None = None, probability: float = 0.0, mix: Sequence[Fault] = ()):
        if probability and not mix:
            raise ValueError("a fault probability needs a mix of faults to draw from")
        self._at: dict[int, Fault] = {}
        self._queue: list[Fault] = []
        self._rng = random.Random(seed)
        self._probability = probability
        self._mix = tuple(mix)
        self._lock = threading.Lock()

    def at(self, n: int, fault: Fault) -> FaultPlan:
        """Fault the n-th POST request (1-based)."""
        with self._lock:
            self._at[n] = fault
        return self

    def then(self, *faults: Fault) -> FaultPlan:
        """Fault the next requests, in this order."""
        with self._lock:
            self._queue.extend(faults)
        return self

    def fault_for(self, n: int) -> Fault | None:
        with self._lock:
            if n in self._at:
                return self._at.pop(n)
            if self._queue:
                return self._queue.pop(0)
            if self._probability and self._rng.random() < self._probability:
                return self._rng.choice(self._mix)
            return None


# --------------------------------------------------------------------------- the server


@dataclass(frozen=True)
class LoggedRequest:
    number: int | None  # position among POST requests (what FaultPlan counts); None for GET
    method: str
    path: str
    body: dict[str, Any] | None
    fault: Fault | None


def _error_body(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def _fake_embedding(item: Any, dimensions: int) -> list[float]:
    digest = hashlib.sha256(json.dumps(item).encode("utf-8")).digest()
    raw = [(digest[i % len(digest)] - 127.5) / 127.5 for i in range(dimensions)]
    norm = math.sqrt(sum(x * x for x in raw)) or 1.0
    return [x / norm for x in raw]


@dataclass
class _Answer:
    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None  # sent instead of `body` (a body fault)
    content_type: str = "application/json"
    reset: bool = False  # no reply at all: the connection is reset


class FakeOpenAIServer:
    def __init__(
        self,
        *,
        builders: dict[str, Callable[[ChatRequest], Any]] | None = None,
        responder: Responder | None = None,
        faults: FaultPlan | None = None,
        models: Sequence[str] = ("fake-model",),
        host: str = "127.0.0.1",
    ):
        self.builders: dict[str, Callable[[ChatRequest], Any]] = builders if builders is not None else {}
        self.responder: Responder = responder or schema_responder(self.builders)
        self.faults = faults or FaultPlan()
        self.models = tuple(models)
        self.requests: list[LoggedRequest] = []
        self.responder_errors: list[BaseException] = []
        self._host = host
        self._lock = threading.Lock()
        self._post_count = 0
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> Self:
        handler = _handler_for(self)
        httpd = ThreadingHTTPServer((self._host, 0), handler)
        httpd.daemon_threads = True
        httpd.block_on_close = False  # keep-alive connections must not hold up shutdown
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers sleeping in a delay fault
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://{self._host}:{self.port}/v1"

    # ------------------------------------------------------------------ the log

    def count(self, path: str | None = None) -> int:
        with self._lock:
            return sum(1 for r in self.requests if path is None or r.path == path)

    def chat_requests(self) -> list[ChatRequest]:
        with self._lock:
            return [
                ChatRequest(body=r.body or {}, number=r.number or 0)
                for r in self.requests
                if r.path == CHAT_PATH
            ]

    def _log(self, method: str, path: str, body: dict[str, Any] | None) -> tuple[int | None, Fault | None]:
        with self._lock:
            number: int | None = None
            fault: Fault | None = None
            if method == "POST":
                self._post_count += 1
                number = self._post_count
                fault = self.faults.fault_for(number)
            self.requests.append(
                LoggedRequest(number=number, method=method, path=path, body=body, fault=fault)
            )
            return number, fault

    # ------------------------------------------------------------------ answers

    def _answer(self, method: str, path: str, body: dict[str, Any] | None) -> _Answer:
        number, fault = self._log(method, path, body)
        if isinstance(fault, StatusFault):
            return self._status_answer(fault)
        if isinstance(fault, ResetFault):
            return _Answer(0, {}, reset=True)
        if isinstance(fault, BodyFault):
            return _Answer(200, {}, raw=fault.body, content_type=fault.content_type)
        if isinstance(fault, DelayFault):
            self._stopping.wait(fault.seconds)
        if method == "GET" and path == MODELS_PATH:
            data = [{"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in self.models]
            return _Answer(200, {"object": "list", "data": data})
        if method == "POST" and path == CHAT_PATH and body is not None:
            answer = self._chat_answer(ChatRequest(body=body, number=number or 0), fault)
            if isinstance(fault, TruncatedBodyFault):
                whole = json.dumps(answer.body).encode("utf-8")
                answer.raw = whole[: len(whole) // 2]
            return answer
        if method == "POST" and path == EMBEDDINGS_PATH and body is not None:
            return self._embeddings_answer(body)
        return _Answer(404, _error_body(f"no route {method} {path}", "invalid_request_error"))

    @staticmethod
    def _status_answer(fault: StatusFault) -> _Answer:
        headers: dict[str, str] = {}
        if fault.retry_after_s is not None:
            headers["retry-after-ms"] = str(round(fault.retry_after_s * 1000))
            headers["retry-after"] = str(fault.retry_after_s)
        kind = "rate_limit_error" if fault.status == 429 else "server_error"
        return _Answer(fault.status, _error_body(f"injected fault: HTTP {fault.status}", kind), headers)

    def _chat_answer(self, request: ChatRequest, fault: Fault | None) -> _Answer:
        try:
            produced = self.responder(request)
        except Exception as error:  # noqa: BLE001 - a test's responder is wrong: tell the client, keep it for the test
            with self._lock:
                self.responder_errors.append(error)
            return _Answer(400, _error_body(f"responder failed: {error!r}", "invalid_request_error"))
        reply = produced if isinstance(produced, Reply) else Reply(output=produced)
        text = reply.output if isinstance(reply.output, str) else json.dumps(reply.output)
        finish_reason = reply.finish_reason
        if isinstance(fault, MalformedFault):
            text = '{"broken": tru' if request.tool is not None else "Sure! Here it is: {not json at all"
        elif isinstance(fault, TruncatedFault):
            text, finish_reason = text[: max(1, len(text) // 2)], "length"

        message: dict[str, Any] = {"role": "assistant", "content": None}
        if reply.refusal is not None:
            message["refusal"] = reply.refusal
            text = ""
        elif request.tool is not None and text:
            message["tool_calls"] = [
                {
                    "id": f"call_{request.number}",
                    "type": "function",
                    "function": {"name": request.tool.name, "arguments": text},
                }
            ]
        else:
            message["content"] = text
        if finish_reason is None:
            finish_reason = "tool_calls" if "tool_calls" in message else "stop"

        logprobs = None
        if request.logprobs and reply.logprobs is not None:
            keep = request.top_logprobs or 0
            logprobs = {
                "content": [
                    {
                        "token": token,
                        "logprob": logprob,
                        "bytes": list(token.encode("utf-8")),
                        "top_logprobs": [
                            {"token": t, "logprob": lp, "bytes": list(t.encode("utf-8"))}
                            for t, lp in top[:keep]
                        ],
                    }
                    for token, logprob, top in reply.logprobs
                ],
                "refusal": None,
            }
        prompt_tokens, completion_tokens = request.prompt_chars // 4, len(text) // 4
        return _Answer(
            200,
            {
                "id": f"chatcmpl-{request.number}",
                "object": "chat.completion",
                "created": 0,
                "model": request.model,
                "choices": [
                    {"index": 0, "message": message, "logprobs": logprobs, "finish_reason": finish_reason}
                ],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                },
            },
        )

    @staticmethod
    def _embeddings_answer(body: dict[str, Any]) -> _Answer:
        inputs = body.get("input", "")
        # One text, a list of texts, one token list, or a list of token lists (what OpenAIEmbeddings sends).
        items: list[Any] = (
            inputs if isinstance(inputs, list) and not all(isinstance(x, int) for x in inputs) else [inputs]
        )
        dimensions = int(body.get("dimensions") or 8)
        data = [
            {"object": "embedding", "index": i, "embedding": _fake_embedding(item, dimensions)}
            for i, item in enumerate(items)
        ]
        tokens: int = sum(len(item) // 4 if isinstance(item, str) else len(item) for item in items)
        return _Answer(
            200,
            {
                "object": "list",
                "data": data,
                "model": body.get("model", ""),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            },
        )


def _handler_for(server: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out as two writes: with Nagle on, the body waited for the client's delayed ACK,
        # 40 ms a reply (bench/live_overhead.py found it).
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean; the server's own log is `server.requests`

        def _send(self, answer: _Answer) -> None:
            if answer.reset:  # linger 0: closing the socket sends RST, not FIN
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.close_connection = True
                return
            payload = answer.raw if answer.raw is not None else json.dumps(answer.body).encode("utf-8")
            try:
                self.send_response(answer.status)
                self.send_header("Content-Type", answer.content_type)
                self.send_header("Content-Length", str(len(payload)))
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the client gave up (its timeout); nothing to answer

        def do_GET(self) -> None:
            self._send(server._answer("GET", self.path, None))

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else {}
            except json.JSONDecodeError:
                server._log("POST", self.path, None)
                self._send(_Answer(400, _error_body("body is not JSON", "invalid_request_error")))
                return
            self._send(server._answer("POST", self.path, body))

    return Handler
