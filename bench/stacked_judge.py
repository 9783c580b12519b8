"""The stacked offline judge on the shared slices (issue 33, item 2): its cross-validated figures, and its CPU per
check beside the semantic baseline's.

1. Figures: per set and label reference, the stacked model (validity.stacking.fit_labelled: logistic regression
   over judging.features, C chosen by k-fold) with its k-fold cross-validated AUROC and kappa (each fold decided
   by a model fit without it; a question's paragraphs kept in one fold), or why the fit is refused (fewer than
   30 labels of a class).
2. CPU: the semantic baseline and the stacked judge decide the same checks, each with a fresh embedding cache
   (the MiniLM model loaded once before, outside the timing); CPU seconds (process time: every thread of
   onnxruntime counted) per check and their ratio. The stacked judge's timing uses the HotpotQA model (on WiCE
   its kind relabelled to claim_supported, as no WiCE model can be fit: the coefficients do not change its cost).

3. What features v2 costs the best-sentence cosine (no label used): per WiCE claim, the best cosine among the
   EMBEDDED_SENTENCES sentences nearest in words against the best among all sentences.

Run: python bench/stacked_judge.py [--folds 5] [--seed 0]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ragcourt.data.validity_sets import load_hotpotqa_paragraphs, load_wice
from ragcourt.judging import BaselineJudge, BaselineRule
from ragcourt.judging.features import EMBEDDED_SENTENCES, FeatureExtractor, Sentences
from ragcourt.judging.learned import LearnedJudge
from ragcourt.schema import Check, CheckKind
from ragcourt.schema.stacking import StackedModel
from ragcourt.stores.embeddings import EmbeddingCache, MiniLMEmbedding
from ragcourt.validity.measure import (
    HOTPOTQA_SUPPORTING,
    WICE_LENIENT,
    WICE_STRICT,
    LabelledCheck,
    file_sha256,
    hotpotqa_checks,
    wice_checks,
)
from ragcourt.validity.stacking import fit_labelled

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
WICE = SHARED / "wice" / "claim_dev_sample_60.jsonl"
HOTPOTQA = SHARED / "hotpotqa" / "dev_sample_100.jsonl"


def _cpu_per_check(judge: BaselineJudge | LearnedJudge, kind: CheckKind, checks: Sequence[Check]) -> float:
    """CPU seconds per check, one batch per sample as a run and the suite batch them."""
    by_sample: dict[str, list[Check]] = {}
    for check in checks:
        by_sample.setdefault(check.sample_id, []).append(check)
    start = time.process_time()
    for batch in by_sample.values():
        asyncio.run(judge.judge(kind, batch))
    return (time.process_time() - start) / len(checks)


def _nearest_sentences_cost(embed: MiniLMEmbedding, checks: Sequence[Check]) -> None:
    cached = EmbeddingCache(embed)
    gaps = []
    for check in checks:
        split = Sentences.of(check.subject_text, check.target_text)
        best_of = {}
        for name, texts in (("all", list(split.texts)), ("nearest", split.nearest())):
            vectors = np.asarray(cached([check.subject_text, *texts]), dtype=np.float64)
            norms = np.linalg.norm(vectors, axis=1)
            best_of[name] = float(np.max(vectors[1:] @ vectors[0] / np.maximum(norms[1:] * norms[0], 1e-12)))
        gaps.append(best_of["all"] - best_of["nearest"])
    print(f"best cosine among the {EMBEDDED_SENTENCES} nearest sentences = among all for "
          f"{sum(gap <= 1e-9 for gap in gaps)} of {len(gaps)} WiCE claims; below by at most {max(gaps):.3f} "
          f"(mean {np.mean(gaps):.4f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    embed = MiniLMEmbedding()
    embed(["load the model before any timing"])
    sets: list[tuple[str, Path, list[LabelledCheck], tuple[str, ...]]] = [
        ("WiCE", WICE, wice_checks(load_wice(WICE)), (WICE_STRICT, WICE_LENIENT)),
        ("HotpotQA", HOTPOTQA, hotpotqa_checks(load_hotpotqa_paragraphs(HOTPOTQA)), (HOTPOTQA_SUPPORTING,)),
    ]
    fitted: list[StackedModel] = []
    print(f"stacked judge, {args.folds}-fold cross-validated (label yes at P(yes) >= 0.5)")
    for name, path, labelled, references in sets:
        for reference in references:
            start = time.perf_counter()
            models, refused = fit_labelled(labelled, reference, FeatureExtractor(embed), data_sha256=file_sha256(path),
                                           folds=args.folds, seed=args.seed)
            for model in models:
                fitted.append(model)
                print(f"  {name} {reference}: n={model.n_positive}+{model.n_negative} C={model.regularisation:g} "
                      f"cv AUROC {model.cross_validated_auroc:.3f} cv kappa {model.cross_validated_kappa:.3f} "
                      f"(in-sample AUROC {model.in_sample_auroc:.3f} kappa {model.in_sample_kappa:.3f}; "
                      f"{time.perf_counter() - start:.1f} s wall)")
                print("    coefficients: " + ", ".join(f"{f} {c:+.2f}" for f, c in
                                                         zip(model.features, model.coefficients, strict=True)))
            for reason in refused:
                print(f"  {name} {reference}: refused: {reason}")
    model = next((m for m in fitted if m.kind is CheckKind.SUBQUERY_IN_CHUNK), None)
    if model is None:
        raise SystemExit("no HotpotQA model was fit: nothing to time")
    print("CPU seconds per check (fresh embedding caches; MiniLM loaded before)")
    for name, _, labelled, _ in sets:
        kind = labelled[0].check.kind
        checks = [entry.check for entry in labelled]
        semantic = _cpu_per_check(BaselineJudge(BaselineRule.SEMANTIC, embed=embed), kind, checks)
        stacked = _cpu_per_check(LearnedJudge({kind: model.model_copy(update={"kind": kind})}, embed), kind, checks)
        print(f"  {name} ({len(checks)} {kind} checks): semantic {semantic * 1000:.1f} ms, stacked "
              f"{stacked * 1000:.1f} ms, ratio {stacked / semantic:.2f}")
    _nearest_sentences_cost(embed, [entry.check for entry in sets[0][2]])


if __name__ == "__main__":
    main()
