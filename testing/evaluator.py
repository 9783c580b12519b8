"""`assert_rag` and the evaluator behind the `ragcourt_eval` fixture: one or many samples evaluated through the
graph with the Python API (ragcourt.runs.api.evaluate), their run means checked against minimums
(analysis.gate), and a failure that says why (testing.diagnosis).

Every evaluation is a run in a workspace: its id covers the configuration, the samples' contents, the
system's name, the test's node id and an optional `version` of the system, so running the tests again
resumes each run from the store (no LLM call at all); an edited sample, judge or threshold-free setting is
a new run, whose unchanged work still comes from the workspace's LLM cache. A live system that changed
while keeping its name is evaluated afresh only with a new `version` (e.g. the app's commit).

Workers of pytest-xdist share the workspace safely: each test is its own run (its own run lock), the
SQLite store takes concurrent writers (WAL, busy timeout), and a run locked by another process (two sessions
on one workspace) is waited for, then resumed from what that process stored.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragcourt.analysis.gate import check_thresholds, gate_summary, na_reasons
from ragcourt.runs.api import EvalResult, evaluate
from ragcourt.runs.runner import RunLockedError
from ragcourt.runs.workspace import DEFAULT_HOME, PathInput, Workspace, derived_run_id
from ragcourt.schema import Sample, SampleStatus, content_id
from ragcourt.schema.config import EvalConfig, JudgeSpec
from ragcourt.systems import RAGSystem
from ragcourt.testing.diagnosis import explain

LOCK_WAIT_S = 300.0  # how long a run locked by another process is waited for
LOCK_POLL_S = 0.5

SampleInput = Sample | Mapping[str, Any]
JudgeInput = str | JudgeSpec | Mapping[str, Any]


class RagAssertionError(AssertionError):
    """An `assert_rag` that failed; `result` is the evaluation, its message the diagnostics."""

    def __init__(self, message: str, result: EvalResult) -> None:
        super().__init__(message)
        self.result = result


def as_samples(samples: SampleInput | Sequence[SampleInput]) -> list[Sample]:
    """One sample or many, as Samples (a mapping is validated as a Sample, its errors naming the field)."""
    many = samples if isinstance(samples, Sequence) and not isinstance(samples, str | bytes) else [samples]
    out = [s if isinstance(s, Sample) else Sample.model_validate(s) for s in many]
    if not out:
        raise ValueError("assert_rag needs at least one sample")
    return out


def configured(config: EvalConfig | None, judges: Sequence[JudgeInput] | None) -> EvalConfig:
    """`config` (default EvalConfig()) with `judges` replacing its jury when given: 'lexical', 'semantic',
    'openai:MODEL@URL', a JudgeSpec or its mapping."""
    base = config or EvalConfig()
    if not judges:
        return base
    specs = [{"model": j} if isinstance(j, str) else j.model_dump() if isinstance(j, JudgeSpec) else dict(j)
             for j in judges]
    return base.with_overrides(judges=specs)


def current_test_id() -> str:
    """The running test's node id, as pytest sets it in $PYTEST_CURRENT_TEST ('' outside a test)."""
    current = os.environ.get("PYTEST_CURRENT_TEST", "")
    return current.rsplit(" (", 1)[0] if current else ""


