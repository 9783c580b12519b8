"""Public human-labelled sets in their published formats, for the validity suite (`ragcourt calibrate --suite`).

- WiCE (Kamoi et al. 2023), `entailment_retrieval/claim/*.jsonl`: one claim a line with its cited page's
  sentences (`evidence`), the annotators' `label` (supported / partially_supported / not_supported) and
  `supporting_sentences` (lists of evidence indices). `load_wice`.
- HotpotQA distractor in the IRCoT processed format: a question a line with its ten `contexts`, the two gold
  ones `is_supporting`. `load_hotpotqa_paragraphs` (data.loaders.load_hotpotqa keeps only the gold
  paragraphs per question; the suite needs every paragraph with its label).
- XQuAD (Artetxe et al. 2020), SQuAD v1.1 format, one file per language (`xquad.LANG.json`): each question is
  relevant to the paragraph that holds its answer and not to the other paragraphs of its article. `load_xquad`.
- RAGChecker meta-evaluation: `human_labeled_data.json` is read by data.loaders.load_ragchecker_pairs; its
  `baseline_*.json` files (the scores of RAGChecker, RAGAS, TruLens, ARES, CRUD-RAG on the same instances:
  each instance's model1 / model2 carry an object named after the evaluator, metric -> score, NaN allowed)
  by `load_ragchecker_baseline`.

Every loader checks the whole file and reports every problem at once (DatasetErrors: file, line, field); a
file with one bad line gives nothing, since a partial set would skew agreement figures. Unknown fields are
ignored: the published files carry more than the suite reads.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError

from ragcourt.data.loaders import DatasetError, DatasetErrors, read_json_array_models, read_jsonl_models


class _Published(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


# --------------------------------------------------------------------------- WiCE


class WiceLabel(StrEnum):
    SUPPORTED = "supported"
    PARTIALLY_SUPPORTED = "partially_supported"
    NOT_SUPPORTED = "not_supported"

    @property
    def grade(self) -> float:
        """The label as a graded number (2 supported, 1 partially, 0 not) for correlations."""
        return {WiceLabel.SUPPORTED: 2.0, WiceLabel.PARTIALLY_SUPPORTED: 1.0, WiceLabel.NOT_SUPPORTED: 0.0}[self]

    @property
    def strict(self) -> bool:
        """Strict binarisation: supported vs the rest."""
        return self is WiceLabel.SUPPORTED

    @property
    def lenient(self) -> bool:
        """Lenient binarisation: supported or partially supported vs not supported."""
        return self is not WiceLabel.NOT_SUPPORTED


class WiceMeta(_Published):
    id: str = Field(min_length=1)
    claim_title: str | None = None
    claim_section: str | None = None
    claim_context: str | None = None


class WiceClaim(_Published):
    label: WiceLabel
    supporting_sentences: list[list[StrictInt]]
    claim: str = Field(min_length=1)
    evidence: list[str] = Field(min_length=1)
    meta: WiceMeta

    @property
    def evidence_text(self) -> str:
        """What the claim is checked against: the cited page's sentences, one a line."""
        return "\n".join(" ".join(sentence.split()) for sentence in self.evidence)


@dataclass(frozen=True)
class WiceItem:
    line: int
    claim: WiceClaim


def load_wice(path: Path) -> tuple[WiceItem, ...]:
    """The claims of a WiCE claim-level file. Besides the fields: claim ids (`meta.id`) are unique, and every
    supporting sentence index points into `evidence`."""
    first_line: dict[str, int] = {}

    def check(line: int, claim: WiceClaim) -> tuple[str | None, str] | None:
        seen = first_line.setdefault(claim.meta.id, line)
        if seen != line:
            return "meta.id", f"duplicate claim id '{claim.meta.id}' (first on line {seen})"
        for i, group in enumerate(claim.supporting_sentences):
            outside = [index for index in group if not 0 <= index < len(claim.evidence)]
            if outside:
                return (f"supporting_sentences[{i}]", f"index {outside[0]} is outside the {len(claim.evidence)} "
                                                       "evidence sentences")
        return None

    return tuple(WiceItem(line, claim) for line, claim in read_jsonl_models(Path(path), WiceClaim, check))


