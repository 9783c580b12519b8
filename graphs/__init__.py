"""The state machines, wiring only: `sample` (the per-sample graph) and `tournament` (one DICE match).

The names below are loaded on first use (lazy_loader, from the stub `__init__.pyi` beside this file, which
is also what type checkers read): importing one module of the package never imports the others.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
