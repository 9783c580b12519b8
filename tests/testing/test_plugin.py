"""The pytest plugin, as a user runs it: pytest in a subprocess on examples/pytest/test_rag_with_pytest.py (one
case passes, one fails on purpose), plainly and under pytest-xdist, and a second session that resumes.

The failing case (lexical judge, no LLM): the answer 'Acme employs 300 people.' covers one of the reference's
two elements (element_coverage 1/2 = 0.5 < 0.8); the corpus says nothing of the founding year (a document gap),
and the question's one sub-query is not covered by the single retrieved chunk (completeness 0 < 0.8).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures import REPO

from ragcourt.runs.workspace import Workspace

EXAMPLE = REPO / "examples" / "pytest" / "test_rag_with_pytest.py"
DIAGNOSTICS = (
    "RagAssertionError: ragcourt: 2 of 2 figures failed over 1 sample(s)",
    "FAIL element_coverage 0.500 < 0.800 (n=1, 0 unscored, 0 escalated)",
    "FAIL completeness 0.000 < 0.800 (n=1, 0 unscored, 0 escalated)",
    "answer: 'Acme employs 300 people.'",
    "missing reference elements (where each was lost) (1):",
    "- 'Acme was founded in 1901.': document_gap",
    "sub-queries the retrieved chunks do not cover (1):",
)


def pytest_on(target: Path, cwd: Path, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", str(target), "-q", "-p", "no:randomly", *options],
                          cwd=cwd, capture_output=True, text=True, timeout=240)


def outcome(done: subprocess.CompletedProcess[str]) -> str:
    return done.stdout.strip().splitlines()[-1]


def runs_in(home: Path) -> dict[str, list[str]]:
    """run id -> its diagnostics' creation times (the same times: nothing was evaluated again)."""
    with Workspace(home).open_store() as store:
        return {run: [d.created_at.isoformat() for d in store.get_diagnostics(run)]
                for run in sorted(r.run_id for r in store.list_runs())}


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_example_passes_one_case_and_fails_the_other_with_its_diagnostics(tmp_path) -> None:
    # -n 0: run from the repository, the example would take the suite's own `-n auto` (pyproject's addopts)
    done = pytest_on(EXAMPLE, REPO, "-n", "0", "--ragcourt-workspace", str(tmp_path / "ws"))
    assert "bringing up nodes" not in done.stdout
    assert done.returncode == 1, done.stdout + done.stderr
    assert outcome(done).startswith("1 failed, 1 passed"), done.stdout
    assert "FAILED examples/pytest/test_rag_with_pytest.py::test_the_founding_year_is_answered" in done.stdout
    for line in DIAGNOSTICS:
        assert line in done.stdout, line
    assert "ragcourt/testing/evaluator.py" not in done.stdout  # the traceback stops at the test's own line


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_under_xdist_each_worker_shares_the_workspace(tmp_path) -> None:
    done = pytest_on(EXAMPLE, REPO, "-n", "2", "--ragcourt-workspace", str(tmp_path / "ws"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert outcome(done).startswith("1 failed, 1 passed"), done.stdout
    assert "bringing up nodes" in done.stdout  # xdist's workers ran the tests
    for line in DIAGNOSTICS:
        assert line in done.stdout, line
    assert len(runs_in(tmp_path / "ws")) == 2  # one run per test, both in the one store


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_second_session_resumes_every_run_from_the_default_workspace(tmp_path) -> None:
    project = tmp_path / "project"  # a user's project: its own rootdir, the cache plugin on
    project.mkdir()
    shutil.copy(EXAMPLE, project / EXAMPLE.name)
    first = pytest_on(project, project)
    assert outcome(first).startswith("1 failed, 1 passed"), first.stdout + first.stderr
    home = project / ".pytest_cache" / "d" / "ragcourt"
    before = runs_in(home)
    assert len(before) == 2 and all(len(times) == 1 for times in before.values())
    second = pytest_on(project, project, "-n", "2")
    assert outcome(second).startswith("1 failed, 1 passed"), second.stdout
    assert runs_in(home) == before  # the same runs, nothing evaluated again: no judge or system call
