"""The records every part of ragcourt shares.

All records are immutable pydantic models. Ids of checks and decompositions are content addressed
(a stable hash of kind and inputs), so the same work always lands on the same key: a re-run finds it,
a killed run loses nothing that was written. This module imports nothing of ours outside ragcourt.schema.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ragcourt.schema.enums import (
    CheckKind,
    ConditionKind,
    ConfidenceSource,
    DecompositionKind,
    ElementStatus,
    ElementVerdict,
    FigureFlag,
    Label,
    QueryType,
    ReconcileMethod,
    ReviewAction,
    SampleStatus,
    TraceSource,
    UnscoredReason,
    VerdictStatus,
    WholeTarget,
)
from ragcourt.schema.inputs import (
    Loc,
    id_problem,
    input_error,
    line_error,
    required_text_problem,
    shown_or_empty,
    shows_something,
    value_problem,
    value_problems,
)

SCHEMA_VERSION = 2  # the record store's (stores/records.py migrates a version 1 store on open)


def content_id(*parts: Any) -> str:
    """A stable 16-hex-digit id of JSON-serialisable parts (order matters, dict key order does not)."""
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def paragraph_id(title: str | None, text: str) -> str:
    """Stable short id of a paragraph: the same title and text always give the same id."""
    return content_id("paragraph", title, text)


def utcnow() -> datetime:
    return datetime.now(UTC)


class Record(BaseModel):
    """Base of every stored record: frozen, strict about unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")


SCORE_RANGE = (0.0, 10.0)  # a dimension score (seed 000: 0-10), from a judge or a person
# Unscored for these reasons, asking again may succeed: a re-run asks again. Parse failures and refusals are
# deterministic for the same prompt and model, so they are kept.
TRANSIENT_REASONS = frozenset({UnscoredReason.TIMEOUT, UnscoredReason.ERROR})


def failure_of(error: BaseException) -> tuple[UnscoredReason, str]:
    """The one reading of an exception as the reason and words of an unscored result."""
    reason = UnscoredReason.TIMEOUT if isinstance(error, TimeoutError) else UnscoredReason.ERROR
    return reason, f"{type(error).__name__}: {error}"


def reusable(result: Verdict | Answer) -> bool:
    """Whether a stored verdict or answer stands on a re-run: scored, or unscored for a lasting reason."""
    return result.status is VerdictStatus.OK or result.unscored_reason not in TRANSIENT_REASONS


class Chunk(Record):
    id: str
    text: str
    title: str | None = None
    source: str | None = None
    score: float | None = None
    rank: int | None = Field(default=None, description="1-based position in the retrieval that produced it")
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("title")
    @classmethod
    def _title_that_shows_nothing_is_empty(cls, title: str | None) -> str | None:
        return None if title is None else shown_or_empty(title)


def _required_text(text: str) -> str:
    problem = required_text_problem(text)
    if problem is not None:
        raise input_error(problem)
    return text


class Turn(Record):
    """One earlier turn of a conversation (seed 002, section 6: conversational RAG, MTRAG)."""

    role: Literal["user", "assistant"]
    content: str

    _content_shows_something = field_validator("content")(_required_text)


