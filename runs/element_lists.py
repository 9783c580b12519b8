"""Frozen element lists that a person can edit (seed 003): export to JSONL, edit, import back.

An element list is the stored `Decomposition` (kind elements) of a reference answer, content addressed
by (reference text, prompt hash, decomposer model). Export writes one line per sample of a run; import
validates every line first and reports every problem (file, line and field; nothing is stored while one
line is bad), then stores each changed list as an edited Decomposition under the SAME id, so
`frozen_split` hands it to every later run. A line whose elements equal the stored list is left alone:
importing an unedited export changes nothing.

Lines hold the keys that rebuild the id (prompt_hash, model_id), so a list whose split was never stored
(a failed split) can be imported too, and a line whose reference text was changed is refused: an
element list belongs to one reference text; change the dataset to change the reference.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from ragcourt.data.loaders import read_jsonl_models
from ragcourt.judging.decomposers import Decomposer
from ragcourt.metrics.elements import is_pointer_element
from ragcourt.schema import Decomposition, DecompositionKind, Element, Sample, content_id
from ragcourt.stores.records import RecordStore


def _kept_element(text: str) -> str:
    if not text.strip():
        raise ValueError("is blank; delete it from the list instead")
    return text.strip()


class ElementListLine(BaseModel):
    """One line of an element-list file. `pointer_elements` is informational (what the pointer rule
    would drop) and ignored on import; `edited` says whether a person already edited the stored list."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    sample_id: str = Field(min_length=1)
    question: str | None = None
    reference_answer: str = Field(min_length=1)
    decomposition_id: str = Field(min_length=1)
    prompt_hash: str = Field(min_length=1)
    model_id: str = Field(min_length=1)
    elements: tuple[Annotated[str, AfterValidator(_kept_element)], ...]
    edited: bool = Field(default=False, strict=True)
    pointer_elements: tuple[str, ...] = ()


@dataclass(frozen=True)
class CurrentElements:
    """The element list a run of this decomposer would use for a sample now.

    stored: the stored Decomposition (None when the split was never stored, e.g. it failed);
    elements: the elements as the decomposer node builds them (ids included), after the pointer rule;
    dropped: what the pointer rule left out (empty when the rule is off).
    """

    decomposition_id: str
    prompt_hash: str
    model_id: str
    stored: Decomposition | None
    elements: tuple[Element, ...]
    dropped: tuple[Element, ...]


def current_elements(
    store: RecordStore, decomposer: Decomposer, reference: str, *, drop_pointers: bool = False
) -> CurrentElements:
    """Look up the frozen list of `reference` exactly as `frozen_split` and the decomposer node do."""
    prompt_hash = decomposer.prompt_hash(DecompositionKind.ELEMENTS)
    record_id = Decomposition.make_id(DecompositionKind.ELEMENTS, reference, prompt_hash, decomposer.model_id)
    stored = store.get_decomposition(record_id)
    items = stored.items if stored is not None else ()
    built = tuple(Element(id=content_id(record_id, i, text), text=text, index=i) for i, text in enumerate(items))
    dropped = tuple(e for e in built if drop_pointers and is_pointer_element(e.text))
    return CurrentElements(record_id, prompt_hash, decomposer.model_id, stored,
                           tuple(e for e in built if e not in dropped), dropped)


def export_lines(store: RecordStore, decomposer: Decomposer, samples: Sequence[Sample]) -> list[ElementListLine]:
    """One line per sample with a reference answer; samples without one have no elements and are left out."""
    lines = []
    for sample in samples:
        if not sample.reference_answer:
            continue
        current = current_elements(store, decomposer, sample.reference_answer)
        stored = current.stored
        items = stored.items if stored is not None else ()
        lines.append(ElementListLine(
            sample_id=sample.id, question=sample.question, reference_answer=sample.reference_answer,
            decomposition_id=current.decomposition_id, prompt_hash=current.prompt_hash, model_id=current.model_id,
            elements=items, edited=stored.edited if stored is not None else False,
            pointer_elements=tuple(text for text in items if is_pointer_element(text)),
        ))
    return lines


def write_lines(lines: Sequence[ElementListLine], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for line in lines:
            handle.write(json.dumps(line.model_dump(mode="json"), ensure_ascii=False) + "\n")


def read_lines(path: Path) -> list[ElementListLine]:
    """Parse and validate every line of an element-list file; any problem raises DatasetErrors listing every
    problem of every line (file, line, field), so nothing is imported from a file with a bad line.

    Also refused: a line whose decomposition_id does not match its reference text, prompt hash and model
    (the reference was edited, or the line was copied from another list), and one id given twice with
    different elements.
    """
    first_seen: dict[str, tuple[int, tuple[str, ...]]] = {}

    def check(number: int, line: ElementListLine) -> tuple[str, str] | None:
        expected = Decomposition.make_id(DecompositionKind.ELEMENTS, line.reference_answer, line.prompt_hash,
                                         line.model_id)
        if expected != line.decomposition_id:
            return ("decomposition_id", "does not match reference_answer, prompt_hash and model_id: element "
                    "lists are keyed by the reference text, so edit the reference in the dataset (then "
                    "`ragcourt rerun --changed`), not here")
        seen = first_seen.setdefault(line.decomposition_id, (number, line.elements))
        if seen[1] != line.elements:
            return "elements", f"the same reference text has other elements on line {seen[0]}"
        return None

    return [line for _, line in read_jsonl_models(path, ElementListLine, check)]


@dataclass(frozen=True)
class ImportResult:
    changed: tuple[str, ...]  # decomposition ids stored as edited
    unchanged: tuple[str, ...]  # lines equal to the stored list (nothing written)
    sample_ids: tuple[str, ...]  # samples whose element list changed


def import_lines(store: RecordStore, lines: Sequence[ElementListLine]) -> ImportResult:
    """Store every changed list as an edited Decomposition under its id; all lines were validated first."""
    changed: dict[str, Decomposition] = {}
    unchanged: list[str] = []
    samples: list[str] = []
    for line in lines:
        stored = store.get_decomposition(line.decomposition_id)
        if stored is not None and stored.items == line.elements:
            if line.decomposition_id not in changed:
                unchanged.append(line.decomposition_id)
            continue
        samples.append(line.sample_id)
        changed[line.decomposition_id] = Decomposition(
            id=line.decomposition_id, kind=DecompositionKind.ELEMENTS, source_text=line.reference_answer,
            items=line.elements, prompt_hash=line.prompt_hash, model_id=line.model_id, edited=True,
        )
    if changed:
        store.put(*changed.values())
    return ImportResult(tuple(changed), tuple(dict.fromkeys(unchanged)), tuple(dict.fromkeys(samples)))
