"""Pure maths of the five methods: no I/O, no model, no store; values are `schema.MetricValue`.

`qcare` (C-Prec@k, C-nDCG@k, completeness, conciseness, verifiableness; seed 002), `elements` (gap
attribution, run-to-run noise; seed 003), `cube` (bounds, trimmed means, weights; seed 000), `cuer` (answer
metrics and perturbation effects; seed 004), `dice` (pairwise probabilities, Elo, Swiss; seed 001),
`agreement` (accuracy, kappas, correlations, bootstrap CIs), `text` (tokens, sentences, numbers) and
`values` (metric names and n/a values).

The names below are loaded on first use (lazy_loader, from the stub `__init__.pyi` beside this file, which
is also what type checkers read): importing one module of the package never imports the others.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
