"""The no-LLM baseline judges: documented rules over token overlap or sentence embeddings (stores.encoders:
MiniLM, e5 or an embeddings endpoint, chosen per check kind)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np

from ragcourt.metrics.cuer import answered_yes_no, bare_yes_no
from ragcourt.metrics.text import content_tokens, numbers, overlap, sentences
from ragcourt.schema import Check, CheckKind, Label, UnscoredReason, Verdict, VerdictStatus
from ragcourt.schema.config import encoder_suffix
from ragcourt.stores.encoders import (
    ENTAILMENT_KINDS,
    CachedEncoders,
    CallableEncoder,
    EncoderChoice,
    EncoderName,
    TextRole,
)


class BaselineRule(StrEnum):
    """How a no-LLM judge decides.

    lexical: yes when at least half of the subject's content words occur in the target
      (claim_serves_subquery: a third, since a claim answers rather than repeats its sub-query).
    semantic: yes when the cosine similarity of the embeddings of the subject and the best-matching
      sentence of the target is at least the encoder's threshold (MiniLM 0.55, claim_serves_subquery 0.45; e5's
      cosines sit higher, see E5_THRESHOLDS). The encoder is chosen per kind (stores.encoders.EncoderChoice).
    Dimension scores: 10 x token F1 against the reference (or question overlap without a reference).
    Pairwise: the answer with the higher score wins; within 0.05 it is a Tie (semantic on e5: only when equal).
      lexical scores an answer by token
      F1 against the reference (question overlap without one); semantic by the mean cosine of the whole
      answer with the reference and with the evidence shown (the question when neither is given), so the
      two baselines are two opinions, not one counted twice.
    """

    LEXICAL = "lexical"
    SEMANTIC = "semantic"


THRESHOLDS = {BaselineRule.LEXICAL: (0.5, 0.34), BaselineRule.SEMANTIC: (0.55, 0.45)}
# e5's cosines of unrelated texts sit near 0.7 (its training temperature), so its rule cuts higher: the strict
# threshold is the one of best kappa on the 100 shared HotpotQA questions (docs/validity.md), the
# lenient one (claim_serves_subquery) 0.03 lower: a tenth of the span e5 uses (about 0.7 to 1.0), as 0.10 is of
# MiniLM's.
E5_THRESHOLDS = (0.86, 0.83)
# Pairwise: a Tie within this difference of the two answers' scores. e5's cosines of two answers with one
# reference differ by less than MiniLM's (unrelated texts already sit near 0.7): on the 40 shared RAGChecker
# pairs its kappa with the annotators' mean label was best with no Tie band (0.308; MiniLM at 0.05: 0.267).
TIE_MARGIN = 0.05
E5_TIE_MARGIN = 0.0
# Checks whose subject must be stated by the target: a number the subject states and the target does not
# ("500元" against "300元", "50万" against "5万") decides "no" whatever the overlap, which counts a
# number as one token among many (text.numbers reads digits and Chinese numerals, not English number words).
NUMBER_KINDS = (CheckKind.ELEMENT_IN_CONTEXT, CheckKind.ELEMENT_IN_ANSWER, CheckKind.CLAIM_SUPPORTED)

Embed = Callable[[list[str]], np.ndarray]
# With e5 or an endpoint, a long target is cut to the sentences with the highest token F1 with the subject before
# embedding (embedding is nearly all of the semantic judge's CPU, a WiCE evidence page runs to hundreds of
# sentences, and the best sentence shares words with the subject; judging.features measures what it costs), and
# the kept sentences, in the target's order, are embedded in windows of up to WINDOW_WORDS words, not one by one:
# e5 was trained on passages, and one window costs one model run instead of one per sentence. MiniLM's rule
# embeds every sentence alone: its verdicts are stored under the id it always had.
EMBEDDED_SENTENCES = 32
WINDOW_WORDS = 120


def text_roles(kind: CheckKind) -> tuple[TextRole, TextRole]:
    """(subject, target) roles for e5's prefixes. Relevance (a question against a passage, a claim against the
    sub-query it may serve) is e5's asymmetric retrieval task: query and passage. A claim or element against a
    sentence that may state it, and two answers against a reference, compare statements of one kind for sameness
    of meaning, e5's symmetric similarity task, where its model card puts "query: " on both sides."""
    if kind in ENTAILMENT_KINDS or kind is CheckKind.PAIRWISE:
        return TextRole.QUERY, TextRole.QUERY
    return TextRole.QUERY, TextRole.PASSAGE


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
    no negation, no arithmetic). It answers every check kind so that a run works fully offline.

    The semantic rule embeds with `encoder` (an EncoderChoice: one encoder, or one for relevance and pairs and one
    for entailment), or with `embed`, a caller's own function used for every kind alike."""

    rule: BaselineRule
    embed: Embed | None = None
    name: str | None = None  # the JudgeSpec id, when the configuration names this judge
    encoder: EncoderChoice | None = None
    # The judge's own cache of its encoders: a claim meets the same evidence sentences in several checks
    # (sub-query in chunk, claim supported), and a long evidence text was embedded again for each.
    _encoders: CachedEncoders | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.embed is not None and self.encoder is not None:
            raise ValueError("give the semantic judge an encoder or an embedding function, not both")
        if self.encoder is not None:
            self._encoders = CachedEncoders(self.encoder)
        elif self.embed is not None:
            function = self.embed
            self._encoders = CachedEncoders(EncoderChoice("custom", "custom"), build=lambda _: CallableEncoder(function))

    @property
    def judge_id(self) -> str:
        """The configured id, else the rule with its encoder as a JudgeSpec names it (schema.config.encoder_suffix)."""
        if self.name:
            return self.name
        return str(self.rule) + encoder_suffix(self.encoder.label if self.encoder and self.rule is BaselineRule.SEMANTIC
                                               else None)

    async def judge(self, kind: CheckKind, checks: Sequence[Check]) -> list[Verdict]:
        if self.rule is BaselineRule.SEMANTIC and self._encoders is None:
            raise ValueError("the semantic baseline judge needs an encoder or an embedding function")
        return [self._decide(kind, check) for check in checks]

    def _similarity(self, kind: CheckKind, subject: str, target: str) -> float:
        if self.rule is BaselineRule.LEXICAL:
            return overlap(subject, target)
        assert self._encoders is not None
        encoders = self._encoders
        roles = text_roles(kind)
        windowed = encoders.encoder_name(kind) not in (EncoderName.MINILM, "custom")
        return best_sentence_cosine(lambda texts, role: encoders.embed(kind, texts, role), subject, target, roles,
                                    windowed=windowed)

    def _tie_margin(self) -> float:
        e5 = self._encoders is not None and self._encoders.encoder_name(CheckKind.PAIRWISE) == EncoderName.E5
        return E5_TIE_MARGIN if self.rule is BaselineRule.SEMANTIC and e5 else TIE_MARGIN

    def _threshold(self, kind: CheckKind) -> float:
        encoder = self._encoders.encoder_name(kind) if self._encoders else None
        strict, lenient = (E5_THRESHOLDS if self.rule is BaselineRule.SEMANTIC and encoder == EncoderName.E5
                           else THRESHOLDS[self.rule])
        return lenient if kind is CheckKind.CLAIM_SERVES_SUBQUERY else strict

    def _decide(self, kind: CheckKind, check: Check) -> Verdict:
        common: dict[str, Any] = {"check_id": check.id, "judge_id": self.judge_id, "model_id": self.judge_id,
                                  "status": VerdictStatus.OK}
        if kind is CheckKind.DIMENSION_SCORE:
            score = round(10 * self._answer_quality(check.subject_text, check))
            return Verdict(score=float(score), rationale=f"{self.rule} score {score}/10", **common)
        if kind is CheckKind.PAIRWISE:
            a, b = (self._preference_score(answer, check) for answer in (check.subject_text, check.target_text))
            label = Label.TIE if abs(a - b) < self._tie_margin() or a == b else (Label.A if a > b else Label.B)
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
        threshold = self._threshold(kind)
        similarity = self._similarity(kind, check.subject_text, check.target_text)
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
        assert self._encoders is not None
        role, _ = text_roles(CheckKind.PAIRWISE)
        vectors = np.asarray(self._encoders.embed(CheckKind.PAIRWISE, [first, second], role), dtype=np.float64)
        norms = np.linalg.norm(vectors, axis=1)
        return float(vectors[0] @ vectors[1] / max(norms[0] * norms[1], 1e-12))

    def _answer_quality(self, answer: str, check: Check) -> float:
        if check.reference:
            return content_f1(answer, check.reference)
        return overlap(check.question, answer)


