"""Live traffic: evaluating a LangChain app's requests as they happen, in a worker process.

- `evaluator`: LiveEvaluator, the app-side handler and its counts (LiveCounts, live_config).
- `engine`: the worker side, one request through the per-sample graph.
- `process`: the worker process and the pipe between them (hand-off in batches, doorbell, events back).

The names below load on first use (lazy_loader, from the stub `__init__.pyi` beside this file, which is also
what type checkers read).
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
