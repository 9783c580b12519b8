"""ragcourt in pytest: the plugin (`plugin`, registered as the `pytest11` entry point `ragcourt`) with its
fixture `ragcourt_eval`, and the assertion `assert_rag`, which evaluates one or many samples through the
graph (the Python API, ragcourt.runs.api) and fails with the diagnostics that explain why.

The names below are loaded on first use (lazy_loader, from the stub `__init__.pyi` beside this file): pytest
loads the plugin in every session, and it must cost nothing until a test asks for an evaluation.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
