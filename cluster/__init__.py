"""One run over many processes: Dask workers draining a PostgreSQL work queue of the run's samples.

- `worker`: registering a run's samples as tasks and draining leased samples (queue_run, adrain).
- `dask_engine`: the coordinator on a Dask cluster (one task per shard, leases taken over when a worker dies).

Named `cluster`, not `distributed`: run from a checkout's root, a `distributed` folder would shadow Dask's.

The names below load on first use (lazy_loader, from the stub `__init__.pyi` beside this file, which is also
what type checkers read).
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
