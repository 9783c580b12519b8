"""The public names of ragcourt.cluster (see __init__.py)."""

from .dask_engine import DaskOptions, DistributedRunError
from .worker import adrain, queue_run

__all__ = [
    "DaskOptions",
    "DistributedRunError",
    "adrain",
    "queue_run",
]
