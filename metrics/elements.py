"""Element-level evaluation (seed 003): where each element of a reference answer is lost.

Every element of an expert's reference answer (one fact or condition, frozen once split) gets three
verdicts: in the normal retrieval's context, in the loose retrieval's context (no score cut-off,
twice the top-k, same query; only run for samples under the coverage threshold), and in the answer.
From them it is attributed to the place a fix belongs: generation, retrieval or the documents.
A sample has two coverages: the context side (`element_coverage`, elements found in the normal retrieval's
chunks) and the answer side (`element_answer_coverage`, elements the answer states).
Two judges decide each verdict and their results are averaged (seed 003): a 1-1 split counts 0.5 toward
coverage, and an element the split leaves between two statuses is shared out over them (JUDGES_SPLIT), so
no figure depends on the order the judges are listed in.
This module also holds the seed's rule-based filter for pointer elements and its measurement-noise
arithmetic (run-to-run noise, the band within which a change of a mean is noise).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple

from ragcourt.metrics.values import MetricName, not_available
from ragcourt.schema import Element, ElementOutcome, ElementStatus, ElementVerdict, MetricValue

LOOSE_COVERAGE_THRESHOLD = 0.6
GAP_STATUSES = (ElementStatus.GENERATION_GAP, ElementStatus.RETRIEVAL_GAP, ElementStatus.DOCUMENT_GAP)
ATTRIBUTED_STATUSES = (ElementStatus.ANSWERED, *GAP_STATUSES)  # the statuses an element's mass is shared over

SPLIT = 0.5
JuryValue = float | None
"""A reconciled element verdict as seed 003 has it, the two judges' results averaged: 1.0 yes, 0.0 no, SPLIT
(0.5) when the judges split evenly (`Reconciled.yes_value`), None undecided (unscored). A bool reads as 1 / 0.
With more than two judges a majority decides and only an even split is 0.5."""
_ALLOWED = (0.0, SPLIT, 1.0)


# --------------------------------------------------------------------------- per element


def _checked(value: JuryValue, which: ElementVerdict) -> JuryValue:
    if value is not None and value not in _ALLOWED:
        raise ValueError(f"{which} must be 0, 0.5, 1 or None (a reconciled verdict), got {value!r}")
    return value


def element_attribution(
    in_context: JuryValue, in_loose_context: JuryValue, in_answer: JuryValue
) -> dict[ElementStatus, float] | None:
    """The element's share of each status, or None when it is undecided. Unanimous verdicts give one status
    at 1.0; a split verdict (0.5) shares the element out, each verdict taken as the judges' average:

        answered       = a
        generation_gap = (1 - a) * c
        retrieval_gap  = (1 - a) * (1 - c) * l
        document_gap   = (1 - a) * (1 - c) * (1 - l)

    with a, c, l the in-answer, in-context and loose-context values. So an element the judges split on "in
    the answer" that both find in the normal context is half answered, half generation gap; one both miss in
    the answer and split on "in context" with a unanimous loose "yes" is half generation, half retrieval gap.
    Undecided (None) as soon as a verdict is missing where the element still has mass to place: the whole
    element, not the rest of it, since a share of an undecided element would be a guess. Statuses with no
    share are left out. For 0/1 values this is exactly `element_status`'s precedence.
    """
    a = _checked(in_answer, ElementVerdict.IN_ANSWER)
    c = _checked(in_context, ElementVerdict.IN_CONTEXT)
    loose = _checked(in_loose_context, ElementVerdict.IN_LOOSE_CONTEXT)
    if a is None:
        return None
    missing = 1.0 - a
    if missing and c is None:
        return None
    not_in_context = missing * (1.0 - (c or 0.0))
    if not_in_context and loose is None:
        return None
    shares = {
        ElementStatus.ANSWERED: a,
        ElementStatus.GENERATION_GAP: missing * (c or 0.0),
        ElementStatus.RETRIEVAL_GAP: not_in_context * (loose or 0.0),
        ElementStatus.DOCUMENT_GAP: not_in_context * (1.0 - (loose or 0.0)),
    }
    return {status: share for status, share in shares.items() if share}


def element_status(in_context: JuryValue, in_loose_context: JuryValue, in_answer: JuryValue) -> ElementStatus:
    """Attribute one element. With unanimous (0/1) verdicts, precedence, first rule that applies wins:

    1. in_answer True                                   -> ANSWERED (whatever the contexts say:
       an element the answer states is answered, even from the model's own knowledge)
    2. in_answer None                                   -> UNDECIDED (a gap needs a known miss)
    3. in_answer False, in_context True                 -> GENERATION_GAP
    4. in_answer False, in_context None                 -> UNDECIDED
    5. in_answer False, in_context False, loose True    -> RETRIEVAL_GAP
    6. in_answer False, in_context False, loose False   -> DOCUMENT_GAP ("documents doubtful": even
       loose retrieval does not find it; the documents may phrase it differently, so a suspicion,
       never proof that the documents lack it)
    7. in_answer False, in_context False, loose None    -> UNDECIDED (the loose run did not happen,
       e.g. the sample's coverage was at or above the threshold, or its verdict is unscored)

    A split verdict (0.5) that the rules reach makes the element JUDGES_SPLIT (shared out over several
    statuses, `element_attribution`); one they do not reach changes nothing (a unanimous "in the answer"
    is ANSWERED whatever the judges said about the context).
    """
    shares = element_attribution(in_context, in_loose_context, in_answer)
    if shares is None:
        return ElementStatus.UNDECIDED
    if len(shares) > 1:
        return ElementStatus.JUDGES_SPLIT
    return next(iter(shares))


def _decision(value: JuryValue) -> bool | None:
    return None if value is None or value == SPLIT else bool(value)


def element_outcome(
    element: Element, in_context: JuryValue, in_loose_context: JuryValue, in_answer: JuryValue
) -> ElementOutcome:
    """The stored record of one element's verdicts and status (a split verdict: None and listed in `split`)."""
    values = {ElementVerdict.IN_CONTEXT: in_context, ElementVerdict.IN_LOOSE_CONTEXT: in_loose_context,
              ElementVerdict.IN_ANSWER: in_answer}
    status = element_status(in_context, in_loose_context, in_answer)
    shares = element_attribution(in_context, in_loose_context, in_answer)
    return ElementOutcome(
        element_id=element.id,
        text=element.text,
        in_context=_decision(in_context),
        in_loose_context=_decision(in_loose_context),
        in_answer=_decision(in_answer),
        status=status,
        split=tuple(which for which, value in values.items() if value == SPLIT),
        attribution=shares if status is ElementStatus.JUDGES_SPLIT and shares else {},
    )


def verdict_value(outcome: ElementOutcome, which: ElementVerdict) -> JuryValue:
    """One of an outcome's verdicts as a JuryValue (SPLIT when the judges split on it)."""
    if which in outcome.split:
        return SPLIT
    decision: bool | None = getattr(outcome, which.value)
    return None if decision is None else float(decision)


# --------------------------------------------------------------------------- per sample


class CoverageSide(NamedTuple):
    """One of seed 003's two coverages of a sample's elements: the verdict it is the mean of, the name it is
    reported under, and what its checks are called in an n/a reason."""

    verdict: ElementVerdict
    metric: MetricName
    checks: str


# The retrieval side ("上下文召回率"): elements found in the normal retrieval's chunks; the loose re-run's trigger.
CONTEXT_SIDE = CoverageSide(ElementVerdict.IN_CONTEXT, MetricName.ELEMENT_COVERAGE, "context")
# The generation side ("事实正确性" recall): elements the answer states. Seed 003's run-to-run noise (sd about 0.14
# per question) "comes mainly from the answering LLM", so it shows here; a fixed retriever leaves the context side
# all but unmoved. The same checks give method reference's element_recall, which only that method reports.
ANSWER_SIDE = CoverageSide(ElementVerdict.IN_ANSWER, MetricName.ELEMENT_ANSWER_COVERAGE, "answer")


def coverage_of(values: Iterable[JuryValue], side: CoverageSide = CONTEXT_SIDE) -> MetricValue:
    """Element coverage of one sample on one side from its verdicts: their mean, a split counting 0.5 (seed 003:
    the two judges' results averaged). None values leave numerator and denominator (n_unscored). The
    loose-retrieval trigger and the reported context-side figure both use this, so they cannot disagree."""
    counted = list(values)
    decided = [value for value in counted if value is not None]
    name = side.metric.value
    if not decided:
        reason = "the sample has no elements" if not counted else f"every {side.checks} check is unscored"
        return not_available(name, reason, n_unscored=len(counted))
    return MetricValue(name=name, value=sum(decided) / len(decided), n=len(decided),
                       n_unscored=len(counted) - len(decided))


def element_coverage(outcomes: Sequence[ElementOutcome], side: CoverageSide = CONTEXT_SIDE) -> MetricValue:
    """Share of elements found in the normal retrieval's context (CONTEXT_SIDE, seed 003's per-question coverage
    that triggers the loose re-run), or stated by the answer (ANSWER_SIDE).

    A split verdict counts 0.5. Elements whose verdict on that side is None (and not split) leave numerator and
    denominator (n_unscored). n/a when the sample has no elements or none is decided.
    """
    return coverage_of((verdict_value(o, side.verdict) for o in outcomes), side)


def needs_loose(coverage: float | None, threshold: float = LOOSE_COVERAGE_THRESHOLD) -> bool:
    """Whether the loose retrieval re-run is due: coverage strictly under the threshold (seed: 六成).

    n/a coverage (None: no elements, or all unscored) does not trigger it: there is no evidence of
    a retrieval miss to follow up.
    """
    return coverage is not None and coverage < threshold


class RetrievalResult(StrEnum):
    """The seed's per-question `result_label` (step 3): where the question's elements were found.

    documents_doubtful when an element was in neither the normal nor the loose retrieval (文档侧存疑: a
    suspicion, never proof); retrieval_gap when the loose run found one the normal run missed; retrieved when
    the normal context held every element; undecided when an element is missing from the normal context with no
    loose verdict (coverage at or above the threshold, loose retrieval unavailable, unscored or split).
    """

    RETRIEVED = "retrieved"
    RETRIEVAL_GAP = "retrieval_gap"
    DOCUMENTS_DOUBTFUL = "documents_doubtful"
    UNDECIDED = "undecided"


@dataclass(frozen=True)
class SampleElements:
    """The seed's per-question record (element texts, result_label), plus coverage.

    covered_elements: in the normal context; newly_covered_in_loose: not in the normal context but
    in the loose one; uncovered_in_loose: in neither (the loose run happened); answered: in the answer;
    judges_split: elements with a verdict the judges split on (none of the lists above holds it for that
    verdict; seed 003 records such cases for review). coverage: the context side; answer_coverage: the
    answer side.
    """

    covered_elements: tuple[str, ...]
    newly_covered_in_loose: tuple[str, ...]
    uncovered_in_loose: tuple[str, ...]
    answered: tuple[str, ...]
    coverage: MetricValue
    answer_coverage: MetricValue
    judges_split: tuple[str, ...] = ()

    def result_label(self, n_elements: int) -> RetrievalResult:
        """The seed's label of the question from its lists (`n_elements`: the question's elements, so that an
        element on none of the lists leaves the label undecided unless a doubt or a gap already settles it)."""
        if self.uncovered_in_loose:
            return RetrievalResult.DOCUMENTS_DOUBTFUL
        if self.newly_covered_in_loose:
            return RetrievalResult.RETRIEVAL_GAP
        if n_elements and len(self.covered_elements) == n_elements:
            return RetrievalResult.RETRIEVED
        return RetrievalResult.UNDECIDED


def sample_elements(outcomes: Sequence[ElementOutcome]) -> SampleElements:
    """Collect the seed's per-question fields from the element outcomes (undecided verdicts go nowhere)."""
    return SampleElements(
        covered_elements=tuple(o.text for o in outcomes if o.in_context is True),
        newly_covered_in_loose=tuple(
            o.text for o in outcomes if o.in_context is False and o.in_loose_context is True
        ),
        uncovered_in_loose=tuple(
            o.text for o in outcomes if o.in_context is False and o.in_loose_context is False
        ),
        answered=tuple(o.text for o in outcomes if o.in_answer is True),
        coverage=element_coverage(outcomes),
        answer_coverage=element_coverage(outcomes, ANSWER_SIDE),
        judges_split=tuple(o.text for o in outcomes if o.split),
    )


# --------------------------------------------------------------------------- run level


def split_attribution(outcomes: Iterable[ElementOutcome]) -> dict[ElementStatus, float]:
    """The JUDGES_SPLIT elements' attributions added up per status (what `status_shares` shares out)."""
    totals: dict[ElementStatus, float] = {}
    for outcome in outcomes:
        if outcome.status is ElementStatus.JUDGES_SPLIT:
            for status, fraction in outcome.attribution.items():
                totals[status] = totals.get(status, 0.0) + fraction
    return totals


@dataclass(frozen=True)
class StatusShares:
    """Run-level attribution.

    counts: elements per status (JUDGES_SPLIT and UNDECIDED included). weights: per attributed status
    (answered and the three gaps), its elements plus the fractions of the JUDGES_SPLIT elements shared out to
    it; they add up to n_decided. shares: each attributed status's weight over n_decided (the decided
    elements, split ones included; UNDECIDED is left out and counted in n_undecided / every value's
    n_unscored). gap_shares: the seed's step-4 view, each gap's weight over the gaps' total weight (the
    decided elements missing from the answer, in whole and split parts).
    """

    counts: Mapping[ElementStatus, int]
    weights: Mapping[ElementStatus, float]
    n_decided: int
    n_undecided: int
    n_split: int
    shares: Mapping[ElementStatus, MetricValue]
    gap_shares: Mapping[ElementStatus, MetricValue]


def _weight_share(name: str, weight: float, total: float, n: int, *, n_unscored: int, empty_reason: str) -> MetricValue:
    if not total:
        return not_available(name, empty_reason, n_unscored=n_unscored)
    return MetricValue(name=name, value=weight / total, n=n, n_unscored=n_unscored)


def status_shares(
    statuses: Iterable[ElementStatus], split: Mapping[ElementStatus, float] | None = None
) -> StatusShares:
    """Counts and shares of element statuses over a run; n/a shares when nothing is decided / missing.

    split: the JUDGES_SPLIT elements' attributions added up (`split_attribution`, or the store's
    `element_split_attribution`); without it a JUDGES_SPLIT element cannot be shared out and is refused.
    """
    counts = Counter(statuses)
    split = dict(split or {})
    if counts[ElementStatus.JUDGES_SPLIT] and not split:
        raise ValueError("judges_split elements need their attribution (split=) to be shared out")
    undecided = counts[ElementStatus.UNDECIDED]
    decided = sum(counts.values()) - undecided
    weights = {status: counts[status] + split.get(status, 0.0) for status in ATTRIBUTED_STATUSES}
    gaps = sum(weights[s] for s in GAP_STATUSES)
    # n: elements missing from the answer in whole or in part; a split element always is (its mass lies on
    # at least two statuses, so on a gap)
    n_gaps = sum(counts[s] for s in GAP_STATUSES) + counts[ElementStatus.JUDGES_SPLIT]
    shares = {
        status: _weight_share(f"share_{status}", weights[status], decided, decided, n_unscored=undecided,
                              empty_reason="no element has a decided status")
        for status in ATTRIBUTED_STATUSES
    }
    gap_shares = {
        status: _weight_share(f"gap_share_{status}", weights[status], gaps, n_gaps, n_unscored=undecided,
                              empty_reason="no decided element is missing from the answer")
        for status in GAP_STATUSES
    }
    return StatusShares(
        counts={status: counts[status] for status in ElementStatus},
        weights=weights,
        n_decided=decided,
        n_undecided=undecided,
        n_split=counts[ElementStatus.JUDGES_SPLIT],
        shares=shares,
        gap_shares=gap_shares,
    )


# --------------------------------------------------------------------------- pointer elements

# An element is a pure pointer when the whole text is a lead-in + a pointing verb + a reference to
# a place in the documents. Anything else in the text (a fact, a condition) keeps the element:
# the filter errs on the side of keeping. UI paths ("Click Settings > Limits") start with an action
# verb, not a pointing verb, and are kept: there the location is the answer (seed 003, step 5).
_EN_POINTER = re.compile(
    r"""^(?:(?:for\ (?:more\ |further\ |full\ )?(?:details|information|specifics)|details)\s*[,:]?\s*)?
        (?:please\s+)?
        (?:see|refer\ to|consult|cf\.?|check|read|look\ at
          |(?:details|information|more\ information)\ (?:are|is|can\ be\ found)\ (?:in|at|under)
          |(?:(?:this|it|these)\ (?:is|are)\ )?(?:described|detailed|specified|set\ out|explained|covered|defined)\ in
          |as\ (?:described|detailed|specified|set\ out|explained|defined)\ in)
        \s+(?P<target>.+?)
        (?:\s*[,;]?\s*for\ (?:more\ |further\ )?(?:details|information|specifics))?
        \s*[.!]?\s*$""",
    re.IGNORECASE | re.VERBOSE,
)
_EN_TARGET = re.compile(
    r"""^(?:the\s+)?(?:relevant\s+|applicable\s+|corresponding\s+)?
        (?:section|chapter|clause|article|appendix|annex|paragraph|part|page|table|figure|rules?|rule\ set
          |regulations?|manual|handbook|guidelines?|policy|document(?:ation)?|§)\b""",
    re.IGNORECASE | re.VERBOSE,
)
# Chinese lead-ins that name no topic: generic ("具体流程", "相关规定", "更多信息"), back-references
# ("以上内容", "上述规定") and "如需了解更多". A lead-in naming a topic ("报销流程详见附件2") is not
# matched: telling a topic from a fact would need the documents, and the filter errs on keeping.
_ZH_LEAD = (
    r"(?:(?:具体|详细|相关|有关|更多|其他|其余|其它)的?"
    r"(?:流程|内容|信息|规定|要求|操作|步骤|标准|细节|说明|事项|条件|办法|做法|情况|详情|条款)?"
    r"|详情|以上(?:内容|规定|要求|事项|信息)?|上述(?:内容|规定|要求|事项|信息)?|前述(?:内容|规定|要求|事项)?"
    r"|如(?:需|要|想|欲|您需要|您想)(?:进一步)?(?:了解|查看|查询|知悉|获取)"
    r"(?:更多|详细|具体|相关|详情)?的?(?:信息|内容|详情|规定|要求|情况|细节)?)?"
)
_ZH_SEP = r"[，,：:、\s]*"
_ZH_MODAL = r"(?:请您?|敬请|您?也?可以?|均|一律)?"
_ZH_END = r"[。．.；;，,！!\s]*$"  # a split element may keep its sentence's end or a clause separator
_ZH_POINTER = re.compile(
    rf"^{_ZH_LEAD}{_ZH_SEP}{_ZH_MODAL}(?P<verb>详见|参见|参阅|参照|参考|参看|查阅|查看|请见|见)"
    r"(?P<target>.+?)"
    r"(?:中?的?(?:相关|有关)?(?:规定|要求|说明)|(?:以|来)?(?:了解|获取|查看)(?:详情|更多(?:信息|内容)?|详细(?:信息|内容)?))?"
    + _ZH_END
)
# "（具体）以《员工手册》第4.2条为准": the documents decide; no fact of its own.
_ZH_PREVAILS = re.compile(
    rf"^{_ZH_LEAD}{_ZH_SEP}{_ZH_MODAL}以(?P<target>.+?)(?:中?的?(?:相关|有关)?规定)?为准" + _ZH_END
)
_ZH_TARGET = re.compile(
    r"第.{1,8}?[章节条款篇项部]|[《》>＞]|规则|规定|制度|办法|手册|细则|附件|附录|章节|条款|指引|指南|文件"
)
# A target that carries content is not a pure pointer: a clause or sentence break, a quantity with a
# unit ("30天内"), or an obligation ("须", "不得").
_ZH_FACT_IN_TARGET = re.compile(
    r"[，,；;。：:！!？?]|\d+(?:\.\d+)?\s*(?:个)?(?:天|日|周|月|年|小时|分钟|元|万|亿|%|％|次|人)"
    r"|须|应当|不得|不可|禁止|必须"
)
_EN_FACT_IN_TARGET = re.compile(
    r"[:;]|\.\s+\S|\b(?:for|must|shall|should|is|are|was|were|will|may|can(?:not)?|has|have)\b",
    re.IGNORECASE,
)


def _english_target_is_a_place(target: str) -> bool:
    """Every comma-separated part names a place ("the Handbook, section 4"); "Article 10, the limit is 5
    million" carries a fact."""
    if _EN_FACT_IN_TARGET.search(target):
        return False
    return all(_EN_TARGET.match(part.strip()) or ">" in part for part in target.split(","))


def is_pointer_element(text: str) -> bool:
    """Whether an element only says where something is written ("see section X", "详见第X节").

    Seed 003 step 5: such elements cannot be satisfied even by a fully correct answer when the
    product cites sources in a list instead of naming locations in the text; they are a defect of
    the measure. The seed deletes elements that *only* contain a location ("只包含所在位置指引的要素")
    and keeps the rest, so pure pointers only: "See section 3 for the limit of 5 million",
    "As specified in Article 10, the limit is 5 million", "审批额度为500万元，详见第三节" and
    "报销须在30天内提交，详见附件2。" state a fact and are kept whole (the fact is what an answer can
    satisfy; trimming the pointer off would rewrite the frozen element, so that is left to a person's
    edit). UI paths are kept, also after "查看" ("请查看 设置 > 额度"). Lead-ins must name no topic
    ("具体流程详见附件2" is a pointer, "报销流程详见附件2" is kept). English and Chinese. Not detected:
    rewrites of a section name as "X belongs to Y" (that needs the documents' section names). Callers
    apply it only when configured to (off by default).
    """
    stripped = text.strip()
    english = _EN_POINTER.match(stripped)
    if english is not None:
        return _english_target_is_a_place(english.group("target"))
    chinese = _ZH_POINTER.match(stripped)
    verb = chinese.group("verb") if chinese is not None else None
    if chinese is None:
        chinese = _ZH_PREVAILS.match(stripped)
    if chinese is None:
        return False
    target = chinese.group("target")
    if _ZH_FACT_IN_TARGET.search(target):
        return False
    if verb == "查看":  # "查看" is also a UI action: only a document, never a bare path, is pointed at
        return bool(_ZH_TARGET.search(target.replace(">", "").replace("＞", "")))
    return bool(_ZH_TARGET.search(target))


# --------------------------------------------------------------------------- measurement noise

Z_95 = 1.96


def noise_band(per_question_sd: float, n_questions: int, z: float = Z_95) -> float:
    """Half-width of the band within which a change of a mean over n questions is noise: z * sd / sqrt(n).

    Seed 003: a per-question run-to-run sd of about 0.14 gives about ±0.015 over 298 questions and
    about ±0.05 over 25. With z = 1.96 (95 %): 1.96 * 0.14 / sqrt(298) = 0.0159 and
    1.96 * 0.14 / 5 = 0.0549, which round to the seed's figures; sd / sqrt(n) alone (0.0081,
    0.028) does not reproduce them.
    """
    if n_questions <= 0:
        raise ValueError(f"n_questions must be positive, got {n_questions}")
    if per_question_sd < 0:
        raise ValueError(f"per_question_sd must be non-negative, got {per_question_sd}")
    return z * per_question_sd / math.sqrt(n_questions)


@dataclass(frozen=True)
class RunNoise:
    """Run-to-run noise of the same configuration measured twice.

    per_question_sd: sample standard deviation (n - 1) over questions of the per-question difference
    b - a; mean_difference: mean of b - a (the change of the mean); band: `noise_band` of that sd.
    Values are None with `na_reason` when fewer than two questions are in both runs.
    n_unpaired: questions present in only one run (left out).
    """

    n_questions: int
    n_unpaired: int
    per_question_sd: float | None
    mean_difference: float | None
    band: float | None
    na_reason: str | None = None


def run_to_run_noise(run_a: Mapping[str, float], run_b: Mapping[str, float], z: float = Z_95) -> RunNoise:
    """Noise between two runs of one configuration, per question id (e.g. per-question coverage).

    The seed's "per-question sd" is read as the sd across questions of the run-to-run difference;
    then z * sd / sqrt(n) is the band of the difference of the two runs' means, which is what
    `is_noise` compares a reported change with.
    """
    shared = sorted(set(run_a) & set(run_b))
    unpaired = len(set(run_a) ^ set(run_b))
    if len(shared) < 2:
        return RunNoise(
            len(shared), unpaired, None, None, None, na_reason="fewer than two questions are in both runs"
        )
    differences = [run_b[q] - run_a[q] for q in shared]
    mean = sum(differences) / len(differences)
    sd = math.sqrt(sum((d - mean) ** 2 for d in differences) / (len(differences) - 1))
    return RunNoise(len(shared), unpaired, sd, mean, noise_band(sd, len(shared), z))


def is_noise(delta: float, band: float) -> bool:
    """Whether a change of a mean lies within the noise band (|delta| <= band, inclusive)."""
    return abs(delta) <= band