RoleEmbed = Callable[[list[str], TextRole], np.ndarray]


def best_sentence_cosine(embed: Embed | RoleEmbed, subject: str, target: str,
                         roles: tuple[TextRole, TextRole] | None = None, *, windowed: bool = False) -> float:
    """The semantic rule's similarity: the cosine of the subject with the best single sentence of the target, not
    the whole target: an element stated in the fifth chunk of a long context must not be diluted by (or cut off
    with) the other chunks. With `roles`, `embed` takes (texts, role) and the subject and the sentences are
    embedded in their roles. `windowed`: the best of the target's windows (passage_windows) instead."""
    windows = passage_windows(subject, target) if windowed else (sentences(target) or [target])
    if roles is None:
        vectors = np.asarray(embed([subject, *windows]), dtype=np.float64)  # type: ignore[call-arg]
    elif roles[0] is roles[1]:
        vectors = np.asarray(embed([subject, *windows], roles[0]), dtype=np.float64)  # type: ignore[call-arg]
    else:
        vectors = np.concatenate([np.asarray(embed([subject], roles[0]), dtype=np.float64),  # type: ignore[call-arg]
                                  np.asarray(embed(windows, roles[1]), dtype=np.float64)])  # type: ignore[call-arg]
    norms = np.linalg.norm(vectors, axis=1)
    if norms[0] == 0:
        return 0.0
    cosines = vectors[1:] @ vectors[0] / np.maximum(norms[1:] * norms[0], 1e-12)
    return float(cosines.max())


