"""examples/seed003.yaml reproduces seed 003's settings (issue 19, item 8), each against the seed's own numbers:
two different LLM judges, averaged, disagreements to review; an LLM element split; normal top 10; loose top 20
with no score cut-off, for questions under 60 % element coverage; the elements method."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from fixtures import FIXTURES

sys.path.insert(0, str(FIXTURES / "graph"))

from graph_fixtures import NeedleJudge, ScriptedSystem, make_context, ranked

from ragcourt.graphs.sample import build_sample_graph
from ragcourt.runs.models import check_model_specs
from ragcourt.schema import LOOSE, CheckKind, ElementStatus, Sample
from ragcourt.schema.config import NO_LLM_MODELS, Method, ReviewMode, load_config
from ragcourt.stores.records import RecordStore

PRESET = Path(__file__).resolve().parents[2] / "examples" / "seed003.yaml"
# The seed's numbers: "前 10 条扩大到前 20 条", "覆盖率低于六成", "两个不同的 LLM 各判一次并取平均".
NORMAL_TOP, LOOSE_TOP, COVERAGE_THRESHOLD, N_JUDGES = 10, 20, 0.6, 2


def test_the_preset_holds_the_seeds_settings() -> None:
    config = load_config(PRESET)
    check_model_specs(config, str(PRESET))  # every model spec parses
    assert config.methods == (Method.ELEMENTS,)
    assert len(config.judges) == N_JUDGES
    models = [j.model for j in config.judges]
    assert len(set(models)) == N_JUDGES and not set(models) & NO_LLM_MODELS  # two different LLMs
    assert config.decomposer not in NO_LLM_MODELS  # the seed splits the references with an LLM
    assert (config.escalate_below_agreement, config.review_mode) == (1.0, ReviewMode.DEFERRED)  # every split
    assert config.top_k == NORMAL_TOP
    assert config.top_k * config.loose_k_factor == LOOSE_TOP
    assert config.loose_coverage_threshold == COVERAGE_THRESHOLD
    assert config.score_threshold is None and not config.drop_pointer_elements


ELEMENTS = ("The limit is 5 million.", "Approval needs two signatures.", "Branches need not act.")
NEEDLES = {(CheckKind.ELEMENT_IN_CONTEXT, ELEMENTS[0]): "5 million", (CheckKind.ELEMENT_IN_ANSWER, ELEMENTS[0]): "5 million",
           (CheckKind.ELEMENT_IN_CONTEXT, ELEMENTS[1]): "two signatures",
           (CheckKind.ELEMENT_IN_ANSWER, ELEMENTS[1]): "two signatures",
           (CheckKind.ELEMENT_IN_CONTEXT, ELEMENTS[2]): "need not act",
           (CheckKind.ELEMENT_IN_ANSWER, ELEMENTS[2]): "need not act"}


async def test_the_preset_runs_the_normal_top_10_and_the_loose_top_20_without_a_cut_off(tmp_path: Path) -> None:
    """25 ranked chunks: the first element at rank 1, the second at rank 15, the third nowhere. Normal (top 10)
    coverage 1/3 < 0.6, so the loose run asks for 20 with no cut-off and finds the second: a retrieval gap."""
    config = load_config(PRESET)
    texts = [("The branch limit is 5 million.", 0.9)] + [(f"Filler {i}.", 0.8 - i / 100) for i in range(2, 15)]
    texts += [("Approval needs two signatures from managers.", 0.5)] + [(f"Filler {i}.", 0.4) for i in range(16, 26)]
    system = ScriptedSystem(ranked={"q": ranked("q", *texts)}, answers={"q": "The limit is 5 million."})
    judges = [NeedleJudge(j.judge_id, NEEDLES) for j in config.judges]
    sample = Sample(id="q", question="What is the branch limit?", reference_answer=" ".join(ELEMENTS))
    with RecordStore(tmp_path / "store.sqlite") as store:
        state = await build_sample_graph().ainvoke({"run_id": "seed003", "sample": sample},
                                                   context=make_context(store, config, judges, system))
        loose = {r.condition.key: r for r in store.get_retrievals("seed003", "q")}[LOOSE.key]
    assert system.retrieve_calls("q") == [(NORMAL_TOP, None), (LOOSE_TOP, None)]
    assert (len(loose.chunks), loose.score_threshold) == (LOOSE_TOP, None)
    diagnostics = state["diagnostics"]
    assert diagnostics.metric("element_coverage").value == pytest.approx(1 / 3)
    assert diagnostics.metric("element_answer_coverage").value == pytest.approx(1 / 3)  # it states the limit only
    assert [e.status for e in diagnostics.elements] == [
        ElementStatus.ANSWERED, ElementStatus.RETRIEVAL_GAP, ElementStatus.DOCUMENT_GAP]
