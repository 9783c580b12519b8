"""The public names of ragcourt.data (see __init__.py)."""

from .loaders import (
    BundledDataset,
    DatasetError,
    DatasetErrors,
    RagCheckerPair,
    bundled,
    label_from_human_score,
    load_corpus,
    load_hotpotqa,
    load_ragchecker_pairs,
    load_samples,
    read_jsonl_models,
)
from .question_sets import (
    DOCUMENT_GAP_WARNING,
    generate_question_set,
    pick_documents,
    sample_row,
)

__all__ = [
    "bundled",
    "BundledDataset",
    "DatasetError",
    "DatasetErrors",
    "DOCUMENT_GAP_WARNING",
    "generate_question_set",
    "label_from_human_score",
    "load_corpus",
    "load_hotpotqa",
    "load_ragchecker_pairs",
    "load_samples",
    "pick_documents",
    "RagCheckerPair",
    "read_jsonl_models",
    "sample_row",
]
