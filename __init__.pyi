"""The public API of ragcourt (see __init__.py)."""

from .data.loaders import load_hotpotqa, load_samples
from .live.evaluator import LiveCounts, LiveEvaluator, live_config
from .runs.api import EvalResult, aevaluate, astream, evaluate, reference_system
from .runs.workspace import Workspace
from .schema import Sample, SampleDiagnostics
from .schema.config import EvalConfig, JudgeSpec, load_config
from .stores.embeddings import MiniLMEmbedding
from .stores.vectors import VectorStore
from .systems import ExtractiveGenerator, LangChainSystem, Precomputed, RAGSystem, ReferenceRAG

__version__: str

__all__ = [
    "EvalConfig",
    "EvalResult",
    "ExtractiveGenerator",
    "JudgeSpec",
    "LangChainSystem",
    "LiveCounts",
    "LiveEvaluator",
    "MiniLMEmbedding",
    "Precomputed",
    "RAGSystem",
    "ReferenceRAG",
    "Sample",
    "SampleDiagnostics",
    "VectorStore",
    "Workspace",
    "aevaluate",
    "astream",
    "evaluate",
    "live_config",
    "load_config",
    "load_hotpotqa",
    "load_samples",
    "reference_system",
]
