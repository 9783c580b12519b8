"""An OTLP/HTTP trace receiver on 127.0.0.1: records every POST and decodes the spans of /v1/traces bodies.

    with OTLPReceiver() as receiver:
        ...export to receiver.url...
        receiver.spans()   # the decoded protobuf spans, in arrival order
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


@dataclass(frozen=True)
class Posted:
    path: str
    content_type: str
    body: bytes


class OTLPReceiver:
    def __init__(self) -> None:
        self.posted: list[Posted] = []
        posted = self.posted

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                posted.append(Posted(self.path, self.headers["Content-Type"], body))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> OTLPReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def requests(self) -> list[ExportTraceServiceRequest]:
        return [ExportTraceServiceRequest.FromString(p.body) for p in self.posted]

    def spans(self) -> list[Any]:
        return [span for request in self.requests() for resource in request.resource_spans
                for scope in resource.scope_spans for span in scope.spans]
