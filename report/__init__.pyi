"""The public names of ragcourt.report (see __init__.py)."""

from .cuer_heatmap import (
    cuer_heatmap_svg,
)
from .data import (
    DRILL_DOWN_QUESTIONS,
    collect,
)
from .export import (
    export_run,
)
from .glance_charts import (
    Distribution,
    GapRow,
    distribution_svg,
    distributions,
    gap_attribution_svg,
    gap_rows,
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
from .trust import (
    JuryView,
    ProfileView,
    jury_view,
    profile_view,
)

__all__ = [
    "collect",
    "content_security_policy",
    "cuer_heatmap_svg",
    "Distribution",
    "distribution_svg",
    "distributions",
    "DRILL_DOWN_QUESTIONS",
    "export_run",
    "gap_attribution_svg",
    "gap_rows",
    "GapRow",
    "jury_view",
    "JuryView",
    "method_sections",
    "num",
    "profile_view",
    "ProfileView",
    "render_report",
    "verdict_text",
    "write_method_charts",
]
