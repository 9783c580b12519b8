"""The public names of ragcourt.systems (see __init__.py)."""

from .bm25 import BM25Index
from .confidence_probe import ConfidenceProbe, ProbedConfidence
from .langchain_system import (
    ContextFormat,
    DocumentParts,
    LangChainSystem,
    RetrieverControl,
    answer_text,
    chunks_from_documents,
    chunks_from_parts,
    document_parts,
    resized_retriever,
    retriever_control,
)
from .precomputed import Precomputed
from .protocol import (
    ConditionUnavailable,
    Generation,
    Generator,
    RAGSystem,
    context_ids,
    render_chunks,
)
from .reference import ExtractiveGenerator, GroundedAnswer, LLMGenerator, ReferenceRAG

__all__ = [
    "BM25Index",
    "ConditionUnavailable",
    "ConfidenceProbe",
    "ContextFormat",
    "DocumentParts",
    "ExtractiveGenerator",
    "Generation",
    "Generator",
    "GroundedAnswer",
    "LLMGenerator",
    "LangChainSystem",
    "Precomputed",
    "ProbedConfidence",
    "RAGSystem",
    "ReferenceRAG",
    "RetrieverControl",
    "answer_text",
    "chunks_from_documents",
    "chunks_from_parts",
    "context_ids",
    "document_parts",
    "render_chunks",
    "resized_retriever",
    "retriever_control",
]
