"""The review desk and the live report in the browser (FastAPI on 127.0.0.1): `app` builds the application
(`create_app`, `DeskSettings`) from routers by concern (`desk_routes`, `progress_routes`, `report_routes`);
`security` decides who may read and decide, `desk` turns a decision into a Review, `highlight` marks shared
words, `rescorer` recomputes a run after each decision.

The names below load on first use (lazy_loader, from the stub `__init__.pyi` beside this file, which is also
what type checkers read): FastAPI is imported only by those who serve.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
