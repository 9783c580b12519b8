"""How the suite spreads over xdist workers (fakes/parallel.py): how many `-n auto` means, a module with a
module-scoped fixture kept on one worker, the slow tests handed out first with a longer timeout; and each
session's PostgreSQL database of its own (fakes/postgres_fixtures.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlsplit, urlunsplit

import pytest
from fakes.parallel import SLOW_TIMEOUT_S, WORKERS, names_files_only, pytest_xdist_auto_num_workers

pytest_plugins = ("pytester",)
TESTS = Path(__file__).resolve().parent


def config_for(directory: Path, *args: str) -> pytest.Config:
    return SimpleNamespace(args=list(args), invocation_params=SimpleNamespace(dir=directory))  # type: ignore[return-value]


def test_auto_is_in_process_for_named_files_and_workers_for_folders(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)
    (tmp_path / "tests").mkdir()
    for name in ("test_a.py", "test_b.py"):
        (tmp_path / "tests" / name).write_text("def test_x():\n    pass\n")
    one, two = "tests/test_a.py", "tests/test_b.py"
    assert names_files_only(config_for(tmp_path, one)) and names_files_only(config_for(tmp_path, f"{one}::test_x", two))
    assert pytest_xdist_auto_num_workers(config_for(tmp_path, one)) == 0
    assert pytest_xdist_auto_num_workers(config_for(tmp_path, "tests")) == WORKERS
    assert pytest_xdist_auto_num_workers(config_for(tmp_path, one, "tests")) == WORKERS
    assert pytest_xdist_auto_num_workers(config_for(tmp_path)) == WORKERS  # no argument: the testpaths
    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "2")
    assert pytest_xdist_auto_num_workers(config_for(tmp_path, "tests")) is None  # xdist's own hook reads it


MODULE_FIXTURE = """
import json, os, pytest

@pytest.fixture(scope="module")
def started():
    return os.getpid()

@pytest.mark.parametrize("n", range(6))
def test_shares(started, n):
    with open({out!r}, "a") as out:
        out.write(json.dumps(["shared", os.environ["PYTEST_XDIST_WORKER"], started]) + "\\n")
"""

PLAIN = """
import json, os, pytest

@pytest.mark.parametrize("n", range(6))
def test_plain(n):
    with open({out!r}, "a") as out:
        out.write(json.dumps(["plain", os.environ["PYTEST_XDIST_WORKER"]]) + "\\n")

@pytest.mark.slow
def test_long(request):
    with open({out!r}, "a") as out:
        timeout = request.node.get_closest_marker("timeout").args[0]
        out.write(json.dumps(["slow", os.environ["PYTEST_XDIST_WORKER"], timeout]) + "\\n")
"""


def test_a_module_fixture_is_made_once_on_one_worker_and_slow_tests_go_first(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]))  # fakes
    out = pytester.path / "order.jsonl"
    pytester.makepyfile(test_a_plain=PLAIN.format(out=str(out)), test_b_shared=MODULE_FIXTURE.format(out=str(out)))
    pytester.makeini("[pytest]\nmarkers =\n    slow: long\n")
    done = pytester.runpytest_subprocess("-p", "fakes.parallel", "-n", "2", "--dist", "loadgroup",
                                         "-p", "no:cacheprovider", "-p", "no:langsmith_plugin")
    done.assert_outcomes(passed=13)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    shared = [tuple(row[1:]) for row in rows if row[0] == "shared"]
    assert len(shared) == 6 and len(set(shared)) == 1  # one worker, one fixture for the module's six tests
    # collected last in its file, the slow test is the first its worker ran
    (slow_worker,) = [worker for kind, worker, *_ in rows if kind == "slow"]
    assert [kind for kind, worker, *_ in rows if worker == slow_worker][0] == "slow"
    assert [row[2] for row in rows if row[0] == "slow"] == [SLOW_TIMEOUT_S]  # not the ini's 300 s


def test_the_session_database_is_its_own_so_run_locks_do_not_meet_another_sessions(postgres_url: str) -> None:
    psycopg = pytest.importorskip("psycopg")
    server = urlunsplit(urlsplit(postgres_url)._replace(path="/postgres"))
    lock = "SELECT pg_try_advisory_lock(hashtextextended('ragcourt-run:same-run-id', 0))"
    with psycopg.connect(postgres_url) as ours, psycopg.connect(server) as other:
        assert ours.execute("SELECT current_database()").fetchone()[0].startswith("t_")
        assert other.execute(lock).fetchone()[0] is True  # another worker's run, in its own database
        assert ours.execute(lock).fetchone()[0] is True  # one database for both: False, the run "in use"
