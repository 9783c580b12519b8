"""Python's cyclic garbage collector during a run: what the libraries loaded before it are exempt from, and how
often the youngest generation is swept.

A run allocates many short-lived objects per sample (records, LangGraph's per-step channels, HTTP request
objects) next to the few hundred thousand long-lived ones its imports made (langchain, pydantic, openai). With
the default thresholds, every few hundred allocations trigger a sweep, and each full collection walks all the
imported objects again: on the zero-latency side by side about a tenth of the evaluator's CPU
(docs/BENCHMARKS.md). `gc.freeze()` moves what exists when the run starts to the permanent generation (never
scanned); a larger first threshold sweeps the youngest objects less often. Reference counting still frees
everything that is not in a cycle at once, so memory is unchanged but for cycles, which wait a little longer.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

RUN_GEN0_THRESHOLD = 10_000  # the default is 700; 10,000 young objects are a few MB at most

_lock = threading.Lock()
_active = 0
_saved: tuple[int, ...] = ()
_frozen_before = 0


@contextmanager
def run_collection() -> Iterator[None]:
    """Within: the objects that exist now frozen, the first threshold raised; restored when the last run that
    entered leaves (runs may overlap in one process)."""
    global _active, _saved, _frozen_before
    with _lock:
        if _active == 0:
            _saved, _frozen_before = gc.get_threshold(), gc.get_freeze_count()
            gc.freeze()
            gc.set_threshold(max(RUN_GEN0_THRESHOLD, _saved[0]), *_saved[1:])
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0:
                gc.set_threshold(*_saved)
                # unfreeze() thaws everything: where the embedding app had frozen objects of its own (a
                # pre-forking server does), they stay frozen, and so do the run's, rather than undoing its choice
                if _frozen_before == 0:
                    gc.unfreeze()
