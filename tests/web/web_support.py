"""Helpers of the web and browser tests: a small evaluated run whose texts carry HTML/script payloads, a
desk server on 127.0.0.1 in a thread, and headless Debian Chromium driven by Playwright."""

from __future__ import annotations

import shutil
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import uvicorn

from ragcourt.runs.api import evaluate
from ragcourt.schema import Chunk, Sample
from ragcourt.schema.config import EvalConfig, JudgeSpec
from ragcourt.systems import Precomputed
from ragcourt.web.app import DeskSettings, create_app

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
PAYLOAD = '<script>window.pwned=1</script><img src=x onerror="window.pwned=2">'
RUN_ID = "xss"

needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists() and shutil.which("chromium") is None,
    reason="Debian's chromium is not installed at /usr/bin/chromium (CI installs it: apt-get install chromium)",
)


def payload_samples() -> list[Sample]:
    return [
        Sample(id="s1", question="Which city is the capital of France?",
               reference_answer="Paris is the capital of France.", gold_answers=("Paris",), gold_titles=("France",),
               contexts=(Chunk(id="c1", title="France", rank=1,
                               text="Paris is the capital and largest city of France. " + PAYLOAD),
                         Chunk(id="c2", title="Lyon <b>bold</b>", rank=2,
                               text="Lyon is a city in France known for food.")),
               answer="The capital of France is Paris. " + PAYLOAD),
        Sample(id="s2", question="Who wrote the novel Dracula?", reference_answer="Bram Stoker wrote Dracula.",
               gold_answers=("Bram Stoker",), gold_titles=("Dracula",),
               contexts=(Chunk(id="c3", title="Dracula", rank=1,
                               text="Dracula is an 1897 Gothic horror novel by Irish author Bram Stoker."),),
               answer="Dracula was written by an Irish author. " + PAYLOAD + " It was published in 1897."),
    ]


def make_payload_run(home: Path) -> str:
    """Evaluate the payload samples (precomputed answers, lexical + semantic jury: they disagree, so
    some checks escalate). Returns the run id."""
    config = EvalConfig(judges=(JudgeSpec(model="lexical"), JudgeSpec(model="semantic")))
    evaluate(payload_samples(), Precomputed(), config=config, home=home, run_id=RUN_ID)
    return RUN_ID


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def desk_server(settings: DeskSettings) -> Iterator[str]:
    """Serve the desk app with uvicorn in a thread; yields its base URL."""
    server = uvicorn.Server(uvicorn.Config(create_app(settings), host=settings.host, port=settings.port,
                                           log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the desk server did not start")
        time.sleep(0.05)
    try:
        yield f"http://{settings.host}:{settings.port}"
    finally:
        server.should_exit = True
        thread.join(timeout=20)


@contextmanager
def chromium() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM if CHROMIUM.exists() else
                                                                 shutil.which("chromium")), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
