"""The public names of ragcourt.live (see __init__.py)."""

from .evaluator import LiveCounts, LiveEvaluator, check_live_config, live_config

__all__ = [
    "LiveCounts",
    "LiveEvaluator",
    "check_live_config",
    "live_config",
]