class Sample(Record):
    """One question to evaluate, with what the user gives about it. Its validators are the rules of input
    (schema.inputs) wherever a sample comes from: ids printable, required text showing something, optional
    text that shows nothing empty (an answer of only zero-width spaces is the empty answer ""), gold items that
    show nothing dropped, chunk ids unique per list, no NaN, infinity, lone surrogate or NUL anywhere."""

    id: str
    question: str
    reference_answer: str | None = None
    gold_answers: tuple[str, ...] = ()
    gold_titles: tuple[str, ...] = ()
    gold_documents: tuple[Chunk, ...] = ()
    contexts: tuple[Chunk, ...] | None = Field(
        default=None, description="precomputed retrieval of the system under test, if given"
    )
    answer: str | None = Field(default=None, description="precomputed answer of the system under test")
    metadata: dict[str, Any] = Field(default_factory=dict)
    history: tuple[Turn, ...] = Field(
        default=(), description="earlier turns of the conversation, oldest first; `question` is the latest user turn"
    )

    @field_validator("id")
    @classmethod
    def _printable_id(cls, sample_id: str) -> str:
        problem = id_problem(sample_id)
        if problem is not None:
            raise input_error(problem)
        return sample_id

    _question_shows_something = field_validator("question")(_required_text)

    @field_validator("reference_answer", "answer")
    @classmethod
    def _optional_text(cls, text: str | None) -> str | None:
        return None if text is None else shown_or_empty(text)

    @field_validator("gold_answers", "gold_titles")
    @classmethod
    def _gold_that_shows_something(cls, items: tuple[str, ...]) -> tuple[str, ...]:
        # An item that shows nothing is no gold answer or title: ["\u200b"] is no gold at all (n/a, not a miss).
        return tuple(item for item in items if shows_something(item))

    @model_validator(mode="after")
    def _usable_inputs(self) -> Sample:
        problems = self._problems()
        if problems:
            raise ValidationError.from_exception_data(
                type(self).__name__, [line_error(loc, message, given) for loc, message, given in problems])
        return self

    def _problems(self) -> list[tuple[Loc, str, Any]]:
        """Every problem the field validators leave: chunks' ids and texts, repeated chunk ids, and any value
        (texts, scores, metadata) that `value_problems` refuses. A loop over the fields, not over a dump: a
        store read validates every sample it returns."""
        scalars: list[tuple[Loc, Any]] = [(("id",), self.id), (("question",), self.question),
                                         (("reference_answer",), self.reference_answer), (("answer",), self.answer)]
        scalars += [(("history", index, "content"), turn.content) for index, turn in enumerate(self.history)]
        nested: list[tuple[Loc, Any]] = [(("gold_answers",), self.gold_answers), (("gold_titles",), self.gold_titles),
                                         (("metadata",), self.metadata)]
        problems: list[tuple[Loc, str, Any]] = []
        for field, chunks in (("gold_documents", self.gold_documents), ("contexts", self.contexts or ())):
            first_at: dict[str, int] = {}
            for index, chunk in enumerate(chunks):
                problem = id_problem(chunk.id)
                if problem is not None:
                    problems.append(((field, index, "id"), problem, chunk.id))
                problem = required_text_problem(chunk.text)
                if problem is not None:
                    problems.append(((field, index, "text"), problem, chunk.text))
                if chunk.id in first_at:
                    # Checks and metrics key chunks by id: a repeated id would merge two chunks into one and skew
                    # C-Prec and nDCG without a word. An id made from the text (no id given) says the text repeats.
                    made = chunk.id == paragraph_id(chunk.title, chunk.text)
                    why = "repeats the text (and title)" if made else f"repeats the id {chunk.id!r}"
                    loc: Loc = (field, index) if made else (field, index, "id")
                    problems.append((loc, f"{why} of {field}[{first_at[chunk.id]}]; give each chunk its own id, "
                                          "or drop the repeat", chunk.id))
                first_at.setdefault(chunk.id, index)
                scalars += [((field, index, name), getattr(chunk, name)) for name in ("id", "text", "title", "source",
                                                                                      "score")]
                if chunk.metadata:
                    nested.append(((field, index, "metadata"), chunk.metadata))
        for loc, value in scalars:
            problem = value_problem(value)
            if problem is not None:
                problems.append((loc, problem, value))
        for loc, value in nested:
            if value:
                problems.extend(value_problems(value, loc))
        return problems

    @property
    def content_hash(self) -> str:
        # A sample without history hashes as before the field existed, so its runs and reruns keep their ids.
        return content_id(self.model_dump(mode="json", exclude=None if self.history else {"history"}))


