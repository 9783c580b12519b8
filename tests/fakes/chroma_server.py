"""A Chroma server for tests: RAGCOURT_TEST_CHROMA_URL when .ci/run started one, else `chroma run` (it ships with
chromadb) on a free loopback port in a temp dir, stopped by its PID. About 2 s and 120 MiB."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from fakes.private_postgres import free_port

TEST_URL_ENV = "RAGCOURT_TEST_CHROMA_URL"


def _wait_until_up(url: str, process: subprocess.Popen | None) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"chroma run exited with {process.returncode}")
        try:
            urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"no Chroma server answered at {url}")


def chroma_server() -> Iterator[str]:
    """The URL of a Chroma server for a test session (skipped, or failed in CI, when none can run)."""
    given = os.environ.get(TEST_URL_ENV)
    if given:
        yield given
        return
    executable = shutil.which("chroma")
    if executable is None:
        if os.environ.get("CI", "").lower() in ("true", "1"):
            pytest.fail("a Chroma server is needed in CI and `chroma` is not installed", pytrace=False)
        pytest.skip("no `chroma` executable (chromadb's server)")
    root = Path(tempfile.mkdtemp(prefix="ragcourt-chroma-"))
    port = free_port()
    with (root / "log").open("w") as log:
        process = subprocess.Popen([executable, "run", "--host", "127.0.0.1", "--port", str(port), "--path",
                                    str(root / "data")], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(url, process)
        yield url
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        shutil.rmtree(root, ignore_errors=True)