# --------------------------------------------------------------------------- HotpotQA (IRCoT format)


class HotpotParagraph(_Published):
    id: str | int | None = None
    title: str = Field(min_length=1)
    paragraph_text: str
    is_supporting: bool = Field(default=False, strict=True)

    @property
    def text(self) -> str:
        """The chunk a judge sees: the title, then the paragraph (the title often names the entity asked
        about, as in the retrieval corpus built from the same file)."""
        return f"{self.title}: {self.paragraph_text}"


class HotpotQuestion(_Published):
    question_id: str = Field(min_length=1)
    question_text: str = Field(min_length=1)
    contexts: list[HotpotParagraph] = Field(min_length=1)


@dataclass(frozen=True)
class HotpotItem:
    line: int
    question: HotpotQuestion


def load_hotpotqa_paragraphs(path: Path) -> tuple[HotpotItem, ...]:
    """Every question of a HotpotQA IRCoT file with all its paragraphs and their `is_supporting` labels.
    Besides the fields: question ids are unique and each question has a supporting paragraph (the positive
    labels)."""
    first_line: dict[str, int] = {}

    def check(line: int, question: HotpotQuestion) -> tuple[str | None, str] | None:
        seen = first_line.setdefault(question.question_id, line)
        if seen != line:
            return "question_id", f"duplicate question id '{question.question_id}' (first on line {seen})"
        if not any(p.is_supporting for p in question.contexts):
            return "contexts", "no paragraph has is_supporting: true (the relevance labels are missing)"
        return None

    return tuple(HotpotItem(line, q) for line, q in read_jsonl_models(Path(path), HotpotQuestion, check))


# --------------------------------------------------------------------------- XQuAD (SQuAD format)


class SquadQuestion(_Published):
    id: str = Field(min_length=1)
    question: str = Field(min_length=1)


class SquadParagraph(_Published):
    context: str = Field(min_length=1)
    qas: list[SquadQuestion]


class SquadArticle(_Published):
    title: str
    paragraphs: list[SquadParagraph] = Field(min_length=2)


class _SquadFile(_Published):
    data: list[SquadArticle] = Field(min_length=1)


@dataclass(frozen=True)
class XquadLanguage:
    """One language's file: its code (from `xquad.LANG.json`, else the file's stem) and its articles."""

    language: str
    file: str
    articles: tuple[SquadArticle, ...]


def load_xquad(path: Path) -> tuple[XquadLanguage, ...]:
    """The languages of an XQuAD folder (every `xquad.*.json` in it, by language code) or of one file. A file must
    be SQuAD's `{"data": [{title, paragraphs: [{context, qas: [{id, question}]}]}]}` with at least two paragraphs an
    article (the others are a question's distractors); question ids are unique within a file."""
    path = Path(path)
    files = sorted(path.glob("xquad.*.json")) if path.is_dir() else [path]
    if not files:
        raise DatasetErrors([DatasetError(path, "no xquad.LANG.json file in this folder")])
    return tuple(_xquad_file(file) for file in files)


def _xquad_file(path: Path) -> XquadLanguage:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise DatasetErrors([DatasetError(path, f"not a UTF-8 JSON document: {error}")]) from None
    try:
        parsed = _SquadFile.model_validate(document)
    except ValidationError as error:
        raise DatasetErrors([DatasetError(path, problem["msg"], field=_field_path(problem["loc"]))
                             for problem in error.errors()]) from None
    seen: dict[str, str] = {}
    problems = []
    for a, article in enumerate(parsed.data):
        for p, paragraph in enumerate(article.paragraphs):
            for q, question in enumerate(paragraph.qas):
                where = f"data[{a}].paragraphs[{p}].qas[{q}].id"
                if question.id in seen:
                    problems.append(DatasetError(path, f"duplicate question id '{question.id}' (first at "
                                                       f"{seen[question.id]})", field=where))
                seen.setdefault(question.id, where)
    if problems:
        raise DatasetErrors(problems)
    language = path.name.split(".")[1] if path.name.count(".") == 2 else path.stem
    return XquadLanguage(language, str(path), tuple(parsed.data))


