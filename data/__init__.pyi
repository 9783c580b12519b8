"""The public names of ragcourt.data (see __init__.py)."""

from .formats import (
    DatasetFormat,
    load_dataset,
    parse_column_map,
    read_dataset,
    stream_dataset,
)
from .human_scores import (
    HumanScores,
    load_human_scores,
)
from .loaders import (
    DEFAULT_LIMITS,
    BundledDataset,
    DatasetError,
    DatasetErrors,
    FieldLimits,
    HumanAspect,
    RagCheckerPair,
    bundled,
    is_hotpotqa,
    label_from_human_score,
    load_corpus,
    load_corpus_file,
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
from .reading import SampleStream

__all__ = [
    "bundled",
    "is_hotpotqa",
    "BundledDataset",
    "DatasetError",
    "DEFAULT_LIMITS",
    "DatasetErrors",
    "DatasetFormat",
    "FieldLimits",
    "HumanAspect",
    "DOCUMENT_GAP_WARNING",
    "generate_question_set",
    "HumanScores",
    "label_from_human_score",
    "load_corpus",
    "load_corpus_file",
    "load_dataset",
    "load_hotpotqa",
    "load_human_scores",
    "load_ragchecker_pairs",
    "load_samples",
    "parse_column_map",
    "pick_documents",
    "RagCheckerPair",
    "read_dataset",
    "read_jsonl_models",
    "sample_row",
    "SampleStream",
    "stream_dataset",
]
