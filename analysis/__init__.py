"""Figures read back from a stored run, with no LLM and no graph: the run summary (`summary`), the
method tables of CuBE, CUE-R and Q-CARE/elements (`cube_tables`, `cuer_tables`, `qcare_tables`), run-to-run
noise (`noise`) and the numbered reasons of n/a figures (`na_notes`).

The names below are loaded on first use (lazy_loader, from the stub `__init__.pyi` beside this file, which
is also what type checkers read): importing one module of the package never imports the others.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
