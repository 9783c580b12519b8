"""Element lists: export, edit, import (validated), later runs use the edit; the pointer rule; RAGChecker.

Runs use the precomputed system with given contexts, the lexical judge and the sentence decomposer, so
everything below is decided by token overlap and worked out by hand in each test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragcourt.cli import app
from ragcourt.data.loaders import DatasetError, load_samples
from ragcourt.judging.decomposers import SentenceDecomposer
from ragcourt.metrics.values import MetricName
from ragcourt.runs.element_lists import current_elements, export_lines, import_lines, read_lines, write_lines
from ragcourt.runs.models import Models
from ragcourt.runs.models import eval_context as _context
from ragcourt.runs.runner import Runner
from ragcourt.runs.workspace import Workspace
from ragcourt.schema import Chunk, Decomposition, DecompositionKind, ElementStatus, Sample
from ragcourt.schema.config import EvalConfig, Method
from ragcourt.stores.records import RecordStore
from ragcourt.systems import Precomputed

CONFIG = EvalConfig(methods=(Method.ELEMENTS,))
WARRANTY = Sample(
    id="w1", question="How long is the anvil warranty?",
    reference_answer="The warranty lasts two years. See section 4. Rust is covered.",
    contexts=(Chunk(id="c1", text="The anvil warranty lasts two years and rust is covered."),),
    answer="The warranty lasts two years.",
)
OTHER = Sample(id="w2", question="Where is Acme?", reference_answer="Acme is in Springfield.",
               contexts=(Chunk(id="c2", text="Acme is in Springfield."),), answer="Acme is in Springfield.")

POINTER_ELEMENTS_DROPPED = MetricName.POINTER_ELEMENTS_DROPPED


async def evaluate(store: RecordStore, tmp_path: Path, run_id: str, config: EvalConfig = CONFIG,
                   samples: tuple[Sample, ...] = (WARRANTY, OTHER)):
    context = _context(config, Precomputed(), store, Models(config, store), None, None)
    runner = Runner(context, run_id, tmp_path / "runs" / run_id)
    return {d.sample_id: d async for d in runner.astream(samples)}


@pytest.fixture
def store(tmp_path: Path):
    with RecordStore(tmp_path / "store.sqlite") as opened:
        yield opened


async def test_export_edit_import_and_a_later_run_uses_the_edited_list(store, tmp_path):
    base = await evaluate(store, tmp_path, "base")
    # 3 sentence elements; "two years" and rust in the context, the pointer not (coverage 2/3 >= 0.6: no loose
    # run, so the pointer, missing from context and answer, stays undecided); only "two years" in the answer
    assert [(e.text, e.status) for e in base["w1"].elements] == [
        ("The warranty lasts two years.", ElementStatus.ANSWERED),
        ("See section 4.", ElementStatus.UNDECIDED),
        ("Rust is covered.", ElementStatus.GENERATION_GAP),
    ]
    lines = export_lines(store, SentenceDecomposer(), store.get_samples("base"))
    assert [line.sample_id for line in lines] == ["w1", "w2"]
    assert lines[0].elements == ("The warranty lasts two years.", "See section 4.", "Rust is covered.")
    assert lines[0].pointer_elements == ("See section 4.",) and lines[0].edited is False
    path = tmp_path / "elements.jsonl"
    write_lines(lines, path)

    unchanged = import_lines(store, read_lines(path))  # importing an unedited export changes nothing
    assert unchanged.changed == () and len(unchanged.unchanged) == 2

    edited = [lines[0].model_copy(update={"elements": ("The warranty lasts two years.", "Rust is covered.")}),
              lines[1]]
    write_lines(edited, path)
    result = import_lines(store, read_lines(path))
    assert result.sample_ids == ("w1",) and result.changed == (lines[0].decomposition_id,)
    stored = store.get_decomposition(lines[0].decomposition_id)
    assert stored is not None and stored.edited and stored.items == ("The warranty lasts two years.", "Rust is covered.")

    later = await evaluate(store, tmp_path, "later")
    assert [(e.text, e.status) for e in later["w1"].elements] == [
        ("The warranty lasts two years.", ElementStatus.ANSWERED),
        ("Rust is covered.", ElementStatus.GENERATION_GAP),
    ]
    # a machine split of the same text never overwrites the person's edit
    store.put(stored.model_copy(update={"items": ("x",), "edited": False}))
    assert store.get_decomposition(stored.id).items == stored.items


def _line(**changes) -> str:
    row = {"sample_id": "s", "reference_answer": "A. B.", "prompt_hash": "p", "model_id": "m", "elements": ["A."],
           "decomposition_id": Decomposition.make_id(DecompositionKind.ELEMENTS, "A. B.", "p", "m")}
    row.update(changes)
    return json.dumps({k: v for k, v in row.items() if v is not None})


@pytest.mark.parametrize(
    ("second_line", "field", "message"),
    [
        ("{not json", None, "not valid JSON"),
        ("[1, 2]", None, "expected a JSON object, got list"),
        (_line(elements=None), "elements", "is missing"),
        (_line(elements="A."), "elements", "must be a list of strings, got string"),
        (_line(elements={"0": "A."}), "elements", "must be a list of strings, got object"),
        (_line(elements=["ok", 3]), "elements[1]", "must be a string, got number"),
        (_line(elements=["ok", "  "]), "elements[1]", "is blank; delete it from the list instead"),
        (_line(sample_id=7), "sample_id", "must be a string, got number"),
        (_line(model_id=""), "model_id", "is empty"),
        (_line(edited="yes"), "edited", "must be true or false, got string"),
        (_line(colour="red"), "colour", "unknown field"),
        (_line(reference_answer="A. B. C."), "decomposition_id", "does not match reference_answer"),
        (_line(elements=["B."]), "elements", "other elements on line 1"),
    ],
)
def test_import_errors_name_file_line_and_field(tmp_path, second_line, field, message):
    path = tmp_path / "edited.jsonl"
    path.write_text(_line() + "\n" + second_line + "\n", encoding="utf-8")
    with pytest.raises(DatasetError) as caught:
        read_lines(path)
    assert (caught.value.file, caught.value.line, caught.value.field) == (str(path), 2, field)
    assert message in caught.value.message
    assert "tuple" not in str(caught.value)  # pydantic's words for the model, not the JSON the user wrote


def test_import_reports_every_bad_line_and_leaves_the_store_unchanged(tmp_path):
    """Line 1 is a valid edit: it must not be stored while lines 2-5 are bad."""
    home = tmp_path / "ws"
    original = Decomposition(id=Decomposition.make_id(DecompositionKind.ELEMENTS, "A. B.", "p", "m"),
                             kind=DecompositionKind.ELEMENTS, source_text="A. B.", items=("A.", "B."),
                             prompt_hash="p", model_id="m")
    with Workspace(home).open_store() as store:
        store.put(original)
        before = store.to_frame(Decomposition)
    path = tmp_path / "edited.jsonl"
    path.write_text("\n".join([
        _line(elements=["A."]),  # the edit (drops "B.")
        _line(elements="A. B."),
        "{not json",
        "",  # blank lines are skipped, and keep the numbering
        _line(elements=["A.", 3], colour="red"),
        _line(reference_answer="A. B. C."),
    ]) + "\n", encoding="utf-8")

    result = CliRunner().invoke(app, ["elements", "import", str(path), "--home", str(home)])

    assert result.exit_code == 2, result.output
    said = [" ".join(line.split()) for line in " ".join(result.output.split()).split("error: ")[1:]]
    assert said == [
        f"{path}:2: field 'elements': must be a list of strings, got string",
        f"{path}:3: not valid JSON: Expecting property name enclosed in double quotes (column 2)",
        f"{path}:5: field 'elements[1]': must be a string, got number",
        f"{path}:5: field 'colour': unknown field (allowed: sample_id, question, reference_answer, "
        "decomposition_id, prompt_hash, model_id, elements, edited, pointer_elements)",
        f"{path}:6: field 'decomposition_id': does not match reference_answer, prompt_hash and model_id: "
        "element lists are keyed by the reference text, so edit the reference in the dataset (then "
        "`ragcourt rerun --changed`), not here",
        f"4 bad lines in {path}; nothing was imported",
    ]
    assert "stored as edited" not in result.output
    with Workspace(home).open_store() as store:
        assert store.get_decomposition(original.id) == original
        assert store.to_frame(Decomposition).equals(before)


def test_a_failed_import_prints_at_most_fifty_problems_and_counts_the_rest(tmp_path):
    path = tmp_path / "edited.jsonl"
    path.write_text("[]\n" * 60, encoding="utf-8")
    result = CliRunner().invoke(app, ["elements", "import", str(path), "--home", str(tmp_path / "ws")])
    assert result.exit_code == 2
    said = " ".join(result.output.split())
    assert said.count("expected a JSON object, got list") == 50
    assert f"{path}:50:" in said and f"{path}:51:" not in said
    assert "... and 10 more problems" in said and f"60 bad lines in {path}; nothing was imported" in said


def test_an_empty_import_file_is_refused_without_a_count(tmp_path):
    path = tmp_path / "edited.jsonl"
    path.write_text("\n \n", encoding="utf-8")
    result = CliRunner().invoke(app, ["elements", "import", str(path), "--home", str(tmp_path / "ws")])
    assert result.exit_code == 2
    assert " ".join(result.output.split()) == f"error: {path}: file is empty"


def test_an_import_with_an_error_writes_nothing(tmp_path):
    home = tmp_path / "ws"
    path = tmp_path / "edited.jsonl"
    path.write_text(_line() + "\n" + _line(colour="red") + "\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["elements", "import", str(path), "--home", str(home)])
    assert result.exit_code == 2
    assert "edited.jsonl:2: field 'colour': unknown field" in " ".join(result.output.split())
    with Workspace(home).open_store() as store:
        assert store.to_frame(Decomposition).empty


async def test_pointer_rule_is_off_by_default_and_drops_and_reports_when_on(store, tmp_path):
    kept = await evaluate(store, tmp_path, "off")
    assert len(kept["w1"].elements) == 3 and kept["w1"].metric(POINTER_ELEMENTS_DROPPED) is None

    config = CONFIG.with_overrides(drop_pointer_elements=True)
    dropped = await evaluate(store, tmp_path, "on", config)
    assert [e.text for e in dropped["w1"].elements] == ["The warranty lasts two years.", "Rust is covered."]
    metric = dropped["w1"].metric(POINTER_ELEMENTS_DROPPED)
    assert (metric.value, metric.n) == (1.0, 3)
    assert dropped["w2"].metric(POINTER_ELEMENTS_DROPPED).value == 0.0
    # the stored list is untouched: the rule only filters what a run judges
    now = current_elements(store, SentenceDecomposer(), WARRANTY.reference_answer, drop_pointers=True)
    assert now.stored is not None and len(now.stored.items) == 3
    assert [e.text for e in now.dropped] == ["See section 4."]
    # element ids are the node's ids (kept elements keep their position in the frozen list)
    assert [e.id for e in now.elements] == [e.element_id for e in dropped["w1"].elements]


def test_cli_export_then_import(tmp_path):
    home = tmp_path / "ws"
    data = tmp_path / "samples.jsonl"
    data.write_text("\n".join(json.dumps(s.model_dump(mode="json")) for s in (WARRANTY, OTHER)) + "\n")
    runner = CliRunner()
    ran = runner.invoke(app, ["run", str(data), "--system", "precomputed", "--method", "elements",
                              "--run-id", "base", "--home", str(home)])
    assert ran.exit_code == 0, ran.output
    out = tmp_path / "elements.jsonl"
    exported = runner.invoke(app, ["elements", "export", "base", "--out", str(out), "--home", str(home)])
    assert exported.exit_code == 0, exported.output
    assert "wrote 2 element lists" in exported.output and "1 flagged as pointers" in exported.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    rows[0]["elements"].remove("See section 4.")
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    imported = runner.invoke(app, ["elements", "import", str(out), "--home", str(home)])
    assert imported.exit_code == 0, imported.output
    assert "1 element lists stored as edited, 1 unchanged" in imported.output
    assert "samples with a changed list: w1" in imported.output


def test_ragchecker_sample_runs_precomputed_with_long_references(tmp_path):
    """The bundled RAGChecker pairs as a dataset: long references split into several elements; without
    contexts every element is judged in the answer only, and the output says why the rest is undecided."""
    runner = CliRunner()
    data = tmp_path / "ragchecker.jsonl"
    converted = runner.invoke(app, ["ragchecker-samples", "--out", str(data)])
    assert converted.exit_code == 0, converted.output
    samples = load_samples(data).samples
    assert len(samples) == 40 and all(s.contexts is None and s.answer for s in samples)
    ran = runner.invoke(app, ["run", str(data), "--system", "precomputed", "--method", "elements", "--method",
                              "qcare", "--limit", "4", "--run-id", "rc", "--home", str(tmp_path / "ws")])
    assert ran.exit_code == 0, ran.output
    text = " ".join(ran.output.split())
    assert "(0 failed)" in text
    assert "gap shares: n/a" in text and "the system's retrieval is unknown" in text
    with Workspace(tmp_path / "ws").open_store() as store:
        diagnostics = store.get_diagnostics("rc")
    assert len(diagnostics) == 4
    assert all(len(d.elements) >= 3 for d in diagnostics)  # long references: several elements each
    statuses = {e.status for d in diagnostics for e in d.elements}
    assert statuses <= {ElementStatus.ANSWERED, ElementStatus.UNDECIDED} and ElementStatus.UNDECIDED in statuses
    for d in diagnostics:
        assert d.metric("element_coverage").value is None
        assert d.metric("element_coverage").na_reason.startswith("the retrieved chunks are unknown")
        assert d.metric("verifiableness").value is None and d.uncovered_subqueries == ()
        assert d.metric("completeness").value is not None
