"""The empty answer: an answer that shows nothing (empty, spaces, zero-width or direction marks), from a dataset
file, a Sample of the Python API or a system under test, is one answer, "": the system's non-answer. It is
scored as stating nothing (0 where a figure counts what the answer states or gets right, n/a where a figure
asks how good its claims are), no decomposer is asked to find claims in it, and the run summary counts it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from typer.testing import CliRunner

import ragcourt
from ragcourt.cli import app
from ragcourt.schema import Chunk, Condition, Sample
from ragcourt.systems import Generation, Precomputed

CONTEXTS = (Chunk(id="acme", text="Ada Lovelace founded Acme.", title="Acme"),)
FIELDS = {"question": "Who founded Acme?", "reference_answer": "Ada Lovelace founded Acme.",
          "gold_answers": ("Ada Lovelace",), "gold_titles": ("Acme",), "contexts": CONTEXTS}
CONFIG = ragcourt.EvalConfig(methods=("qcare", "elements", "cuer"))
NOTHING = "\u200b \u200e"  # a zero-width space, a space and a direction mark: shows nothing
# What an answer that states nothing scores: no claim, so no sub-query covered and no element stated.
EMPTY_FIGURES = {"completeness": 0.0, "element_answer_coverage": 0.0, "soft_correctness": 0.0, "answer_f1": 0.0,
                 "exact_match": 0.0, "grounding_score": 0.0, "conciseness": None, "verifiableness": None}


@dataclass
class SaysNothing(Precomputed):
    """A system whose answer to `silent` is only invisible characters."""

    name: str = "says-nothing"
    silent: str = "system"

    async def generate(self, sample: Sample, chunks: Sequence[Chunk], condition: Condition) -> Generation:
        if sample.id == self.silent:
            return Generation(text=NOTHING)
        return await super().generate(sample, chunks, condition)


def figures(diagnostics) -> dict[str, float | None]:
    return {m.name: m.value for m in diagnostics.metrics if m.name in EMPTY_FIGURES}


def test_an_answer_that_shows_nothing_is_the_empty_answer_wherever_it_comes_from(tmp_path: Path) -> None:
    samples = [Sample(id="given", answer=NOTHING, **FIELDS), Sample(id="empty", answer="", **FIELDS),
               Sample(id="system", answer="Ada Lovelace founded Acme.", **FIELDS),
               Sample(id="answered", answer="Ada Lovelace founded Acme.", **FIELDS)]
    assert samples[0].answer == ""  # the Sample keeps the empty answer, as a dataset file's row does
    result = ragcourt.evaluate(samples, SaysNothing(), config=CONFIG, home=tmp_path, run_id="r")
    by_id = {d.sample_id: d for d in result.diagnostics}
    for sample_id in ("given", "empty", "system"):
        assert figures(by_id[sample_id]) == EMPTY_FIGURES, sample_id
        assert by_id[sample_id].metric("conciseness").na_reason == "the answer has no claims"
    assert figures(by_id["answered"])["completeness"] == 1.0
    assert result.to_frame().set_index("sample_id")["answer"]["system"] == ""  # stored as the empty answer
    assert result.headline is not None and result.headline.n_empty_answers == 3
    assert result.summary().attrs["n_empty_answers"] == 3

    printed = CliRunner().invoke(app, ["summary", "r", "--home", str(tmp_path)])
    assert printed.exit_code == 0, printed.output
    assert ("empty answers: 3 of 4 samples (the system's answer showed nothing), scored as stating nothing"
            in " ".join(printed.output.split()))


def test_a_dataset_answer_of_invisible_characters_scores_as_the_empty_answer(tmp_path: Path) -> None:
    rows = [{"id": "invisible", **FIELDS, "answer": NOTHING}, {"id": "empty", **FIELDS, "answer": ""}]
    for row in rows:
        row["contexts"] = [c.model_dump(include={"id", "text", "title"}) for c in CONTEXTS]
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    result = ragcourt.evaluate(dataset=path, system=Precomputed(), config=CONFIG, home=tmp_path / "home")
    assert [figures(d) for d in result.diagnostics] == [EMPTY_FIGURES, EMPTY_FIGURES]
    assert result.headline is not None and result.headline.n_empty_answers == 2
