"""examples/own_data/ is what its build script makes from the bundled HotpotQA sample, and ragcourt reads it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from fixtures import REPO

from ragcourt.data.loaders import load_corpus_file, load_samples

OWN_DATA = REPO / "examples" / "own_data"
FILES = ("corpus.jsonl", "questions.jsonl", "answers.jsonl", "systems/reads_three.jsonl", "systems/reads_one.jsonl",
         "systems/closed_book.jsonl")


def test_the_shipped_files_are_what_the_build_script_writes(tmp_path: Path) -> None:
    subprocess.run([sys.executable, str(OWN_DATA / "build.py"), str(tmp_path)], check=True, timeout=120)
    assert [name for name in FILES if (tmp_path / name).read_bytes() != (OWN_DATA / name).read_bytes()] == []


def test_the_files_load_with_every_field_the_readme_names() -> None:
    corpus = list(load_corpus_file(OWN_DATA / "corpus.jsonl"))
    questions = load_samples(OWN_DATA / "questions.jsonl").samples
    answers = load_samples(OWN_DATA / "answers.jsonl").samples
    assert (len(corpus), len(questions), len(answers)) == (80, 8, 8)
    assert all(q.reference_answer and q.gold_answers and q.gold_titles and len(q.gold_documents) == 2
               for q in questions)
    assert all(a.answer and len(a.contexts or ()) == 3 for a in answers)
    # every gold document is in the corpus, so the reference RAG over it can retrieve it
    assert {d.text for q in questions for d in q.gold_documents} <= {c.text for c in corpus}