def passage_windows(subject: str, target: str, keep: int = EMBEDDED_SENTENCES,
                    words: int = WINDOW_WORDS) -> list[str]:
    """The target's `keep` sentences of the highest token F1 with the subject, in the target's order, joined into
    runs of consecutive kept sentences of at most `words` words (a longer sentence is a window alone)."""
    found = Sentences.of(subject, target)
    kept = set(found.nearest_indices(keep))
    windows: list[list[str]] = []
    size, previous = 0, -2
    for index, text in enumerate(found.texts):
        if index not in kept:
            continue
        length = len(text.split())
        if windows and previous == index - 1 and size + length <= words:
            windows[-1].append(text)
            size += length
        else:
            windows.append([text])
            size = length
        previous = index
    return [" ".join(window) for window in windows]


@dataclass(frozen=True)
class Sentences:
    """The target's sentences (the whole target when it has none) and each one's token F1 with the subject."""

    texts: tuple[str, ...]
    f1: tuple[float, ...]

    @classmethod
    def of(cls, subject: str, target: str) -> Sentences:
        texts = tuple(sentences(target) or [target])
        return cls(texts, tuple(content_f1(subject, text) for text in texts))

    def best(self) -> str:
        return self.texts[max(range(len(self.texts)), key=self.f1.__getitem__)]

    def nearest(self, n: int = EMBEDDED_SENTENCES) -> list[str]:
        """The `n` sentences of the highest F1, in the target's order (a stable sort: ties keep it too)."""
        return [self.texts[i] for i in self.nearest_indices(n)]

    def nearest_indices(self, n: int = EMBEDDED_SENTENCES) -> list[int]:
        if len(self.texts) <= n:
            return list(range(len(self.texts)))
        return sorted(sorted(range(len(self.texts)), key=lambda i: -self.f1[i])[:n])


def content_f1(prediction: str, reference: str) -> float:
    """Token F1 over content words (the lexical rule's dimension score)."""
    predicted, wanted = content_tokens(prediction), content_tokens(reference)
    common = len(predicted & wanted)
    if not common:
        return 0.0
    precision, recall = common / len(predicted), common / len(wanted)
    return 2 * precision * recall / (precision + recall)
