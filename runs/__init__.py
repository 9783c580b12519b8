"""The run level: evaluations built from a configuration, run over many samples, and what is done with runs.

- `api`: the public Python API: evaluate / aevaluate / astream, EvalResult, reference_system.
- `workspace`: the folder a project's runs share (Workspace, DEFAULT_HOME, HOTPOTQA_COLLECTION).
- `models`: building a run from its configuration (Models, check_model_specs, eval_context).
- `runner`: many samples through the per-sample graph, resumable (Runner, RunPaths, RunLock).
- `rescore`, `rerun`, `element_lists`: recompute a run (a weighted run's last step too), re-test changed rows,
  edit frozen element lists.
- `ranking`: DICE tournaments of systems.
- `background_loop`, `gc_policy`: the event loop of the synchronous API, the garbage collector during a run.

Beside it: live traffic (ragcourt.live) and many processes (ragcourt.cluster) build on runs; judge validity
(ragcourt.validity) and telemetry (ragcourt.observability) sit below it.

The names below load on first use (lazy_loader, from the stub `__init__.pyi` beside this file, which is also
what type checkers read): `ragcourt.runs.Workspace` imports runs/workspace.py alone, never the heavy modules
(ranking, rerun) of names not asked for.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
