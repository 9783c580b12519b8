"""A private PostgreSQL cluster for tests: Debian's server binaries in a temp dir, on a free loopback port.

Never the system cluster: `initdb` makes a fresh one (trust auth, no fsync) owned by the `postgres` user when
we run as root (initdb refuses root), `pg_ctl` starts it on 127.0.0.1 only with its socket in the same temp
dir, and `stop()` ends that server by the PID in its postmaster.pid. About 4 s and 60 MiB.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

POSTGRES_USER = "postgres"


class PostgresUnavailableError(RuntimeError):
    """The server binaries are missing or the cluster did not start."""


def server_binaries() -> Path | None:
    """The directory of Debian's newest PostgreSQL server binaries, or None when none is installed."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(p.split("/")[4]))
    return Path(found[-1]).parent if found else None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PrivatePostgres:
    """`with PrivatePostgres() as pg: pg.url` - a started cluster and the URL of its `postgres` database."""

    def __init__(self) -> None:
        self.bin = server_binaries()
        self.root = Path(tempfile.mkdtemp(prefix="ragcourt-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self.pid: int | None = None

    @property
    def url(self) -> str:
        return f"postgresql://{POSTGRES_USER}@127.0.0.1:{self.port}/postgres"

    def _run(self, *command: str) -> None:
        # initdb refuses root: as root the cluster belongs to the postgres user
        as_user = ["runuser", "-u", POSTGRES_USER, "--"] if os.geteuid() == 0 else []
        done = subprocess.run([*as_user, *command], capture_output=True, text=True, timeout=60, check=False)
        if done.returncode != 0:
            raise PostgresUnavailableError(f"{' '.join(command)} failed: {done.stderr.strip() or done.stdout.strip()}")

    def start(self) -> PrivatePostgres:
        if self.bin is None:
            raise PostgresUnavailableError("no PostgreSQL server under /usr/lib/postgresql (apt-get install postgresql)")
        if os.geteuid() == 0:
            user = pwd.getpwnam(POSTGRES_USER)
            os.chown(self.root, user.pw_uid, user.pw_gid)
        self._run(str(self.bin / "initdb"), "-D", str(self.data), f"--username={POSTGRES_USER}", "--auth=trust",
                  "--no-sync", "--encoding=UTF8", "--locale=C.UTF-8")
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-o", options, "-l", str(self.root / "log"),
                  "-w", "-t", "30", "start")
        self.pid = int((self.data / "postmaster.pid").read_text().split()[0])
        return self

    def stop(self) -> None:
        """Fast shutdown of this cluster's postmaster (by its PID), then the temp dir goes."""
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGINT)
                deadline = time.monotonic() + 20
                while time.monotonic() < deadline:
                    os.kill(self.pid, 0)
                    time.sleep(0.05)
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.pid = None
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> PrivatePostgres:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *_: object) -> None:
        self.stop()


TEST_URL_ENV = "RAGCOURT_TEST_POSTGRES_URL"  # set by .ci/run, which starts one cluster for the whole CI run


def postgres_server() -> Iterator[str]:
    """The URL of a PostgreSQL server for a test session: RAGCOURT_TEST_POSTGRES_URL when given, else a private
    cluster started here and stopped after the session. Without PostgreSQL the tests skip, saying why, except
    in CI (CI=true), where they fail: a backend must not go untested there silently."""
    given = os.environ.get(TEST_URL_ENV)
    if given:
        yield given
        return
    cluster = PrivatePostgres()
    try:
        cluster.start()
    except PostgresUnavailableError as error:
        cluster.stop()
        if os.environ.get("CI", "").lower() in ("true", "1"):
            pytest.fail(f"PostgreSQL is needed in CI and did not start: {error}", pytrace=False)
        pytest.skip(f"PostgreSQL unavailable: {error}")
    try:
        yield cluster.url
    finally:
        cluster.stop()


@contextmanager
def private_database(server_url: str) -> Iterator[str]:
    """The URL of a new, empty database on the server (dropped on exit, its connections too), named after the
    xdist worker for whoever reads the server's list."""
    import psycopg

    name = f"t_{os.environ.get('PYTEST_XDIST_WORKER', 'main')}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    parts = urlsplit(server_url)
    try:
        yield urlunsplit(parts._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(server_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE {name} WITH (FORCE)")


@contextmanager
def schema_url(server_url: str) -> Iterator[str]:
    """A URL of the server whose search_path is a new, empty schema (dropped on exit)."""
    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    try:
        yield f"{server_url}{'&' if '?' in server_url else '?'}options=-csearch_path%3D{name}"
    finally:
        with psycopg.connect(server_url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {name} CASCADE")
