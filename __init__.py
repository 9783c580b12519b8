"""ragcourt: evaluate RAG systems and say where quality is lost (retrieval, generation or documents).

The public API is loaded on first use, so `import ragcourt` stays light and builds nothing.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "evaluate": "ragcourt.runs.api",
    "aevaluate": "ragcourt.runs.api",
    "astream": "ragcourt.runs.api",
    "EvalResult": "ragcourt.runs.api",
    "Workspace": "ragcourt.runs.api",
    "reference_system": "ragcourt.runs.api",
    "EvalConfig": "ragcourt.schema.config",
    "JudgeSpec": "ragcourt.schema.config",
    "load_config": "ragcourt.schema.config",
    "ReferenceRAG": "ragcourt.systems",
    "LangChainSystem": "ragcourt.systems",
    "LiveEvaluator": "ragcourt.runs.live",
    "LiveCounts": "ragcourt.runs.live",
    "live_config": "ragcourt.runs.live",
    "Precomputed": "ragcourt.systems",
    "RAGSystem": "ragcourt.systems",
    "ExtractiveGenerator": "ragcourt.systems",
    "Sample": "ragcourt.schema",
    "SampleDiagnostics": "ragcourt.schema",
    "VectorStore": "ragcourt.stores.vectors",
    "MiniLMEmbedding": "ragcourt.stores.embeddings",
    "load_samples": "ragcourt.data.loaders",
    "load_hotpotqa": "ragcourt.data.loaders",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'ragcourt' has no attribute {name!r}")
