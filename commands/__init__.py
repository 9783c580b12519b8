"""The CLI's commands, one module each; cli.py registers them on the typer app (`<command>.register(app)`).
Helpers they share: `output` (console, tables, failing with exit code 2) and `evaluation` (reading datasets,
building the system under test, running and printing an evaluation).

The command modules load on first use (lazy_loader, from the stub `__init__.pyi` beside this file).
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
