"""One run directory, two processes, at the command line: while a live process holds the run's lock
(runner.RunLock, taken by a real second Python process here), `ragcourt run` with the same run id is
refused with exit code 2 and a message naming the holder; once that process is killed -9, its stale
lock is taken over and the run goes through. A lock file left empty (a process killed between creating
the file and writing its pid) is stale too. The runner-level test is tests/runs/test_runner.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragcourt.cli import app
from ragcourt.runs.runner import RunLock, RunLockedError
from ragcourt.stores.records import RecordStore

RUNNER = CliRunner()
SAMPLE = {"id": "q1", "question": "Where is the Acme headquarters?", "contexts": [{"id": "c1", "text":
          "Acme headquarters are in Springfield."}], "answer": "The headquarters is in Springfield."}
HOLD_LOCK = ("import sys, time\nfrom pathlib import Path\nfrom ragcourt.runs.runner import RunLock\n"
             "with RunLock(Path(sys.argv[1])):\n    print('held', flush=True)\n    time.sleep(120)\n")


def run_args(home: Path) -> list[str]:
    return ["run", str(home / "data.jsonl"), "--system", "precomputed", "--judge", "lexical", "--run-id", "r1",
            "--home", str(home)]


@pytest.mark.slow
def test_a_second_process_is_refused_and_a_killed_holders_lock_is_taken_over(tmp_path: Path) -> None:
    (tmp_path / "data.jsonl").write_text(json.dumps(SAMPLE) + "\n", encoding="utf-8")
    lock = tmp_path / "runs" / "r1" / "run.lock"
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(lock)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert lock.read_text() == str(holder.pid)

        refused = RUNNER.invoke(app, run_args(tmp_path))
        assert refused.exit_code == 2 and isinstance(refused.exception, SystemExit)
        assert "Traceback" not in refused.output
        message = " ".join(refused.output.split())
        assert message == (f"error: run directory {lock.parent} is in use by process {holder.pid}; wait for it "
                           "or stop it")
        with RecordStore(tmp_path / "store.sqlite") as store:
            assert store.get_diagnostics("r1") == []  # the refused process evaluated nothing
        assert lock.read_text() == str(holder.pid)  # and left the holder's lock alone

        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=30)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(timeout=30)
    assert holder.returncode == -signal.SIGKILL and lock.exists()  # a dead holder's lock is left behind

    taken_over = RUNNER.invoke(app, run_args(tmp_path))
    assert taken_over.exit_code == 0, taken_over.output
    assert "1 samples (0 failed)" in " ".join(taken_over.output.split())
    assert not lock.exists()  # released at the end of the run


def test_an_empty_lock_file_is_stale(tmp_path: Path) -> None:
    (tmp_path / "data.jsonl").write_text(json.dumps(SAMPLE) + "\n", encoding="utf-8")
    lock = tmp_path / "runs" / "r1" / "run.lock"
    lock.parent.mkdir(parents=True)
    lock.write_text("")
    result = RUNNER.invoke(app, run_args(tmp_path))
    assert result.exit_code == 0, result.output
    assert not lock.exists()


def test_a_second_lock_in_the_same_process_is_refused_until_the_first_is_released(tmp_path: Path) -> None:
    path = tmp_path / "run" / "run.lock"
    with RunLock(path):
        with pytest.raises(RunLockedError, match=f"in use by process {os.getpid()}"):
            RunLock(path).__enter__()
        assert path.read_text() == str(os.getpid())
    assert not path.exists()
    with RunLock(path):
        assert path.exists()


def test_a_refused_resume_says_only_that_it_was_refused(tmp_path: Path) -> None:
    """Issue 20, item 7: a finished run whose directory is in use used to print "resuming run r1: 1 of 1 samples
    ... come from the store" before the refusal. What a run takes from the store is said once it holds the lock."""
    (tmp_path / "data.jsonl").write_text(json.dumps(SAMPLE) + "\n", encoding="utf-8")
    assert RUNNER.invoke(app, run_args(tmp_path)).exit_code == 0
    lock = tmp_path / "runs" / "r1" / "run.lock"
    with RunLock(lock):
        refused = RUNNER.invoke(app, run_args(tmp_path))
    assert refused.exit_code == 2
    assert " ".join(refused.output.split()) == (
        f"error: run directory {lock.parent} is in use by process {os.getpid()}; wait for it or stop it")
    resumed = RUNNER.invoke(app, run_args(tmp_path))  # free again: now it resumes, and says so
    assert resumed.exit_code == 0
    assert "resuming run r1: 1 of 1 samples finished before come from the store" in " ".join(resumed.output.split())
