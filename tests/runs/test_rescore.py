"""Replaying a finished run (after reviews) gives the run's own figures, whatever was edited since.

A person edits a reference's element list after the run: the run's figures must stay as they were (the edit
reaches a run through `ragcourt rerun --changed`). The replay used to split again through the frozen list,
met the edited elements, found no verdicts for them and scored them `unscored`.
Precomputed system with given contexts, lexical judge, sentence decomposer: every figure is token overlap.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragcourt.graphs.sample import build_sample_graph
from ragcourt.judging.decomposers import SentenceDecomposer
from ragcourt.runs.element_lists import export_lines, import_lines
from ragcourt.runs.models import Models
from ragcourt.runs.models import eval_context as _context
from ragcourt.runs.rerun import copy_rows
from ragcourt.runs.rescore import arescore_run
from ragcourt.runs.runner import DIAGNOSTICS_FILE, Runner, SamplesChangedError
from ragcourt.schema import Chunk, DecompositionKind, ElementStatus, Sample, SampleStatus
from ragcourt.schema.config import EvalConfig, Method
from ragcourt.stores.records import RecordStore
from ragcourt.systems import Precomputed

CONFIG = EvalConfig(methods=(Method.ELEMENTS, Method.QCARE))
WARRANTY = Sample(
    id="w1", question="How long is the anvil warranty?",
    reference_answer="The warranty lasts two years. Rust is covered.",
    contexts=(Chunk(id="c1", text="The anvil warranty lasts two years and rust is covered."),),
    answer="The warranty lasts two years.",
)
OTHER = Sample(id="w2", question="Where is Acme?", reference_answer="Acme is in Springfield.",
               contexts=(Chunk(id="c2", text="Acme is in Springfield."),), answer="Acme is in Springfield.")


@pytest.fixture
def store(tmp_path: Path):
    with RecordStore(tmp_path / "store.sqlite") as opened:
        yield opened


async def _evaluate(store: RecordStore, tmp_path: Path, run_id: str) -> dict:
    context = _context(CONFIG, Precomputed(), store, Models(CONFIG, store), None, None)
    runner = Runner(context, run_id, tmp_path / "runs" / run_id)
    return {d.sample_id: d async for d in runner.astream([WARRANTY, OTHER])}


def _edit_warranty_elements(store: RecordStore, run_id: str) -> None:
    line = export_lines(store, SentenceDecomposer(), store.get_samples(run_id))[0]
    edited = line.model_copy(update={"elements": ("Anvils last two years.", "Rust is covered.", "Dents too.")})
    assert import_lines(store, [edited]).sample_ids == ("w1",)


async def test_a_replay_after_an_element_edit_keeps_the_runs_figures(store, tmp_path):
    base = await _evaluate(store, tmp_path, "base")
    assert [(e.text, e.status) for e in base["w1"].elements] == [
        ("The warranty lasts two years.", ElementStatus.ANSWERED),
        ("Rust is covered.", ElementStatus.GENERATION_GAP),
    ]
    n_checks = store.count_checks("base")
    pinned = store.pinned_splits("base", "w1")
    assert {(p.kind, p.items) for p in pinned} >= {
        (DecompositionKind.ELEMENTS, ("The warranty lasts two years.", "Rust is covered.")),
        (DecompositionKind.CLAIMS, ("The warranty lasts two years.",)),
    }

    _edit_warranty_elements(store, "base")
    replayed = {d.sample_id: d for d in await arescore_run(store, "base", tmp_path / "runs" / "base")}

    assert store.count_checks("base") == n_checks
    for sample_id in ("w1", "w2"):
        assert replayed[sample_id].elements == base[sample_id].elements
        assert replayed[sample_id].metrics == base[sample_id].metrics
    assert not [t for t in store.verdict_tallies("base") if t.n_verdicts and str(t.status) == "unscored"]
    # diagnostics.jsonl lists each sample once, as it is now (the replay used to append both again)
    lines = (tmp_path / "runs" / "base" / DIAGNOSTICS_FILE).read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["sample_id"] for line in lines] == ["w1", "w2"]

    # a new run meets the edit; rows copied into a rerun keep the splits their base run used
    later = await _evaluate(store, tmp_path, "later")
    assert [e.text for e in later["w1"].elements] == ["Anvils last two years.", "Rust is covered.", "Dents too."]
    copy_rows(store, "base", "copy", ["w2"])
    assert store.pinned_splits("copy", "w2") == store.pinned_splits("base", "w2")
    assert store.pinned_splits("copy", "w1") == []


async def test_a_resumed_run_keeps_the_splits_its_finished_samples_used(store, tmp_path):
    """A sample of a run is pinned the first time it is split; pinning again never replaces it."""
    await _evaluate(store, tmp_path, "base")
    first = store.pinned_splits("base", "w1")
    elements = next(p for p in first if p.kind is DecompositionKind.ELEMENTS)
    await store.apin_split("base", "w1", elements.model_copy(update={"items": ("something else",)}))
    assert store.pinned_splits("base", "w1") == first


async def test_a_pin_of_another_text_is_replaced_by_the_split_used(store, tmp_path):
    """Killed after pinning, then the sample evaluated again under its id with the reference fixed: it runs with
    the new text's split, and that one must be pinned, or a later element edit would reach the finished run.
    The runner itself refuses a run over an edited dataset (issue 20); the live evaluator stores each request's
    sample under its id and evaluates it (`evaluate_one`), which is the path left to such a sample."""
    await _evaluate(store, tmp_path, "base")
    fixed = WARRANTY.model_copy(update={"reference_answer": "The warranty lasts three years."})
    context = _context(CONFIG, Precomputed(), store, Models(CONFIG, store), None, None)
    runner = Runner(context, "base", tmp_path / "runs" / "base")
    store.put(store.get_diagnostics("base", "w1")[0].model_copy(update={"status": SampleStatus.FAILED}))
    with pytest.raises(SamplesChangedError, match=r"of 1 of these samples \(w1\)"):
        [d async for d in runner.astream([fixed, OTHER])]
    store.put_samples("base", [fixed])
    await runner.evaluate_one(build_sample_graph(), fixed)
    pinned = {p.kind: p for p in store.pinned_splits("base", "w1")}
    assert pinned[DecompositionKind.ELEMENTS].items == ("The warranty lasts three years.",)
