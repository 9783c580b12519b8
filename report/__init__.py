"""Reports people read: one self-contained HTML file with inline SVG charts (`html`, `sections`,
`svg`, `cube_chart`, `cuer_chart`, `cuer_heatmap`, `glance_charts`, `method_charts`), the data behind it
(`data`, with the jury's estimates and the applied calibration profile from `trust`) and CSV/Parquet exports
(`export`).

The names below are loaded on first use (lazy_loader, from the stub `__init__.pyi` beside this file, which
is also what type checkers read): importing one module of the package never imports the others.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
