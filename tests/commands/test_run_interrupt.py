"""Ctrl-C during `ragcourt run`: one line says how many samples are stored and the command that resumes, the exit
code is 130, and that command resumes the run, saying once (not twice) what comes from the store."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

from ragcourt.commands.run import resume_command
from ragcourt.stores.records import RecordStore

N_SAMPLES = 60
INTERRUPT_AFTER = 5  # finished samples seen before the Ctrl-C: the rest take seconds, the signal arrives first
CLI = [sys.executable, "-c", "from ragcourt.cli import main; main()"]


def write_samples(path: Path) -> Path:
    rows = [{"id": f"s{i}", "question": f"Which city is the capital of country {i}?",
             "reference_answer": f"City {i} is the capital. It lies on river {i}.",
             "contexts": [f"City {i} is the capital of country {i}.", f"River {i} flows through the old town."],
             "answer": f"The capital is City {i}. The river is wide."} for i in range(N_SAMPLES)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_the_resume_command_is_the_one_given_naming_the_run() -> None:
    assert resume_command(["run", "my data.jsonl", "--home", "ws"], "run-1") == (
        "ragcourt run 'my data.jsonl' --home ws --run-id run-1")
    assert resume_command(["run", "d.jsonl", "--run-id", "mine"], "mine") == "ragcourt run d.jsonl --run-id mine"
    assert resume_command(["run", "d.jsonl", "--run-id=mine"], "mine") == "ragcourt run d.jsonl --run-id=mine"


def test_ctrl_c_prints_what_is_stored_and_the_command_that_resumes(tmp_path: Path) -> None:
    data, home = write_samples(tmp_path / "data.jsonl"), tmp_path / "ws"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}  # lines arrive as printed, so the signal comes mid-run
    args = ["run", str(data), "--system", "precomputed", "--home", str(home)]
    process = subprocess.Popen([*CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    seen = []
    assert process.stdout is not None
    for line in process.stdout:
        seen.append(line)
        if sum(line.startswith("✓") for line in seen) == INTERRUPT_AFTER:
            process.send_signal(signal.SIGINT)
            break
    rest, _ = process.communicate(timeout=120)
    assert process.returncode == 130, rest

    last = rest.strip().splitlines()[-1]
    found = re.fullmatch(rf"interrupted: (\d+) of {N_SAMPLES} samples of run (\S+) are stored \(a resume asks "
                         r"nothing of them again\); resume with: (.+)", last)
    assert found, rest
    stored, run_id, command = int(found[1]), found[2], found[3]
    with RecordStore(home / "store.sqlite") as store:
        assert stored == len(store.finished_sample_ids(run_id))
    assert INTERRUPT_AFTER <= stored < N_SAMPLES
    assert shlex.split(command) == ["ragcourt", *args, "--run-id", run_id]

    resumed = subprocess.run([*CLI, *shlex.split(command)[1:]], capture_output=True, text=True, env=env, timeout=300)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    told = [line for line in resumed.stdout.splitlines() if line.startswith("resuming run")]
    assert told == [f"resuming run {run_id}: {stored} of {N_SAMPLES} samples finished before come from the store "
                    "(marked 'stored'; nothing of them is asked again)"]
    assert resumed.stdout.count("(stored)") == stored
    with RecordStore(home / "store.sqlite") as store:
        assert len(store.finished_sample_ids(run_id)) == N_SAMPLES
