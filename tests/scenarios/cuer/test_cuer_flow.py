"""CUE-R end to end through the graph: a scripted system that answers only from its gold chunk.

Two samples, each shown one gold chunk and one distractor (top_k 2); the corpus also holds one
unretrieved chunk; a random replacement is any corpus chunk not retrieved for the sample.
The system answers the gold answer with confidence 0.9 citing the gold chunk when the gold chunk is shown,
else "I don't know" with confidence 0.2 citing nothing. So, per sample:

  remove gold      -> "I don't know": d_soft -1, d_f1 -1, d_conf -0.7, trace 1 - |{}|/|{g}| = 1
  replace gold     -> the same flip
  duplicate gold   -> the same answer and trace: 0, 0, 0, 0
  remove / replace / duplicate the distractor -> 0, 0, 0, 0 (the answer does not depend on it)
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from ragcourt.analysis.cuer_tables import cuer_closed_book_of_run, cuer_counts, cuer_frame, cuer_totals
from ragcourt.judging.decomposers import SentenceDecomposer
from ragcourt.metrics import cuer
from ragcourt.nodes.state import EvalContext
from ragcourt.report.cuer_chart import BAR_HALF, cuer_utility_svg
from ragcourt.report.method_charts import CUER_CHART, write_method_charts
from ragcourt.runs.runner import Runner
from ragcourt.schema import NORMAL, Chunk, Condition, ConditionKind, Sample
from ragcourt.schema.config import DistractorPolicy, EvalConfig, JudgeSpec, Method, PerturbationSpec
from ragcourt.stores.embeddings import HashingEmbedding
from ragcourt.stores.records import RecordStore
from ragcourt.stores.vectors import VectorStore
from ragcourt.systems import Generation

FRANCE = Chunk(id="g1", text="Paris is the capital of France.", title="France", rank=1)
BANANA = Chunk(id="d1", text="Bananas are yellow.", title="Banana", rank=2)
WEATHER = Chunk(id="d2", text="It rains in April.", title="Weather", rank=1)
HAMLET = Chunk(id="g2", text="Hamlet was written by Shakespeare.", title="Hamlet", rank=2)
APPLE = Chunk(id="z9", text="Apples grow on trees.", title="Apple")  # in the corpus, never retrieved
SAMPLES = [
    Sample(id="q1", question="What is the capital of France?", gold_answers=("Paris",), gold_titles=("France",)),
    Sample(id="q2", question="Who wrote Hamlet?", gold_answers=("William Shakespeare", "Shakespeare"),
           gold_titles=("Hamlet",)),
]
RETRIEVED = {"q1": [FRANCE, BANANA], "q2": [WEATHER, HAMLET]}
ANSWER = {"q1": "Paris", "q2": "Shakespeare"}


@dataclass
class GoldReader:
    name: str = "gold-reader"

    async def retrieve(self, sample: Sample, k: int, score_threshold: float | None) -> list[Chunk]:
        return RETRIEVED[sample.id][:k]

    async def generate(self, sample: Sample, chunks: Sequence[Chunk], condition: Condition) -> Generation:
        used = tuple(dict.fromkeys(c.id for c in chunks if c.title in sample.gold_titles))
        if used:
            return Generation(text=ANSWER[sample.id], used_chunk_ids=used, confidence=0.9)
        return Generation(text="I don't know", used_chunk_ids=(), confidence=0.2)  # its trace: nothing used


def rounded(*values: float) -> tuple[float, ...]:
    """Deltas such as 0.2 - 0.9 = -0.7000000000000001, compared at 9 decimals."""
    return tuple(round(v, 9) for v in values)


@pytest.fixture
def store(tmp_path: Path) -> RecordStore:
    with RecordStore(tmp_path / "store.sqlite") as opened:
        yield opened


async def run(store: RecordStore, tmp_path: Path) -> EvalConfig:
    vectors = VectorStore.persistent(tmp_path / "chroma", HashingEmbedding())
    vectors.index("corpus", [FRANCE, BANANA, WEATHER, HAMLET, APPLE])
    config = EvalConfig(judges=(JudgeSpec(model="none"),), methods=(Method.CUER,), top_k=2,
                        perturbations=PerturbationSpec(kinds=(ConditionKind.REMOVE, ConditionKind.REPLACE,
                                                              ConditionKind.DUPLICATE),
                                                       distractor=DistractorPolicy.RANDOM, seed=1))
    context = EvalContext(config=config, system=GoldReader(), judges=[], decomposer=SentenceDecomposer(),
                          store=store, vectors=vectors, collection="corpus")
    async for _ in Runner(context, "cuer-run", tmp_path / "cuer-run").astream(SAMPLES):
        pass
    return config


async def test_removing_the_gold_chunk_flips_the_answer_and_removing_a_distractor_does_not(
        store: RecordStore, tmp_path: Path) -> None:
    config = await run(store, tmp_path)
    assert config.conditions == (ConditionKind.NORMAL, ConditionKind.CLOSED_BOOK)  # CUE-R's control
    answers = {(a.sample_id, a.condition.key): a for a in store.get_answers("cuer-run")}
    assert answers[("q1", "normal")].text == "Paris"
    assert answers[("q1", "remove:g1")].text == "I don't know"
    assert answers[("q1", "remove:d1")].text == "Paris"
    assert answers[("q1", "closed_book")].text == "I don't know"
    shown = {r.condition.key: [c.id for c in r.chunks] for r in store.get_retrievals("cuer-run", "q1")}
    # Random distractors: corpus chunks not retrieved for q1 (none of them is q1's gold).
    assert shown["replace:g1"][0] in {"d2", "g2", "z9"} and shown["replace:g1"][1] == "d1"
    assert shown["replace:d1"][0] == "g1" and shown["replace:d1"][1] in {"d2", "g2", "z9"}
    assert shown["duplicate:g1"] == ["g1", "g1", "d1"]

    # Per chunk (stored diagnostics), exactly the hand-computed deltas.
    q2 = next(d for d in store.get_diagnostics("cuer-run") if d.sample_id == "q2")
    effects = {(e.condition.key, e.chunk_title, e.chunk_is_gold): rounded(
        e.d_soft_correct, e.d_f1, e.d_confidence, e.trace_divergence) for e in q2.perturbations}
    assert effects == ({
        ("remove:g2", "Hamlet", True): (-1.0, -1.0, -0.7, 1.0),
        ("replace:g2", "Hamlet", True): (-1.0, -1.0, -0.7, 1.0),
        ("duplicate:g2", "Hamlet", True): (0.0, 0.0, 0.0, 0.0),
        ("remove:d2", "Weather", False): (0.0, 0.0, 0.0, 0.0),
        ("replace:d2", "Weather", False): (0.0, 0.0, 0.0, 0.0),
        ("duplicate:d2", "Weather", False): (0.0, 0.0, 0.0, 0.0),
    })

    # The run-level table: gold vs non-gold per perturbation kind, two chunks in each cell.
    frame = cuer_frame(store.get_diagnostics("cuer-run"))
    table = {(r.perturbation, r.chunk): rounded(r.d_soft_correct, r.d_f1, r.d_confidence, r.trace_divergence, r.rows)
             for r in frame.itertuples(index=False)}
    zero = (0.0, 0.0, 0.0, 0.0, 2)
    assert {(r.n_d_soft_correct, r.n_d_f1, r.n_d_confidence, r.n_trace_divergence) for r in frame.itertuples()} == {
        (2, 2, 2, 2)}  # every mean is over both chunks of its cell
    assert table == ({
        ("remove", "gold"): (-1.0, -1.0, -0.7, 1.0, 2), ("remove", "non-gold"): zero,
        ("replace", "gold"): (-1.0, -1.0, -0.7, 1.0, 2), ("replace", "non-gold"): zero,
        ("duplicate", "gold"): zero, ("duplicate", "non-gold"): zero,
    })

    # metrics.cuer.utility_table from the stored answers of q1 says the same per kind and gold status.
    def outcome(answer):
        return cuer.Outcome.score(answer.condition, answer.text, SAMPLES[0].gold_answers, answer.confidence,
                                  answer.used_chunk_ids)

    q1 = {key: a for (sid, key), a in answers.items() if sid == "q1"}
    utility = cuer.utility_table(outcome(q1[NORMAL.key]), [outcome(a) for k, a in q1.items() if k != NORMAL.key],
                                 {"g1": "France", "d1": "Banana"}, SAMPLES[0].gold_titles)
    by_group = {(str(a.kind), a.chunk_is_gold): rounded(a.n, a.d_soft_correct.value, a.trace_divergence.value)
                for a in utility.aggregates}
    assert by_group == ({
        ("remove", True): (1, -1.0, 1.0), ("remove", False): (1, 0.0, 0.0),
        ("replace", True): (1, -1.0, 1.0), ("replace", False): (1, 0.0, 0.0),
        ("duplicate", True): (1, 0.0, 0.0), ("duplicate", False): (1, 0.0, 0.0),
        ("closed_book", None): (1, -1.0, 1.0),  # the control: no chunk, the same flip
    })


async def test_the_utility_chart_draws_the_flip_and_is_written_to_the_run_directory(
        store: RecordStore, tmp_path: Path) -> None:
    config = await run(store, tmp_path)
    diagnostics = sorted(store.get_diagnostics("cuer-run"), key=lambda d: d.sample_id)
    root = ET.fromstring(cuer_utility_svg(diagnostics))
    texts = ["".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "remove: mean soft change gold -1.00 (n=2), non-gold +0.00 (n=2); 4 chunks" in texts
    assert "duplicate: mean soft change gold +0.00 (n=2), non-gold +0.00 (n=2); 4 chunks" in texts
    # from the diagnostics alone: the n of the chart, no judged checks; failed / unavailable answers not read
    assert texts[2] == cuer_totals(cuer_counts(diagnostics))[0] == (
        "n=12 perturbed answers (12 with a soft-correctness value to compare with the normal answer, 4 of them "
        "changed); no judged checks: unscored/escalated checks do not apply")
    assert texts[3].startswith("not produced: failed not counted")
    bars = [r for r in root.iter("{http://www.w3.org/2000/svg}rect") if r.get("fill") == "#a04a6a"]
    assert len(bars) == 4 and {float(b.get("width")) for b in bars} == {float(BAR_HALF)}  # gold remove/replace
    assert sum(1 for t in texts if t.endswith("(gold)")) == 2

    written = write_method_charts(store, "cuer-run", config, tmp_path / "charts")
    assert written == {tmp_path / "charts" / CUER_CHART: None}
    chart = (tmp_path / "charts" / CUER_CHART).read_text()
    assert chart.startswith("<svg")  # with the run's answers read: none failed or unavailable
    assert "not produced: failed 0 (the system&#x27;s answer is unscored: no change) · unavailable 0" in chart


async def test_the_closed_book_control_is_a_row_of_the_table_and_the_chart(store: RecordStore, tmp_path: Path) -> None:
    """Seed 004's zero-retrieval control: the question alone gives "I don't know" (confidence 0.2, no chunk used)
    where the normal answers were right (confidence 0.9, citing the gold chunk): soft correctness and F1 1 -> 0,
    confidence -0.7, trace divergence 1 for both samples."""
    config = await run(store, tmp_path)
    control = cuer_closed_book_of_run(store, "cuer-run")
    assert (control.n, control.n_soft, control.reason) == (2, 2, None)
    assert (control.soft_closed, control.soft_normal, control.f1_closed, control.f1_normal) == (0.0, 1.0, 0.0, 1.0)
    assert control.note() == ("closed-book control (seed 004: the question alone, no context), n=2 samples (2 with "
                              "both answers scored): soft correctness 0.000 vs normal 1.000 (change -1.000); F1 "
                              "0.000 vs normal 1.000 (change -1.000)")
    frame = cuer_frame(store.get_diagnostics("cuer-run"), closed_book=control)
    last = frame.iloc[-1]
    assert (last.perturbation, last.chunk, last.rows) == ("closed_book", "none (no context)", 2)
    assert rounded(last.d_soft_correct, last.d_f1, last.d_confidence, last.trace_divergence) == (-1.0, -1.0, -0.7, 1.0)
    assert len(frame) == 7  # the six perturbation cells first, as before
    write_method_charts(store, "cuer-run", config, tmp_path / "charts")
    root = ET.fromstring((tmp_path / "charts" / CUER_CHART).read_text())
    texts = ["".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert control.note() in texts and "closed book (all chunks removed), n=2" in texts
    assert "mean soft -1.00 (closed 0.00 vs normal 1.00) F1 -1.00" in texts
