"""ragcourt: evaluate RAG systems and say where quality is lost (retrieval, generation or documents).

The public API is loaded on first use, so `import ragcourt` stays light and builds nothing: the names come
from the stub `__init__.pyi` beside this file (lazy_loader reads it at run time, type checkers read it too),
and each is imported from its layer's package when it is first asked for.
"""

import lazy_loader

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
