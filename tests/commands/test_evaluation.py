"""The system the evaluating commands build (`run`, `rerun`, `noise`): the reference RAG retrieves as the run's
configuration says, BM25 for the cuer method (seed 004) and dense otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragcourt.commands.evaluation import REFERENCE, build_system, reference_system_of
from ragcourt.runs.models import Models
from ragcourt.runs.workspace import Workspace
from ragcourt.schema import Chunk
from ragcourt.schema.config import EvalConfig, Method, Retriever
from ragcourt.stores.records import RecordStore


@pytest.mark.parametrize(("config", "retriever"), [
    (EvalConfig(methods=(Method.CUER,)), Retriever.BM25),
    (EvalConfig(methods=(Method.CUER,), retriever=Retriever.DENSE), Retriever.DENSE),
    (EvalConfig(), Retriever.DENSE),
])
def test_the_reference_system_retrieves_as_the_run_is_configured(tmp_path: Path, config: EvalConfig,
                                                                  retriever: Retriever) -> None:
    workspace = Workspace(tmp_path)
    workspace.open_vectors().index("kb-docs", [Chunk(id="c1", text="Ada Lovelace founded Acme.")])
    with RecordStore(tmp_path / "store.sqlite") as store:
        models = Models(config, store)
        assert reference_system_of(workspace, "kb-docs")(models).retriever is retriever
        assert build_system(REFERENCE, workspace, models, "kb-docs").retriever is retriever
