"""What a run tells other tools: OpenTelemetry spans of runs, samples, graph nodes and LLM calls
(`telemetry`), and verdict figures as LangSmith feedback on traced runs (`langsmith_feedback`).

The names below load on first use (lazy_loader, from the stub `__init__.pyi` beside this file, which is also
what type checkers read).
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
