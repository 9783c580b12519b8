"""nodes/judges: which passes ask a sample's batches whole (issue 36, item 3)."""

from __future__ import annotations

import pytest

from ragcourt.nodes.judges import splits_mended
from ragcourt.nodes.state import SampleState
from ragcourt.schema import NORMAL, Claim, Decomposition, DecompositionKind, Element, SubQuery


def pinned(*kinds: DecompositionKind) -> tuple[Decomposition, ...]:
    return tuple(Decomposition(id=f"d-{kind}", kind=kind, source_text="text", items=("item",), prompt_hash="p",
                               model_id="m") for kind in kinds)


SUBQUERIES = (SubQuery(id="q", text="Who?", index=0),)
ELEMENTS = (Element(id="e", text="Ada.", index=0),)
CLAIMS = {NORMAL.key: (Claim(id="c", text="Ada.", index=0),)}
KINDS = DecompositionKind


@pytest.mark.parametrize(("state", "mended"), [
    # the sample's first pass in this run: nothing pinned, nothing judged before
    ({"subqueries": SUBQUERIES, "elements": ELEMENTS, "claims": CLAIMS}, False),
    # a resumed or replayed pass with every split it uses pinned: its stored verdicts stand
    ({"pinned_splits": pinned(KINDS.SUBQUERIES, KINDS.ELEMENTS, KINDS.CLAIMS), "subqueries": SUBQUERIES,
      "elements": ELEMENTS, "claims": CLAIMS}, False),
    # the claims split failed in the earlier pass and is made in this one
    ({"pinned_splits": pinned(KINDS.SUBQUERIES, KINDS.ELEMENTS), "subqueries": SUBQUERIES, "elements": ELEMENTS,
      "claims": CLAIMS}, True),
    # the sub-query split failed before; an element list emptied by the pointer rule still counts as made
    ({"pinned_splits": pinned(KINDS.CLAIMS), "subqueries": SUBQUERIES, "elements": (), "claims": CLAIMS}, True),
    # a split that fails again in this pass: nothing new to judge beside the stored verdicts
    ({"pinned_splits": pinned(KINDS.SUBQUERIES), "subqueries": SUBQUERIES}, False),
])
def test_a_pass_mends_a_split_when_it_uses_one_the_run_had_not_given_the_sample(state: SampleState,
                                                                                 mended: bool) -> None:
    assert splits_mended(state) is mended
