"""An interrupted graph whose state holds our records resumes in another process, without serde warnings."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from ragcourt.schema import Chunk, Label, Sample, Verdict, VerdictStatus
from ragcourt.stores.checkpoints import async_sqlite_saver, schema_types, serializer, sqlite_saver

HERE = Path(__file__).parent
THREAD = {"configurable": {"thread_id": "t1"}}

SAMPLE = Sample(
    id="q1",
    question="Who wrote Dune?",
    gold_answers=("Frank Herbert",),
    gold_documents=(Chunk(id="c1", text="Dune is a 1965 novel by Frank Herbert.", title="Dune", rank=1),),
    metadata={"split": "dev"},
)


class State(TypedDict, total=False):
    sample: Sample
    verdict: Verdict
    decision: str


def judge(state: State) -> State:
    verdict = Verdict(
        check_id="chk1",
        judge_id="judge-a",
        status=VerdictStatus.OK,
        label=Label.YES,
        probabilities={Label.YES: 0.75, Label.NO: 0.25},
        rationale=f"asked: {state['sample'].question}",
    )
    return {"verdict": verdict}


def review(state: State) -> State:
    decision = interrupt({"check_id": state["verdict"].check_id})
    return {"decision": decision}


def build_graph(checkpointer):  # type: ignore[no-untyped-def]
    graph = StateGraph(State)
    graph.add_node("judge", judge)
    graph.add_node("review", review)
    graph.add_edge(START, "judge")
    graph.add_edge("judge", "review")
    graph.add_edge("review", END)
    return graph.compile(checkpointer=checkpointer)


# Resumes the graph in a fresh process and prints the final state plus every warning logged meanwhile.
RESUME_SCRIPT = """
import json, logging, sys
sys.path.insert(0, sys.argv[1])
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command
from test_checkpoints import THREAD, build_graph
from ragcourt.stores.checkpoints import sqlite_saver

warnings_seen = []
class Collect(logging.Handler):
    def emit(self, record):
        warnings_seen.append(record.getMessage())
logging.getLogger().addHandler(Collect(level=logging.WARNING))

saver = sqlite_saver(sys.argv[2])
if sys.argv[3] == "default-serde":
    saver = SqliteSaver(saver.conn, serde=JsonPlusSerializer())
final = build_graph(saver).invoke(Command(resume="accept"), THREAD)
print(json.dumps({
    "sample": final["sample"].model_dump(mode="json"),
    "sample_type": type(final["sample"]).__name__,
    "verdict": final["verdict"].model_dump(mode="json"),
    "verdict_type": type(final["verdict"]).__name__,
    "decision": final["decision"],
    "warnings": warnings_seen,
}))
"""


def run_to_interrupt(db: Path) -> None:
    saver = sqlite_saver(db)
    try:
        result = build_graph(saver).invoke({"sample": SAMPLE}, THREAD)
        assert result["__interrupt__"][0].value == {"check_id": "chk1"}
    finally:
        saver.conn.close()


def resume_in_new_process(db: Path, serde: str, strict: bool) -> dict:
    # Strict mode is fixed explicitly: under it LangGraph itself allows the types named in the state schema.
    env = {**os.environ, "LANGGRAPH_STRICT_MSGPACK": "true" if strict else "false"}
    done = subprocess.run(
        [sys.executable, "-c", RESUME_SCRIPT, str(HERE), str(db), serde],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_allow_list_names_every_record_and_enum() -> None:
    names = {cls.__name__ for cls in schema_types()}
    assert {"Sample", "Chunk", "Verdict", "Check", "Condition", "SampleDiagnostics", "Label"} <= names
    assert {"VerdictStatus", "ConditionKind", "Review", "ReviewAction", "RunInfo"} <= names
    allowed = serializer()._allowed_msgpack_modules
    assert ("ragcourt.schema", "Verdict") in allowed and ("ragcourt.schema", "Label") in allowed


@pytest.mark.parametrize("strict", [False, True], ids=["permissive", "strict"])
def test_resume_in_another_process_keeps_records_and_warns_nothing(tmp_path: Path, strict: bool) -> None:
    db = tmp_path / "graph.sqlite"
    run_to_interrupt(db)
    out = resume_in_new_process(db, "ragcourt-serde", strict)
    assert out["warnings"] == []
    assert out["sample_type"] == "Sample" and out["verdict_type"] == "Verdict"
    assert Sample.model_validate(out["sample"]) == SAMPLE
    verdict = Verdict.model_validate(out["verdict"])
    assert verdict.label is Label.YES
    assert verdict.probabilities == {Label.YES: 0.75, Label.NO: 0.25}
    assert verdict.rationale == "asked: Who wrote Dune?"
    assert out["decision"] == "accept"


def test_default_serde_would_warn(tmp_path: Path) -> None:
    """Control: the warning checked for above does appear without our allow-list."""
    db = tmp_path / "graph.sqlite"
    run_to_interrupt(db)
    out = resume_in_new_process(db, "default-serde", strict=False)
    assert any("unregistered type ragcourt.schema" in message for message in out["warnings"])


async def test_async_saver_round_trip(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from langgraph.types import Command

    db = tmp_path / "graph.sqlite"
    with caplog.at_level(logging.WARNING):
        async with async_sqlite_saver(db) as saver:
            graph = build_graph(saver)
            first = await graph.ainvoke({"sample": SAMPLE}, THREAD)
            assert first["__interrupt__"][0].value == {"check_id": "chk1"}
        async with async_sqlite_saver(db) as saver:
            final = await build_graph(saver).ainvoke(Command(resume="override"), THREAD)
    assert final["sample"] == SAMPLE
    assert final["verdict"].probabilities == {Label.YES: 0.75, Label.NO: 0.25}
    assert final["decision"] == "override"
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