def _field_path(location: tuple[int | str, ...]) -> str:
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in location).lstrip(".")


# --------------------------------------------------------------------------- RAGChecker baselines


_RESPONSE_FIELDS = frozenset({"model_name", "response", "critiques"})


class _BaselineSide(BaseModel):
    model_config = ConfigDict(frozen=True, extra="allow")  # the evaluator's own object, named after it


class _BaselineInstance(_Published):
    instance_id: int = Field(strict=True)
    model1: _BaselineSide
    model2: _BaselineSide


@dataclass(frozen=True)
class BaselineScores:
    """One evaluator's scores on the RAGChecker meta-evaluation instances: instance id -> metric ->
    (model1's score, model2's score); None where the file has NaN or null (meta_eval fills those with the
    median difference)."""

    file: str
    evaluator: str
    metrics: tuple[str, ...]
    scores: dict[int, dict[str, tuple[float | None, float | None]]]


class _Problem(Exception):
    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field, self.message = field, message


def _side_scores(side: _BaselineSide, where: str) -> tuple[str, dict[str, float | None]]:
    extra = {k: v for k, v in (side.model_extra or {}).items() if k not in _RESPONSE_FIELDS}
    if len(extra) != 1 or not isinstance(next(iter(extra.values())), dict):
        raise _Problem(where, "needs exactly one object of scores named after the evaluator (e.g. "
                              f"\"ragchecker\": {{\"overall_label\": 0.3}}), got fields {sorted(extra) or 'none'}")
    evaluator, raw = next(iter(extra.items()))
    scores: dict[str, float | None] = {}
    for metric, value in raw.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise _Problem(f"{where}.{evaluator}.{metric}", f"must be a number, got {value!r}")
        scores[metric] = None if value is None or math.isnan(value) else float(value)
    return evaluator, scores


def load_ragchecker_baseline(path: Path) -> BaselineScores:
    """A RAGChecker `baseline_*.json` file. Every instance must name the same evaluator and metrics on both
    sides, and instance ids are unique."""
    path = Path(path)
    found: dict[int, tuple[int, str, dict[str, float | None], dict[str, float | None]]] = {}

    def check(line: int, instance: _BaselineInstance) -> tuple[str | None, str] | None:
        try:
            name1, scores1 = _side_scores(instance.model1, "model1")
            name2, scores2 = _side_scores(instance.model2, "model2")
        except _Problem as problem:
            return problem.field, problem.message
        if name1 != name2 or set(scores1) != set(scores2):
            return "model2", f"scores '{name2}' {sorted(scores2)} differ from model1's '{name1}' {sorted(scores1)}"
        if instance.instance_id in found:
            return "instance_id", (f"duplicate instance {instance.instance_id} (first on line "
                                   f"{found[instance.instance_id][0]})")
        found[instance.instance_id] = (line, name1, scores1, scores2)
        return None

    read_json_array_models(path, _BaselineInstance, check)
    evaluators = {name for _, name, _, _ in found.values()}
    metric_sets = {tuple(sorted(s)) for _, _, s, _ in found.values()}
    if len(evaluators) != 1 or len(metric_sets) != 1:
        raise DatasetErrors([DatasetError(path, f"instances name different evaluators or metrics: "
                                                f"{sorted(evaluators)}, {sorted(metric_sets)}")])
    first = next(iter(found.values()))
    return BaselineScores(
        file=str(path), evaluator=first[1], metrics=tuple(first[2]),
        scores={i: {m: (s1[m], s2[m]) for m in s1} for i, (_, _, s1, s2) in found.items()},
    )