@dataclass(frozen=True)
class RagEvaluator:
    """Evaluations bound to a workspace `home` and a test (`test_id`, its pytest node id), with default
    `judges` and `config` for its calls."""

    home: Path = DEFAULT_HOME
    test_id: str = ""
    judges: tuple[JudgeInput, ...] = ()
    config: EvalConfig | None = None
    lock_wait_s: float = LOCK_WAIT_S

    def run_id(self, config: EvalConfig, samples: Sequence[Sample], system: RAGSystem, version: str = "") -> str:
        """The run of these samples in this test: the same id on every re-run with the same inputs."""
        return f"pytest-{content_id(derived_run_id(config, samples, system.name), self.test_id, version)}"

    def evaluate(self, samples: SampleInput | Sequence[SampleInput], system: RAGSystem, *,
                 judges: Sequence[JudgeInput] | None = None, config: EvalConfig | None = None,
                 version: str = "", **options: Any) -> EvalResult:
        """Evaluate the samples with `system` (`options` go to ragcourt.evaluate: vectors, collection,
        check_endpoints); a run another process holds is waited for, then resumed."""
        settings = configured(config or self.config, judges or self.judges)
        return self.evaluate_configured(as_samples(samples), system, settings, version, **options)

    def evaluate_configured(self, samples: Sequence[Sample], system: RAGSystem, settings: EvalConfig,
                            version: str = "", **options: Any) -> EvalResult:
        """`evaluate` with the configuration complete (judges applied)."""
        run_id = self.run_id(settings, samples, system, version)
        deadline = time.monotonic() + self.lock_wait_s
        while True:
            try:
                return evaluate(samples, system, config=settings, home=self.home, run_id=run_id, **options)
            except RunLockedError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(LOCK_POLL_S)

    def assert_rag(self, samples: SampleInput | Sequence[SampleInput], system: RAGSystem,
                   thresholds: Mapping[str, float] | None = None, *, judges: Sequence[JudgeInput] | None = None,
                   config: EvalConfig | None = None, allow_na: bool = False, version: str = "",
                   **options: Any) -> EvalResult:
        """Evaluate, then fail (RagAssertionError) when a run mean is below its minimum in `thresholds`
        (over the config's `fail_under`; metric names as in the summary), is n/a (unless `allow_na`), or a
        sample could not be evaluated. The message explains each sample that pulled a figure down."""
        __tracebackhide__ = True  # pytest shows the test's line, not these frames
        settings = configured(config or self.config, judges or self.judges)
        wanted = {**settings.fail_under, **(thresholds or {})}
        check_thresholds(wanted, "assert_rag thresholds")  # before any evaluation: a misspelling costs nothing
        result = self.evaluate_configured(as_samples(samples), system, settings, version, **options)
        if result.headline is None:
            raise AssertionError(f"run {result.run_id}: evaluate returned no figures")
        missing = [row.name for row in result.headline.metrics if row.name in wanted and row.mean is None]
        failures = gate_summary(result.headline, wanted, allow_na=allow_na,
                                reasons=na_reasons(result.diagnostics, missing), diagnostics=result.diagnostics)
        if failures or any(d.status is SampleStatus.FAILED for d in result.diagnostics):
            escalated = [c for d in result.diagnostics for c in d.escalations]
            with Workspace(self.home).open_store() as store:
                checks = {c.id: c for c in store.get_checks(escalated)} if escalated else {}
            raise RagAssertionError(explain(result, failures, wanted, checks, str(self.home)), result)
        return result


def assert_rag(samples: SampleInput | Sequence[SampleInput], system: RAGSystem,
               thresholds: Mapping[str, float] | None = None, *, judges: Sequence[JudgeInput] | None = None,
               config: EvalConfig | None = None, allow_na: bool = False, version: str = "",
               home: PathInput | None = None, **options: Any) -> EvalResult:
    """`RagEvaluator.assert_rag` in the running test, in the workspace `home`: by default the pytest
    session's (`--ragcourt-workspace`, else under pytest's cache directory) when the plugin is loaded,
    else ./ragcourt-runs."""
    __tracebackhide__ = True
    evaluator = RagEvaluator(home=Path(home) if home is not None else session_home(), test_id=current_test_id())
    return evaluator.assert_rag(samples, system, thresholds, judges=judges, config=config, allow_na=allow_na,
                                version=version, **options)


def session_home() -> Path:
    """The pytest session's workspace when the plugin runs in this process, else the default workspace."""
    plugin = sys.modules.get("ragcourt.testing.plugin")  # loaded by pytest only: never imported from here
    found = plugin.session_workspace() if plugin is not None else None
    return found if found is not None else DEFAULT_HOME
