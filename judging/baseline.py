"""The no-LLM baseline judges: documented rules over token overlap or MiniLM embeddings."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import numpy as np

from ragcourt.metrics.cuer import answered_yes_no, bare_yes_no
from ragcourt.metrics.text import content_tokens, numbers, overlap, sentences
from ragcourt.schema import Check, CheckKind, Label, UnscoredReason, Verdict, VerdictStatus

if TYPE_CHECKING:
    from ragcourt.stores.embeddings import EmbeddingCache


class BaselineRule(StrEnum):
    """How a no-LLM judge decides.

    lexical: yes when at least half of the subject's content words occur in the target
      (claim_serves_subquery: a third, since a claim answers rather than repeats its sub-query).
    semantic: yes when the cosine similarity of MiniLM embeddings of the subject and the best-matching
      sentence of the target is at least 0.55 (claim_serves_subquery: 0.45).
    Dimension scores: 10 x token F1 against the reference (or question overlap without a reference).
    Pairwise: the answer with the higher score wins; within 0.05 it is a Tie. lexical scores an answer by token
      F1 against the reference (question overlap without one); semantic by the mean MiniLM cosine of the whole
      answer with the reference and with the evidence shown (the question when neither is given), so the
      two baselines are two opinions, not one counted twice.
    """

    LEXICAL = "lexical"
    SEMANTIC = "semantic"


THRESHOLDS = {BaselineRule.LEXICAL: (0.5, 0.34), BaselineRule.SEMANTIC: (0.55, 0.45)}
# Checks whose subject must be stated by the target: a number the subject states and the target does not
# ("500元" against "300元", "50万" against "5万") decides "no" whatever the overlap, which counts a
# number as one token among many (text.numbers reads digits and Chinese numerals, not English number words).
NUMBER_KINDS = (CheckKind.ELEMENT_IN_CONTEXT, CheckKind.ELEMENT_IN_ANSWER, CheckKind.CLAIM_SUPPORTED)

Embed = Callable[[list[str]], np.ndarray]


def similarity_probabilities(similarity: float, threshold: float) -> dict[Label, float]:
    """A rule's similarity as P(yes) / P(no): piecewise linear, 0 at no similarity, 0.5 at the rule's threshold
    and 1 at identity. It is monotone in the similarity, so it ranks checks (AUROC, a threshold learned from
    labels) and agrees with the rule's label (yes from 0.5 up); it is a score, not a calibrated probability:
    `ragcourt calibrate` measures how well it ranks. Negative cosines count as no similarity."""
    s = min(max(similarity, 0.0), 1.0)
    p_yes = s / (2 * threshold) if s < threshold else 0.5 + (s - threshold) / (2 * (1 - threshold))
    return {Label.YES: p_yes, Label.NO: 1.0 - p_yes}


def certain(label: Label) -> dict[Label, float]:
    """The probabilities of a rule that decides outright (a number the target lacks, a yes/no compared word
    for word): all on its label."""
    return {Label.YES: float(label is Label.YES), Label.NO: float(label is Label.NO)}


@dataclass
class BaselineJudge:
    """A judge that needs no LLM: documented rules, known limits (no paraphrase beyond the embedding,
    no negation, no arithmetic). It answers every check kind so that a run works fully offline."""

    rule: BaselineRule
    embed: Embed | None = None
    name: str | None = None  # the JudgeSpec id, when the configuration names this judge
    # The judge's own cache of `embed`: a claim meets the same evidence sentences in several checks
    # (sub-query in chunk, claim supported), and a long evidence text was embedded again for each.
    _cached: EmbeddingCache | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.embed is not None:
            # Here, not at the top: stores.embeddings imports chromadb, which `ragcourt.judging` must not load.
            from ragcourt.stores.embeddings import EmbeddingCache

            self._cached = EmbeddingCache(self.embed)

    @property
    def judge_id(self) -> str:
        return self.name or str(self.rule)

    async def judge(self, kind: CheckKind, checks: Sequence[Check]) -> list[Verdict]:
        if self.rule is BaselineRule.SEMANTIC and self.embed is None:
            raise ValueError("the semantic baseline judge needs an embedding function")
        return [self._decide(kind, check) for check in checks]

    def _similarity(self, subject: str, target: str) -> float:
        if self.rule is BaselineRule.LEXICAL:
            return overlap(subject, target)
        assert self._cached is not None
        return best_sentence_cosine(self._cached, subject, target)

    def _decide(self, kind: CheckKind, check: Check) -> Verdict:
        common: dict[str, Any] = {"check_id": check.id, "judge_id": self.judge_id, "model_id": self.judge_id,
                                  "status": VerdictStatus.OK}
        if kind is CheckKind.DIMENSION_SCORE:
            score = round(10 * self._answer_quality(check.subject_text, check))
            return Verdict(score=float(score), rationale=f"{self.rule} score {score}/10", **common)
        if kind is CheckKind.PAIRWISE:
            a, b = self._preference_score(check.subject_text, check), self._preference_score(check.target_text, check)
            label = Label.TIE if abs(a - b) < 0.05 else (Label.A if a > b else Label.B)
            return Verdict(label=label, rationale=f"A {a:.2f} vs B {b:.2f}", **common)
        if kind in (CheckKind.ELEMENT_IN_CONTEXT, CheckKind.ELEMENT_IN_ANSWER):
            element = bare_yes_no(check.subject_text)
            if element is not None:
                return self._yes_no_element(kind, check, element, common)
        if kind in NUMBER_KINDS:
            missing = numbers(check.subject_text) - numbers(check.target_text)
            if missing:
                shown = ", ".join(sorted(missing))
                return Verdict(label=Label.NO, probabilities=certain(Label.NO),
                               rationale=f"{self.rule}: the number(s) {shown} are not in the target", **common)
        strict, lenient = THRESHOLDS[self.rule]
        threshold = lenient if kind is CheckKind.CLAIM_SERVES_SUBQUERY else strict
        similarity = self._similarity(check.subject_text, check.target_text)
        label = Label.YES if similarity >= threshold else Label.NO
        return Verdict(label=label, probabilities=similarity_probabilities(similarity, threshold),
                       rationale=f"{self.rule} similarity {similarity:.2f} vs {threshold}", **common)

    def _yes_no_element(self, kind: CheckKind, check: Check, element: str, common: dict[str, Any]) -> Verdict:
        """A reference answer that is just "yes" or "no" (HotpotQA's comparison questions): no overlap or
        embedding finds it in a context, where only an LLM can tell whether the evidence implies it; deciding
        "not there" would blame the documents for every such question. An answer that starts with yes or no
        is compared word for word (as soft correctness does); anything else is left to the other judges."""
        said = answered_yes_no(check.target_text) if kind is CheckKind.ELEMENT_IN_ANSWER else None
        if said is not None:
            label = Label.YES if said == element else Label.NO
            return Verdict(label=label, probabilities=certain(label),
                           rationale=f"the answer says {said!r}, the element {element!r}", **common)
        where = "context" if kind is CheckKind.ELEMENT_IN_CONTEXT else "answer (it does not start with yes or no)"
        return Verdict(**common | {"status": VerdictStatus.UNSCORED}, unscored_reason=UnscoredReason.BEYOND_RULE,
                       detail=f"the {self.rule} rule cannot tell whether the {where} implies {element!r}")

    def _preference_score(self, answer: str, check: Check) -> float:
        if self.rule is BaselineRule.LEXICAL:
            return self._answer_quality(answer, check)
        targets = [text for text in (check.reference, check.evidence) if text] or [check.question]
        return float(np.mean([self._cosine(answer, target) for target in targets]))

    def _cosine(self, first: str, second: str) -> float:
        assert self._cached is not None
        vectors = np.asarray(self._cached([first, second]), dtype=np.float64)
        norms = np.linalg.norm(vectors, axis=1)
        return float(vectors[0] @ vectors[1] / max(norms[0] * norms[1], 1e-12))

    def _answer_quality(self, answer: str, check: Check) -> float:
        if check.reference:
            return content_f1(answer, check.reference)
        return overlap(check.question, answer)


def best_sentence_cosine(embed: Embed, subject: str, target: str) -> float:
    """The semantic rule's similarity: the MiniLM cosine of the subject with the best single sentence of the
    target, not the whole target: an element stated in the fifth chunk of a long context must not be diluted by
    (or cut off with) the other chunks."""
    windows = sentences(target) or [target]
    vectors = np.asarray(embed([subject, *windows]), dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1)
    if norms[0] == 0:
        return 0.0
    cosines = vectors[1:] @ vectors[0] / np.maximum(norms[1:] * norms[0], 1e-12)
    return float(cosines.max())


def content_f1(prediction: str, reference: str) -> float:
    """Token F1 over content words (the lexical rule's dimension score)."""
    predicted, wanted = content_tokens(prediction), content_tokens(reference)
    common = len(predicted & wanted)
    if not common:
        return 0.0
    precision, recall = common / len(predicted), common / len(wanted)
    return 2 * precision * recall / (precision + recall)