class Condition(Record):
    """What the generator is shown. Perturbations name the chunk they act on."""

    kind: ConditionKind
    chunk_id: str | None = None

    @model_validator(mode="after")
    def _chunk_only_for_perturbations(self) -> Condition:
        if self.kind.is_perturbation and not self.chunk_id:
            raise ValueError(f"condition {self.kind} needs a chunk_id")
        if not self.kind.is_perturbation and self.chunk_id:
            raise ValueError(f"condition {self.kind} takes no chunk_id")
        return self

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.chunk_id}" if self.chunk_id else str(self.kind)

    @classmethod
    def parse(cls, key: str) -> Condition:
        kind, _, chunk = key.partition(":")
        return cls(kind=ConditionKind(kind), chunk_id=chunk or None)

    def __str__(self) -> str:
        return self.key

    @property
    def context_target(self) -> str:
        """The target id of a check against everything this condition showed, e.g. `context:normal`."""
        return f"{WholeTarget.CONTEXT}:{self.key}"


NORMAL = Condition(kind=ConditionKind.NORMAL)
LOOSE = Condition(kind=ConditionKind.LOOSE)
CLOSED_BOOK = Condition(kind=ConditionKind.CLOSED_BOOK)
ORACLE = Condition(kind=ConditionKind.ORACLE)


class TokenUsage(Record):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    cached_calls: int = 0
    # Judge calls that asked again for what a long combined reply left out (batching `joint`), and the checks
    # they asked again: on verdicts, the first of a follow-up call carries the call. Left out of dumps when 0, so records
    # stored before keep their bytes.
    follow_up_calls: int = Field(default=0, exclude_if=lambda n: n == 0)
    follow_up_checks: int = Field(default=0, exclude_if=lambda n: n == 0)

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            calls=self.calls + other.calls,
            cached_calls=self.cached_calls + other.cached_calls,
            follow_up_calls=self.follow_up_calls + other.follow_up_calls,
            follow_up_checks=self.follow_up_checks + other.follow_up_checks,
        )


class Retrieval(Record):
    run_id: str
    sample_id: str
    condition: Condition
    chunks: tuple[Chunk, ...]
    k: int | None = None
    score_threshold: float | None = None
    made_by: str = Field(description="what produced these chunks, e.g. 'system.retrieve k=5'")


class Answer(Record):
    """The system's answer under one condition. `trace_source` says whether `used_chunk_ids` is the system's
    own report or the system reported no trace (then it is empty; the scorer may judge one). Rows stored before
    the field existed read as reported: that is what those systems claimed. `confidence_source` says whether
    `confidence` was reported or probed (PROBED with no confidence: the probe gave no usable answer); left out,
    it is read from `confidence` (reported when there is one, else none)."""

    run_id: str
    sample_id: str
    condition: Condition
    text: str
    used_chunk_ids: tuple[str, ...] = ()
    trace_source: TraceSource = TraceSource.REPORTED
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    confidence_source: ConfidenceSource = ConfidenceSource.NONE
    latency_s: float | None = None
    usage: TokenUsage = TokenUsage()
    status: VerdictStatus = VerdictStatus.OK
    unscored_reason: UnscoredReason | None = None
    error: str | None = None
    raw_output: str | None = None

    @field_validator("text")
    @classmethod
    def _empty_when_it_shows_nothing(cls, text: str) -> str:
        # The one empty answer: a system's answer of only spaces or zero-width characters is "", the answer that
        # states nothing (scored so, and counted in the run summary), as a dataset's answer of them is.
        return shown_or_empty(text)

    @model_validator(mode="before")
    @classmethod
    def _confidence_source_of_confidence(cls, data: Any) -> Any:
        if isinstance(data, dict) and "confidence_source" not in data and data.get("confidence") is not None:
            return {**data, "confidence_source": ConfidenceSource.REPORTED}
        return data

    @model_validator(mode="after")
    def _sources_match(self) -> Answer:
        if self.trace_source is TraceSource.JUDGED:
            raise ValueError("an answer's trace is the system's (reported) or none; a judged trace is the scorer's")
        if self.trace_source is TraceSource.NONE and self.used_chunk_ids:
            raise ValueError("an answer without a reported trace has no used chunk ids")
        if self.confidence is not None and self.confidence_source is ConfidenceSource.NONE:
            raise ValueError("an answer with a confidence needs its source (reported or probed)")
        return self

    @classmethod
    def failed(cls, error: BaseException, **fields: Any) -> Answer:
        """The answer of a system under test that raised on this sample: no text, the reason kept."""
        reason, detail = failure_of(error)
        return cls(text="", status=VerdictStatus.UNSCORED, unscored_reason=reason, error=detail, **fields)


