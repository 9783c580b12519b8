"""`ragcourt generate`: one question per corpus document from an LLM (the fake OpenAI server on 127.0.0.1),
the document kept as gold document; a seeded sample of documents; unusable replies reported, not invented."""

from __future__ import annotations

import json
import re
from pathlib import Path

from fakes.openai_server import ChatRequest, FakeOpenAIServer
from fakes.status_server import closed_port
from typer.testing import CliRunner

from ragcourt.cli import app
from ragcourt.data.loaders import load_samples
from ragcourt.data.question_sets import DOCUMENT_GAP_WARNING, pick_documents
from ragcourt.schema import Chunk
from ragcourt.stores.embeddings import HashingEmbedding
from ragcourt.stores.vectors import VectorStore

CORPUS = [
    Chunk(id="d1", title="Eiffel Tower", text="The Eiffel Tower was completed in 1889."),
    Chunk(id="d2", title="Broken", text="A document the fake model answers badly."),
    Chunk(id="d3", title="Danube", text="The Danube flows through ten countries."),
    Chunk(id="d4", text="Untitled note: the office opens at nine."),
]
DOCUMENT = re.compile(r"<<<DOCUMENT-[0-9a-f]+>>>\n(.*?)\n", re.DOTALL)


def write_question(request: ChatRequest) -> dict | str:
    user = next(m["content"] for m in request.messages if m["role"] == "user")
    first_line = DOCUMENT.search(user).group(1)
    if first_line == "Broken":
        return {"question": 42}  # not a string, twice: unscored after the repair attempt
    if first_line == "Danube":
        return {"question": "DOCUMENT-7b2b55e1"}  # what SmolLM2 wrote: valid JSON, no question
    return {"question": f"  What should I know about {first_line}?  "}


def index(home: Path) -> None:
    VectorStore.persistent(home / "chroma", HashingEmbedding()).index("docs", CORPUS)


def test_pick_documents_is_all_or_a_seeded_sample_in_id_order() -> None:
    assert [d.id for d in pick_documents(CORPUS[::-1], None, 0)] == ["d1", "d2", "d3", "d4"]
    assert [d.id for d in pick_documents(CORPUS, 10, 0)] == ["d1", "d2", "d3", "d4"]
    two = [d.id for d in pick_documents(CORPUS, 2, 5)]
    assert len(two) == 2 and two == sorted(two)
    assert [d.id for d in pick_documents(CORPUS[::-1], 2, 5)] == two  # input order does not matter
    assert {tuple(d.id for d in pick_documents(CORPUS, 2, s)) for s in range(20)} != {tuple(two)}  # seed matters


def test_generate_writes_one_question_per_document_with_it_as_gold(tmp_path: Path) -> None:
    home = tmp_path / "home"
    index(home)
    out = tmp_path / "questions.jsonl"
    with FakeOpenAIServer(builders={"GeneratedQuestion": write_question}) as server:
        spec = f"openai:fake-model@{server.base_url}"
        result = CliRunner().invoke(app, ["generate", "docs", "--out", str(out), "--home", str(home), "--model", spec])
        assert result.exit_code == 0, result.output
        assert server.count("/v1/chat/completions") == 4 + 1  # one per document, one repair for d2
    flat = " ".join(result.output.split())
    assert DOCUMENT_GAP_WARNING in flat
    assert "no question for document d2: parse_failure" in flat
    assert "no question for document d3: the model wrote no question (no question mark): 'DOCUMENT-7b2b55e1'" in flat
    assert "wrote 2 questions from 4 documents of 'docs'" in flat and "(2 failed)" in flat

    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert rows[0] == {
        "id": "gen:d1", "question": "What should I know about Eiffel Tower?", "gold_titles": ["Eiffel Tower"],
        "gold_documents": [{"id": "d1", "text": "The Eiffel Tower was completed in 1889.", "title": "Eiffel Tower"}],
        "metadata": {"generated_by": spec, "prompt": rows[0]["metadata"]["prompt"],
                     "source_document": "d1"},
    }
    assert rows[0]["metadata"]["prompt"].startswith("generate_question@")
    samples = load_samples(out).samples  # `ragcourt run` reads the file back
    assert [s.id for s in samples] == ["gen:d1", "gen:d4"]
    untitled = samples[1]
    assert untitled.question == "What should I know about Untitled note: the office opens at nine.?"
    assert (untitled.gold_titles, untitled.gold_documents[0].id, untitled.gold_documents[0].title) == ((), "d4", None)


def test_generate_a_seeded_sample_and_a_missing_collection(tmp_path: Path) -> None:
    home = tmp_path / "home"
    index(home)
    out = tmp_path / "two.jsonl"
    with FakeOpenAIServer(builders={"GeneratedQuestion": write_question}) as server:
        spec = f"openai:fake-model@{server.base_url}"
        result = CliRunner().invoke(app, ["generate", "docs", "--out", str(out), "--home", str(home), "--model", spec,
                                          "--n", "2", "--seed", "7"])
        assert result.exit_code == 0, result.output
        missing = CliRunner().invoke(app, ["generate", "nope", "--out", str(out), "--home", str(home),
                                           "--model", spec])
    expected = [f"gen:{d.id}" for d in pick_documents(CORPUS, 2, 7) if d.id not in ("d2", "d3")]  # d3: no question
    assert expected == ["gen:d1"]
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == expected
    assert missing.exit_code == 2 and "no chromadb collection 'nope'" in missing.output


def test_generate_that_writes_no_question_exits_1_with_the_first_cause_and_leaves_no_file(tmp_path: Path) -> None:
    """A server that is not there: asked once before anything (exit 2, one line); unasked, every document fails,
    and that is exit 1 with the first failure's cause, not "wrote 0 questions" and exit 0 over an empty file
    that `ragcourt run` would then read as a set of no questions."""
    home = tmp_path / "home"
    index(home)
    out = tmp_path / "questions.jsonl"
    port = closed_port()
    spec = f"openai:fake-model@http://127.0.0.1:{port}/v1"
    asked = CliRunner().invoke(app, ["generate", "docs", "--out", str(out), "--home", str(home), "--model", spec])
    assert asked.exit_code == 2, asked.output
    assert asked.output.splitlines() == [
        f"error: the question writer cannot use http://127.0.0.1:{port}/v1/models: connection refused"]
    unasked = CliRunner().invoke(app, ["generate", "docs", "--out", str(out), "--home", str(home), "--model", spec,
                                       "--no-check-endpoints"])
    assert unasked.exit_code == 1, unasked.output
    last = unasked.output.splitlines()[-1]
    assert last.startswith(f"error: {spec} wrote no question: all 4 documents failed; the first, d1: error: "
                           "connection refused"), last
    assert last.endswith(f"; {out} was not written")
    assert not out.exists()
