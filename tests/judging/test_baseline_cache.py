"""The semantic baseline embeds each text once per judge, and decides exactly as it did when it embedded the
subject and every sentence of the target again for each check."""

from __future__ import annotations

import json

import numpy as np

from ragcourt.data.loaders import BundledDataset, bundled
from ragcourt.judging import BaselineJudge, BaselineRule
from ragcourt.judging.baseline import THRESHOLDS, similarity_probabilities
from ragcourt.metrics.text import sentences
from ragcourt.schema import NORMAL, Check, CheckKind, Label
from ragcourt.stores.embeddings import MiniLMEmbedding


def hotpot_checks(n: int) -> list[tuple[CheckKind, Check]]:
    """Per HotpotQA question, the two checks that share a long target in a Q-CARE run (sub-query in chunk,
    claim supported: the question against its ten paragraphs joined) and the one against a short one."""
    rows = [json.loads(line) for line in bundled(BundledDataset.HOTPOTQA_DEV_100).read_text().splitlines()[:n]]
    out = []
    for number, row in enumerate(rows):
        question = row["question_text"]
        context = " ".join(p["paragraph_text"] for p in row["contexts"])
        answer = row["answers_objects"][0]["spans"][0]
        for kind, target in ((CheckKind.SUBQUERY_IN_CHUNK, context), (CheckKind.CLAIM_SUPPORTED, context),
                             (CheckKind.CLAIM_SERVES_SUBQUERY, f"The answer is {answer}.")):
            out.append((kind, Check(kind=kind, sample_id=f"q{number}", condition=NORMAL, subject_id="s",
                                    subject_text=question, target_id=f"t-{kind}", target_text=target,
                                    question=question)))
    return out


def uncached_probabilities(minilm: MiniLMEmbedding, kind: CheckKind, check: Check) -> dict[Label, float]:
    """The semantic rule as the judge computed it before the cache: one embedding call per check."""
    windows = sentences(check.target_text) or [check.target_text]
    vectors = np.asarray(np.asarray(minilm([check.subject_text, *windows]), dtype=np.float32), dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1)
    similarity = float((vectors[1:] @ vectors[0] / np.maximum(norms[1:] * norms[0], 1e-12)).max())
    strict, lenient = THRESHOLDS[BaselineRule.SEMANTIC]
    return similarity_probabilities(similarity, lenient if kind is CheckKind.CLAIM_SERVES_SUBQUERY else strict)


async def test_semantic_verdicts_are_unchanged_by_the_cache_and_each_text_is_embedded_once() -> None:
    minilm = MiniLMEmbedding()
    asked: list[str] = []

    def embed(texts: list[str]) -> np.ndarray:
        asked.extend(texts)
        return np.asarray(minilm(texts), dtype=np.float32)

    judge = BaselineJudge(BaselineRule.SEMANTIC, embed=embed)
    checks = hotpot_checks(3)
    verdicts = [(await judge.judge(kind, [check]))[0] for kind, check in checks]
    for (kind, check), verdict in zip(checks, verdicts, strict=True):
        expected = uncached_probabilities(minilm, kind, check)
        assert verdict.probabilities == expected  # equal, not approximately: the same vectors
        assert verdict.label is (Label.YES if expected[Label.YES] >= 0.5 else Label.NO)
    distinct = {text for _, check in checks for text in [check.subject_text, *sentences(check.target_text)]}
    assert len(asked) == len(set(asked)) == len(distinct)
    # before, every check sent its subject and all its target's sentences
    assert sum(1 + len(sentences(check.target_text)) for _, check in checks) > 1.9 * len(asked)