# --------------------------------------------------------------------------- decompositions


class Element(Record):
    """One fact or condition of a reference answer (seed 003). Frozen once split."""

    id: str
    text: str
    index: int


class SubQuery(Record):
    id: str
    text: str
    index: int


class Claim(Record):
    id: str
    text: str
    index: int


class Decomposition(Record):
    """A split of one text, content addressed by (kind, source text, prompt hash, model).

    Elements are frozen: stored once and reused by every later run; `edited` marks a person's edit.
    """

    id: str
    kind: DecompositionKind
    source_text: str
    items: tuple[str, ...]
    query_type: QueryType | None = None
    prompt_hash: str
    model_id: str
    edited: bool = False
    status: VerdictStatus = VerdictStatus.OK
    unscored_reason: UnscoredReason | None = None

    @staticmethod
    def make_id(kind: DecompositionKind, source_text: str, prompt_hash: str, model_id: str,
                question: str | None = None, history: tuple[Turn, ...] = ()) -> str:
        """The split's key: what its prompt shows (a claims split shows the question as well as the answer; a
        split of a conversation's question or answer shows the history too, which only then joins the key)."""
        parts: list[Any] = [source_text] if question is None else [source_text, question]
        if history:
            parts.append([turn.model_dump(mode="json") for turn in history])
        return content_id("decomposition", kind, *parts, prompt_hash, model_id)


# --------------------------------------------------------------------------- checks and verdicts


class Check(Record):
    """One atomic question for the jury, content addressed by kind and inputs.

    subject: what is asked about (an element, claim, sub-query, or an answer for dimensions/pairwise);
    target: what it is checked against (a chunk, the context, the answer, a sub-query, answer B).
    """

    id: str = ""
    kind: CheckKind
    sample_id: str
    condition: Condition
    subject_id: str
    subject_text: str
    target_id: str
    target_text: str
    question: str = ""
    dimension: str | None = None
    reference: str | None = None
    evidence: str | None = Field(
        default=None, description="pairwise: the retrieved chunks the judge sees with both answers"
    )
    history: tuple[Turn, ...] = Field(
        default=(), description="the sample's conversation so far, for the kinds whose prompt shows it"
    )

    @model_validator(mode="after")
    def _content_address(self) -> Check:
        if self.id:  # loaded from the store: hashing every loaded check again cost 2.2 s of a 10,000-sample export
            return self
        # subject_id is not hashed: the same text is one check wherever it comes from (an unchanged element
        # of an edited reference keeps its verdicts); consumers look decisions up by subject text.
        parts: list[Any] = [
            "check", self.kind, self.sample_id, self.condition.key, self.subject_text,
            self.target_id, self.target_text, self.question, self.dimension, self.reference,
        ]
        if self.evidence is not None:  # only when given, so every check without evidence keeps its id
            parts.append(self.evidence)
        if self.history:  # likewise: a check of a sample without history keeps its id
            parts.append([turn.model_dump(mode="json") for turn in self.history])
        object.__setattr__(self, "id", content_id(*parts))
        return self


