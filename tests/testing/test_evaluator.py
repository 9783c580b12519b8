"""assert_rag and RagEvaluator in process, on examples/multi_turn.jsonl (2 samples, precomputed answers, no
reference answer) with the lexical judge, no LLM call: completeness mt1 1.0, mt2 0.0 (mean 0.5); verifiableness
mt1 2/3, mt2 0 (its one claim 'The zoo is free as well.' is unsupported); element_coverage n/a on both."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import pytest
from fixtures import REPO

from ragcourt.analysis.gate import GateError
from ragcourt.data.formats import load_dataset
from ragcourt.runs.runner import RunLock, RunPaths
from ragcourt.runs.workspace import Workspace
from ragcourt.schema.config import EvalConfig
from ragcourt.systems import Precomputed
from ragcourt.testing import RagAssertionError, RagEvaluator, assert_rag

SAMPLES = list(load_dataset(REPO / "examples" / "multi_turn.jsonl"))


def test_many_samples_pass_on_their_mean_and_a_failure_explains_the_sample_below_it(tmp_path) -> None:
    evaluator = RagEvaluator(home=tmp_path, test_id="t::many")
    result = evaluator.assert_rag(SAMPLES, Precomputed(), {"completeness": 0.5}, judges=["lexical"])
    assert result.headline is not None and len(result.diagnostics) == 2
    with pytest.raises(RagAssertionError) as failed:
        evaluator.assert_rag(SAMPLES, Precomputed(), {"completeness": 0.6, "verifiableness": 0.1})
    message = str(failed.value)
    assert message.splitlines()[:2] == ["ragcourt: 1 of 2 figures failed over 2 sample(s)",
                                        "  FAIL completeness 0.500 < 0.600 (n=2, 0 unscored, 0 escalated)"]
    assert "  sample mt2: 'And the zoo?'" in message and "sample mt1" not in message  # mt1 has completeness 1
    assert "    completeness=0.000; verifiableness=0.000" in message
    assert "unsupported claims (not backed by the retrieved chunks) (1):\n      - 'The zoo is free as well.'" in message
    assert failed.value.result.run_id == result.run_id  # the same samples and jury: the same run


def test_a_metric_that_is_na_fails_with_its_reason_unless_allowed(tmp_path) -> None:
    evaluator = RagEvaluator(home=tmp_path)
    with pytest.raises(RagAssertionError, match=r"FAIL element_coverage n/a \(minimum 0.500\): 2 sample\(s\): "
                                                r"the sample has no reference answer"):
        evaluator.assert_rag(SAMPLES, Precomputed(), {"element_coverage": 0.5})
    evaluator.assert_rag(SAMPLES, Precomputed(), {"element_coverage": 0.5}, allow_na=True)


def test_a_misspelt_threshold_is_refused_before_anything_is_evaluated(tmp_path) -> None:
    with pytest.raises(GateError, match="unknown metric.s. completness; valid names: .*completeness"):
        assert_rag(SAMPLES, Precomputed(), {"completness": 0.5}, home=tmp_path)
    assert not Workspace(tmp_path).has_store()


@dataclass
class Broken(Precomputed):
    name: str = "broken"

    async def generate(self, sample, chunks, condition):
        raise RuntimeError("the app is down")


def test_a_sample_that_cannot_be_evaluated_fails_with_its_error(tmp_path) -> None:
    with pytest.raises(RagAssertionError) as failed:
        RagEvaluator(home=tmp_path).assert_rag(SAMPLES[:1], Broken())
    assert "ragcourt: 1 of 1 sample(s) could not be evaluated" in str(failed.value)
    assert "failed: " in str(failed.value) and "the app is down" in str(failed.value)


def test_each_test_and_version_is_its_own_run_and_the_same_one_on_a_rerun(tmp_path) -> None:
    first = RagEvaluator(home=tmp_path, test_id="a.py::x").evaluate(SAMPLES, Precomputed())
    again = RagEvaluator(home=tmp_path, test_id="a.py::x").evaluate(SAMPLES, Precomputed())
    other = RagEvaluator(home=tmp_path, test_id="a.py::y").evaluate(SAMPLES, Precomputed())
    newer = RagEvaluator(home=tmp_path, test_id="a.py::x").evaluate(SAMPLES, Precomputed(), version="v2")
    assert first.run_id == again.run_id
    assert len({first.run_id, other.run_id, newer.run_id}) == 3
    assert [d.created_at for d in again.diagnostics] == [d.created_at for d in first.diagnostics]  # from the store


def test_a_run_another_process_holds_is_waited_for(tmp_path) -> None:
    evaluator = RagEvaluator(home=tmp_path, test_id="t::locked", lock_wait_s=30)
    run_id = evaluator.run_id(EvalConfig(), SAMPLES, Precomputed())
    lock = RunLock(RunPaths(Workspace(tmp_path).run_dir(run_id)).lock).__enter__()  # as another worker holds it
    released = threading.Timer(1.0, lock.__exit__, args=(None, None, None))
    released.start()
    started = time.monotonic()
    result = evaluator.evaluate(SAMPLES, Precomputed())
    assert time.monotonic() - started >= 1.0 and result.run_id == run_id and len(result.diagnostics) == 2
    released.join()
