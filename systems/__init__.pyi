"""The public names of ragcourt.systems (see __init__.py)."""

from .confidence_probe import ConfidenceProbe, ProbedConfidence
from .langchain_system import (
    ContextFormat,
    LangChainSystem,
    RetrieverControl,
    answer_text,
    chunks_from_documents,
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
    "ConditionUnavailable",
    "ConfidenceProbe",
    "ContextFormat",
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
    "context_ids",
    "render_chunks",
    "resized_retriever",
    "retriever_control",
]