class Verdict(Record):
    check_id: str
    judge_id: str
    status: VerdictStatus
    label: Label | None = None
    score: float | None = None
    probabilities: dict[Label, float] | None = None
    rationale: str = ""
    raw_output: str | None = None
    unscored_reason: UnscoredReason | None = None
    detail: str | None = Field(default=None, description="why unscored, in words")
    prompt_id: str | None = None
    prompt_hash: str | None = None
    model_id: str | None = None
    usage: TokenUsage = TokenUsage()
    latency_s: float | None = None

    @model_validator(mode="after")
    def _unscored_has_reason(self) -> Verdict:
        if self.status is VerdictStatus.UNSCORED:
            if self.unscored_reason is None:
                raise ValueError("an unscored verdict needs a reason")
            if self.label is not None or self.score is not None:
                raise ValueError("an unscored verdict carries no label or score")
        elif self.label is None and self.score is None:
            raise ValueError("a scored verdict needs a label or a score")
        return self

    @property
    def scored(self) -> bool:
        return self.status is VerdictStatus.OK

    @classmethod
    def unscored(cls, check_id: str, judge_id: str, reason: UnscoredReason, detail: str | None = None,
                 **fields: Any) -> Verdict:
        """A verdict that decides nothing, with its reason: never a 0, a 1 or a NaN."""
        return cls(check_id=check_id, judge_id=judge_id, status=VerdictStatus.UNSCORED, unscored_reason=reason,
                   detail=detail, **fields)

    @classmethod
    def failed(cls, check_id: str, judge_id: str, error: BaseException) -> Verdict:
        """The verdict of a judge that raised instead of answering (a judge must never take a run down)."""
        reason, detail = failure_of(error)
        return cls.unscored(check_id, judge_id, reason, detail)


class Reconciled(Record):
    run_id: str
    check_id: str
    kind: CheckKind
    sample_id: str
    label: Label | None = None
    score: float | None = None
    probabilities: dict[Label, float] | None = None
    agreement: float | None = Field(default=None, description="share of scored judges agreeing with the label")
    method: ReconcileMethod
    n_scored: int
    n_unscored: int
    escalated: bool = False
    escalation_reason: str | None = None
    provisional: bool = Field(default=False, description="escalated and not yet decided by a person")
    split: bool = Field(
        default=False,
        description="the scored judges split evenly (no majority, whatever order they are listed in): a binary "
        "check gets no label and counts 0.5 where seed 003 averages the judges, a pairwise one is a Tie; escalated",
    )

    @property
    def decided(self) -> bool:
        return self.label is not None or self.score is not None

    @property
    def yes_value(self) -> float | None:
        """A binary decision as a number: 1.0 yes, 0.0 no, 0.5 when the judges split evenly, None undecided."""
        if self.split and self.label is None:
            return 0.5
        return float(self.label is Label.YES) if self.label in (Label.YES, Label.NO) else None


class Review(Record):
    """A person's decision on an escalated check; it overrides the jury and is a calibration label."""

    run_id: str
    check_id: str
    reviewer: str = Field(min_length=1)
    action: ReviewAction
    label: Label | None = None
    score: float | None = None
    accepted_judge: str | None = None
    comment: str = ""
    created_at: datetime = Field(default_factory=utcnow)

    @model_validator(mode="after")
    def _decision_needs_a_value(self) -> Review:
        if self.action is not ReviewAction.SKIP and self.label is None and self.score is None:
            raise ValueError(f"a review that will {self.action} a check needs a label or a score")
        return self


# --------------------------------------------------------------------------- outputs


class InputFlag(Record):
    """A figure computed on a missing input: how it depends on which failed splits (a gate treats it as n/a)."""

    cause: FigureFlag
    splits: tuple[DecompositionKind, ...]


class MetricValue(Record):
    """A figure with its honesty counts. value None means n/a, and na_reason says why."""

    name: str
    value: float | None
    na_reason: str | None = None
    n: int = 0
    n_unscored: int = 0
    n_escalated: int = 0
    # Left out of the dump when None: an unflagged figure is stored as before, and a run stored before reads back
    flag: InputFlag | None = Field(default=None, exclude_if=lambda flag: flag is None,
                                   description="set when the figure stands on a split that failed")

    @model_validator(mode="after")
    def _na_needs_reason(self) -> MetricValue:
        if self.value is None and not self.na_reason:
            raise ValueError(f"metric {self.name} is n/a without a reason")
        return self


