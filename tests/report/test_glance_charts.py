"""The at-a-glance pictures: gap attribution as one stacked bar per run and subgroup, per-metric distributions,
and the CUE-R utility heatmap, with hand-computed figures and escaped labels."""

from __future__ import annotations

import re
from html import unescape

from ragcourt.report.cuer_heatmap import cuer_heatmap_svg
from ragcourt.report.glance_charts import (
    distribution_svg,
    distributions,
    gap_attribution_svg,
    gap_rows,
    subgroups,
)
from ragcourt.schema import (
    Condition,
    ConditionKind,
    ElementOutcome,
    ElementStatus,
    MetricValue,
    PerturbationEffect,
    SampleDiagnostics,
)

PAYLOAD = "<script>window.pwned=1</script>"
S = ElementStatus


def _diag(sample_id: str, statuses: list[ElementStatus], coverage: float | None = None,
          perturbations: tuple[PerturbationEffect, ...] = ()) -> SampleDiagnostics:
    elements = tuple(ElementOutcome(element_id=f"{sample_id}-{i}", text="e", in_context=None, in_loose_context=None,
                                    in_answer=None, status=status) for i, status in enumerate(statuses))
    return SampleDiagnostics(run_id="r", sample_id=sample_id, question=f"Q {PAYLOAD}", elements=elements,
                             metrics=(MetricValue(name="element_coverage", value=coverage,
                                                  na_reason=None if coverage is not None else "no elements",
                                                  n_escalated=1),),
                             perturbations=perturbations)


def _texts(svg: str) -> list[str]:
    return [unescape(re.sub(r"<title>.*?</title>", "", t)) for t in re.findall(r"<text[^>]*>(.*?)</text>", svg, re.S)]


def test_gap_rows_per_run_and_per_subgroup():
    diagnostics = [_diag("a", [S.RETRIEVAL_GAP, S.ANSWERED]), _diag("b", [S.GENERATION_GAP, S.DOCUMENT_GAP]),
                   _diag("c", [S.RETRIEVAL_GAP, S.UNDECIDED])]
    metadata = {"a": {"answer": "span", "id": "1"}, "b": {"answer": "span", "id": "2"},
                "c": {"answer": "yes/no", "id": "3"}}
    # 2..8 distinct values make subgroups ("id" has 3 here); a key with one value does not
    assert set(subgroups(metadata)) == {"answer", "id"}
    assert subgroups({"a": {"k": "x"}, "b": {"k": "x"}}) == {}
    rows = gap_rows(diagnostics, {k: {"answer": v["answer"]} for k, v in metadata.items()})
    assert [r.label for r in rows] == ["whole run", "answer=span", "answer=yes/no"]
    whole, span, yes_no = rows
    assert (whole.missing, whole.n_elements, whole.n_undecided) == (4, 6, 1)
    svg = str(gap_attribution_svg(rows))
    texts = _texts(svg)
    # whole run: retrieval 2 of 4, generation 1, documents 1; span: one of each; yes/no: its one retrieval gap
    shares = [t for t in texts if t.endswith("%")]
    assert shares == ["50%", "25%", "25%", "33%", "33%", "33%", "100%"]
    assert "n=4 missing of 6 · split 0 · undecided 1" in texts
    assert (span.missing, yes_no.missing) == (3, 1)
    assert "n=1 missing of 2 · split 0 · undecided 1" in texts


def test_a_row_without_missing_elements_says_so_and_labels_are_escaped():
    rows = gap_rows([_diag("a", [S.ANSWERED])], {}, run_label=f"run {PAYLOAD}")
    svg = str(gap_attribution_svg(rows))
    assert "no decided element missing" in _texts(svg)
    assert "<script>" not in svg and "&lt;script&gt;" in svg


def test_distributions_bin_values_and_count_na():
    diagnostics = [_diag("a", [], 0.0), _diag("b", [], 0.55), _diag("c", [], 1.0), _diag("d", [], None)]
    (coverage,) = distributions(diagnostics, ["element_coverage"])
    assert coverage.values == (0.0, 0.55, 1.0) and coverage.n_na == 1 and coverage.n_escalated == 4
    svg = str(distribution_svg([coverage]))
    assert "element_coverage: mean 0.517" in _texts(svg)
    assert "n=3 · n/a 1 · unscored 0 · escalated 4" in _texts(svg)
    bins = re.findall(r"<title>element_coverage in \[([0-9.]+), ", svg)
    assert bins == ["0.0", "0.5", "0.9"]  # 1.0 falls in the last tenth
    (empty,) = distributions([_diag("d", [], None)], ["element_coverage"])
    assert "n/a: no question has a value" in _texts(str(distribution_svg([empty])))


def _removed(chunk: str, d_f1: float | None, gold: bool = False) -> PerturbationEffect:
    return PerturbationEffect(condition=Condition(kind=ConditionKind.REMOVE, chunk_id=chunk), chunk_title=PAYLOAD,
                              chunk_is_gold=gold, d_f1=d_f1, d_soft_correct=0.0)


def test_heatmap_has_one_cell_per_question_and_rank_with_the_utility():
    diagnostics = [_diag("q1", [], perturbations=(_removed("c1", -0.5, gold=True), _removed("c2", 0.25))),
                   _diag("q2", [], perturbations=(_removed("c3", None),))]
    ranks = {("q1", "c1"): 1, ("q1", "c2"): 2, ("q2", "c3"): 2}
    svg = str(cuer_heatmap_svg(diagnostics, ranks))
    texts = _texts(svg)
    assert "#1" in texts and "#2" in texts
    # utility = -d_f1: removing c1 cost 0.5 of F1 (it helped), removing c2 raised F1 by 0.25
    assert [t for t in texts if t in ("+0.50", "-0.25", "n/a")] == ["+0.50", "-0.25", "n/a"]
    assert "2 questions, 3 removed chunks (n/a 1); mean utility +0.12; full colour at |utility| 0.50" in texts[2]
    assert svg.count('stroke="#1d2330"') == 1  # the one gold chunk
    assert "<script>" not in svg
    assert "n/a: no chunk was removed" in str(cuer_heatmap_svg([_diag("q", [])], {}))
