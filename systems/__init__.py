"""The system under test: the RAGSystem protocol and its adapters.

- `protocol`: what ragcourt asks of a system (`RAGSystem`, `Generation`, `Generator`, `ConditionUnavailable`)
  and how chunks are shown to a generator (`context_ids`, `render_chunks`).
- `reference`: the built-in reference system (`ReferenceRAG`) and its generators (`LLMGenerator`,
  `ExtractiveGenerator`).
- `precomputed`: contexts and answers given in the dataset (`Precomputed`).
- `langchain_system`: a LangChain app evaluated as it is (`LangChainSystem`).
- `confidence_probe`: CUE-R's optional confidence for a system that reports none (`ConfidenceProbe`).
"""

from ragcourt.systems.confidence_probe import ConfidenceProbe, ProbedConfidence
from ragcourt.systems.langchain_system import (
    ContextFormat,
    LangChainSystem,
    RetrieverControl,
    answer_text,
    chunks_from_documents,
    resized_retriever,
    retriever_control,
)
from ragcourt.systems.precomputed import Precomputed
from ragcourt.systems.protocol import (
    ConditionUnavailable,
    Generation,
    Generator,
    RAGSystem,
    context_ids,
    render_chunks,
)
from ragcourt.systems.reference import ExtractiveGenerator, GroundedAnswer, LLMGenerator, ReferenceRAG

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