class ElementOutcome(Record):
    """One element's three verdicts and where it was lost (metrics.elements.element_outcome builds it).

    A verdict on which the judges split evenly is None in its field and listed in `split`: it counts 0.5. A
    JUDGES_SPLIT element is shared out over the decided statuses by `attribution` (fractions adding up to 1);
    any other element's attribution is empty (its status is all of it)."""

    element_id: str
    text: str
    in_context: bool | None
    in_loose_context: bool | None
    in_answer: bool | None
    status: ElementStatus
    split: tuple[ElementVerdict, ...] = ()
    attribution: dict[ElementStatus, float] = Field(default_factory=dict)


class PerturbationEffect(Record):
    """One perturbed condition against the normal answer (seed 004): d_* are perturbed - normal; soft_correct,
    f1, grounding and confidence_error are the perturbed answer's own (rows stored before soft_correct and f1
    existed: None). trace_source is the perturbed answer's trace (rows stored
    before it existed: reported); trace_unscored / trace_escalated count the claim-chunk checks behind its judged
    trace left undecided (unscored, or judges split: the trace is then unknown) or escalated (the normal
    answer's are on its grounding_score metric)."""

    condition: Condition
    chunk_title: str | None = None
    chunk_is_gold: bool | None = None
    d_soft_correct: float | None = None
    d_f1: float | None = None
    d_confidence: float | None = None
    trace_divergence: float | None = None
    soft_correct: float | None = None
    f1: float | None = None
    grounding: float | None = None
    d_grounding: float | None = None
    confidence_error: float | None = None
    d_confidence_error: float | None = None
    trace_source: TraceSource = TraceSource.REPORTED
    confidence_source: ConfidenceSource | None = None
    trace_unscored: int = 0
    trace_escalated: int = 0


# The fields of a SampleDiagnostics that diagnostics.jsonl leaves to the record store.
STREAM_LEFT_OUT = frozenset({"elements", "perturbations", "uncovered_subqueries", "alignment_graph"})


class SampleDiagnostics(Record):
    """What streams out per question."""

    run_id: str
    sample_id: str
    question: str
    status: SampleStatus = SampleStatus.OK
    error: str | None = None
    metrics: tuple[MetricValue, ...] = ()
    elements: tuple[ElementOutcome, ...] = ()
    unsupported_claims: tuple[str, ...] = ()
    uncovered_subqueries: tuple[str, ...] = ()
    perturbations: tuple[PerturbationEffect, ...] = ()
    trace_source: TraceSource | None = Field(
        default=None, description="the normal answer's CUE-R trace behind grounding_score (None: no normal answer)"
    )
    confidence_source: ConfidenceSource | None = Field(
        default=None, description="the normal answer's confidence behind confidence_error (None: no normal answer)"
    )
    escalations: tuple[str, ...] = Field(default=(), description="ids of escalated checks awaiting review")
    failed_splits: tuple[DecompositionKind, ...] = Field(
        default=(), exclude_if=lambda kinds: not kinds,
        description="the splits the sample needed that the decomposer gave no scored result for (a figure they "
        "touch carries an InputFlag)",
    )
    n_checks: int = 0
    n_unscored: int = 0
    usage: TokenUsage = TokenUsage()
    alignment_graph: dict[str, Any] | None = Field(
        default=None, description="node-link JSON of sub-queries, chunks and claims"
    )
    created_at: datetime = Field(default_factory=utcnow)

    def metric(self, name: str) -> MetricValue | None:
        return next((m for m in self.metrics if m.name == name), None)

    def stream_line(self) -> str:
        """The record as a line of the run folder's diagnostics.jsonl, what a person follows (`tail -f`, `ragcourt
        watch`): the question, status, figures and counts. The parts only the report draws (elements,
        perturbations, the alignment graph) are left out: the record store keeps them, whole, once."""
        return json.dumps(self.model_dump(mode="json", exclude=set(STREAM_LEFT_OUT)), ensure_ascii=False) + "\n"


class RunInfo(Record):
    run_id: str
    created_at: datetime = Field(default_factory=utcnow)
    dataset: str
    system: str
    config: dict[str, Any]
    collection: str | None = None  # the reference system's chromadb collection (a rerun retrieves from it)
    base_run: str | None = None
    rerun_sample_ids: tuple[str, ...] = ()
