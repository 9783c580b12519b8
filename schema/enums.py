"""The enums of ragcourt's vocabulary: kinds, labels, statuses and reasons that records carry.

They are StrEnums, so a stored or exported value is the plain string and reads back as the member.
"""

from __future__ import annotations

from enum import StrEnum


class ConditionKind(StrEnum):
    NORMAL = "normal"
    LOOSE = "loose"
    CLOSED_BOOK = "closed_book"
    ORACLE = "oracle"
    REMOVE = "remove"
    REPLACE = "replace"
    DUPLICATE = "duplicate"

    @property
    def is_perturbation(self) -> bool:
        return self in (ConditionKind.REMOVE, ConditionKind.REPLACE, ConditionKind.DUPLICATE)


class CheckKind(StrEnum):
    ELEMENT_IN_CONTEXT = "element_in_context"
    ELEMENT_IN_ANSWER = "element_in_answer"
    SUBQUERY_IN_CHUNK = "subquery_in_chunk"
    CLAIM_SERVES_SUBQUERY = "claim_serves_subquery"
    SUBQUERY_ANSWERED = "subquery_answered"
    CLAIM_SUPPORTED = "claim_supported"
    # The reference-side checks (method `reference`): an answer claim against the reference's elements (the
    # precision side of factual correctness), and an element against one chunk (context precision with reference).
    CLAIM_IN_REFERENCE = "claim_in_reference"
    ELEMENT_IN_CHUNK = "element_in_chunk"
    DIMENSION_SCORE = "dimension_score"
    PAIRWISE = "pairwise"

    @property
    def is_binary(self) -> bool:
        return self not in (CheckKind.DIMENSION_SCORE, CheckKind.PAIRWISE)

    @property
    def labels(self) -> tuple[Label, ...]:
        """The labels a decision on this kind takes (a judge's, a reviewer's, a calibration label's); none
        for dimension scores, which are numbers in SCORE_RANGE."""
        if self is CheckKind.PAIRWISE:
            return (Label.A, Label.B, Label.TIE)
        return (Label.YES, Label.NO) if self.is_binary else ()


class Label(StrEnum):
    """Decisions a judge or a reviewer can give. Binary checks use YES/NO, pairwise checks A/B/TIE."""

    YES = "yes"
    NO = "no"
    A = "A"
    B = "B"
    TIE = "Tie"


class VerdictStatus(StrEnum):
    OK = "ok"
    UNSCORED = "unscored"


class UnscoredReason(StrEnum):
    PARSE_FAILURE = "parse_failure"
    REFUSAL = "refusal"
    TIMEOUT = "timeout"
    ERROR = "error"
    OUT_OF_RANGE = "out_of_range"
    MISSING_ITEM = "missing_item"
    BEYOND_RULE = "beyond_rule"  # a no-LLM baseline judge's rule cannot decide this check (judging.baseline.BaselineJudge)


class WholeTarget(StrEnum):
    """A check's target when it is not a chunk, claim or sub-query with an id of its own: the answer, all of
    its claims, or the whole context a condition showed (`Condition.context_target`). Part of check ids."""

    ANSWER = "answer"
    CLAIMS = "claims"
    CONTEXT = "context"
    REFERENCE = "reference"  # the reference answer, as its (frozen) elements: claim_in_reference's target


class QueryType(StrEnum):
    SINGLE_FOCUS = "single_focus"
    MULTI_ASPECT = "multi_aspect"
    MULTI_STEP = "multi_step"


class ReconcileMethod(StrEnum):
    MAJORITY = "majority"
    MEAN = "mean"
    MEAN_PROBABILITY = "mean_probability"
    WEIGHTED = "weighted"  # the Dawid-Skene posterior of the run's jury (config `reconcile: weighted`)
    HUMAN = "human"
    NONE = "none"


class ReviewAction(StrEnum):
    ACCEPT = "accept"
    OVERRIDE = "override"
    SKIP = "skip"


class ElementStatus(StrEnum):
    ANSWERED = "answered"
    GENERATION_GAP = "generation_gap"
    RETRIEVAL_GAP = "retrieval_gap"
    DOCUMENT_GAP = "document_gap"
    # The judges split evenly on a verdict the attribution needs: the element is shared out over the statuses
    # above in fractions (ElementOutcome.attribution; seed 003 averages the two judges' results).
    JUDGES_SPLIT = "judges_split"
    UNDECIDED = "undecided"


class ElementVerdict(StrEnum):
    """The three verdicts on an element (seed 003), named as ElementOutcome's fields."""

    IN_CONTEXT = "in_context"
    IN_LOOSE_CONTEXT = "in_loose_context"
    IN_ANSWER = "in_answer"


class SampleStatus(StrEnum):
    OK = "ok"
    FAILED = "failed"


class TraceSource(StrEnum):
    """Where a CUE-R used-chunk set U (seed 004's trace) comes from."""

    REPORTED = "reported"  # the system's own: the chunk ids its generator says it used
    JUDGED = "judged"  # the chunks the jury found to support the answer's claims (claim_supported checks)
    NONE = "none"  # neither: the system reports no trace and no claim-chunk support was judged


class ConfidenceSource(StrEnum):
    """Where the confidence c of seed 004's confidence error comes from."""

    REPORTED = "reported"  # the system's own self-reported confidence
    PROBED = "probed"  # one short call asked a model for it (config `confidence_probe`), the system gave none
    NONE = "none"  # no confidence: CE is n/a


# --------------------------------------------------------------------------- inputs


class DecompositionKind(StrEnum):
    ELEMENTS = "elements"
    SUBQUERIES = "subqueries"
    CLAIMS = "claims"


class FigureFlag(StrEnum):
    """How a sample's figure stands on a split the decomposer failed to give (`InputFlag`)."""

    # n/a: the figure is computed over that split's units (sub-queries, elements or claims), which are missing
    SPLIT_FAILED = "split_failed"
    # a value, but its checks were judged in one combined call per sample (batching per_sample or joint) that
    # listed none of that split's units: the judge saw less than a run without the fault shows it, and its
    # answer on one item may depend on the rest of the call, so the value may differ from that run's
    JUDGED_WITHOUT_SPLIT = "judged_without_split"
