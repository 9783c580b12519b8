"""Judge validity: the judges and the jury against human labels, and what is learned from them.

- `calibration`: agreement of each judge and the jury with labels (HumanLabel, calibrate, review_labels).
- `measure`, `suite`, `meta_eval`: the validity suite on published labelled sets (WiCE, HotpotQA, RAGChecker).
- `profile`: calibration profiles (learned thresholds) and applying them to a jury.
- `stacking`: fitting the stacked offline judge (judging.learned) from labels (`--fit-stacked`).
- `jury_weights`: Dawid-Skene estimates of each judge's worth from a run's own verdicts and reviews.
- `review_budget`: which escalated checks a person's next review moves the figures most.

Below runs/ (a run applies a profile and weighs its jury with them), above graphs/ (calibration replays checks).

The names below load on first use (lazy_loader, from the stub `__init__.pyi` beside this file, which is also
what type checkers read).
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
