"""The public names of ragcourt.graphs (see __init__.py)."""

from .sample import (
    build_sample_graph,
)
from .tournament import (
    build_match_graph,
)

__all__ = [
    "build_match_graph",
    "build_sample_graph",
]
