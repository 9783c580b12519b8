"""The public names of ragcourt.validity (see __init__.py)."""

from .calibration import HumanLabel, KindCalibration, calibrate, load_labels, review_labels
from .jury_weights import JuryWeights, fit_jury
from .measure import Suite
from .profile import apply_profile, load_profile
from .review_budget import plan_reviews
from .suite import run_suite

__all__ = [
    "HumanLabel",
    "JuryWeights",
    "KindCalibration",
    "Suite",
    "apply_profile",
    "calibrate",
    "fit_jury",
    "load_labels",
    "load_profile",
    "plan_reviews",
    "review_labels",
    "run_suite",
]
