"""The public names of ragcourt.testing (see __init__.py)."""

from .evaluator import RagAssertionError, RagEvaluator, assert_rag

__all__ = ["RagAssertionError", "RagEvaluator", "assert_rag"]
