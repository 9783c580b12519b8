"""The public names of ragcourt.observability (see __init__.py)."""

from .langsmith_feedback import LangSmithFeedback
from .telemetry import NO_TELEMETRY, Telemetry

__all__ = [
    "LangSmithFeedback",
    "NO_TELEMETRY",
    "Telemetry",
]
