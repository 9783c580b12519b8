"""The public names of ragcourt.report (see __init__.py)."""

from .data import (
    DRILL_DOWN_QUESTIONS,
    collect,
)
from .export import (
    export_run,
)
from .html import (
    content_security_policy,
    num,
    render_report,
    verdict_text,
)
from .method_charts import (
    write_method_charts,
)
from .sections import (
    method_sections,
)

__all__ = [
    "collect",
    "content_security_policy",
    "DRILL_DOWN_QUESTIONS",
    "export_run",
    "method_sections",
    "num",
    "render_report",
    "verdict_text",
    "write_method_charts",
]
