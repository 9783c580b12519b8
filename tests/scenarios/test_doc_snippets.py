"""Every Python snippet of the README and the docs pages runs, as a user would run it from the repository root.

A snippet is a ```python block. It runs in a fresh process in a scratch directory that holds a link to the
repository's examples/ (so the README's `examples/own_data/...` paths resolve as they do from the root). One
that defines `def test_...` is a pytest file and runs under pytest, with ragcourt's plugin, and must pass. A
snippet marked `<!-- snippet: langchain -->` on the line before it uses a LangChain app's parts by name
(`retriever`, `answer_chain`, `whole_app`, `app`, `question`, and a `questions.jsonl`): those come from
examples/langchain_app with a scripted chat model, the app's real retriever and its questions.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from fixtures import REPO

SNIPPET = re.compile(r"(?:<!-- snippet: (?P<kind>[\w-]+) -->\n)?```python\n(?P<code>.*?)```", re.S)
KINDS = {"langchain"}
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]

LANGCHAIN_APP = '''
import shutil
import sys

sys.path.insert(0, "examples/langchain_app")
import app as example
from langchain_core.language_models import FakeListChatModel

shutil.copy("examples/langchain_app/questions.jsonl", "questions.jsonl")
llm = FakeListChatModel(responses=["The Acme kettle has a two-year warranty."])
retriever = example.build_retriever(example.build_vectorstore(example.RagcourtEmbeddings()))
answer_chain = example.build_answer_chain(llm)
whole_app = app = example.build_app(retriever, llm)
question = "How long is the warranty of the Acme kettle?"
'''


@dataclass(frozen=True)
class Snippet:
    page: Path
    line: int
    kind: str | None
    code: str

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def snippets() -> list[Snippet]:
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in SNIPPET.finditer(text):
            line = text.count("\n", 0, match.start("code"))
            found.append(Snippet(page, line, match["kind"], match["code"]))
    return found


def test_the_pages_have_snippets_and_every_marker_is_known() -> None:
    found = snippets()
    assert {s.page.name for s in found} >= {"README.md", "python-api.md", "ci-and-pytest.md", "langchain-and-live.md"}
    assert {s.kind for s in found if s.kind} <= KINDS


@pytest.mark.timeout(600)
@pytest.mark.parametrize("snippet", snippets(), ids=lambda s: s.name)
def test_the_snippet_runs(snippet: Snippet, tmp_path: Path) -> None:
    (tmp_path / "examples").symlink_to(REPO / "examples", target_is_directory=True)
    prelude = LANGCHAIN_APP if snippet.kind == "langchain" else ""
    if re.search(r"^def test_", snippet.code, re.M):
        (tmp_path / "test_snippet.py").write_text(snippet.code, encoding="utf-8")
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_snippet.py",
                   "--ragcourt-workspace", str(tmp_path / "workspace")]
    else:
        command = [sys.executable, "-c", prelude + snippet.code]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=540)
    assert done.returncode == 0, f"{snippet.name} failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    if command[1:3] == ["-m", "pytest"]:
        assert re.search(r"\b1 passed\b", done.stdout), done.stdout
