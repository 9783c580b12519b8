"""How far a run's verdicts can be trusted, as the report shows it: what each judge is worth per check kind
(the jury's Dawid-Skene estimates from the run's own verdicts and reviews, validity.jury_weights, the table
`ragcourt summary --jury` prints) and the calibration profile the run applied, with each threshold's
held-out (cross-validated) figure (validity.profile).

Both are read when the report is collected; neither asks a judge anything. Every text here reaches the page
through the templates' autoescaping.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ragcourt.schema.calibration import CalibrationProfile
from ragcourt.schema.config import ConfigError, EvalConfig, Reconcile
from ragcourt.stores.records import RecordStore
from ragcourt.validity.jury_weights import (
    changed_heading,
    changed_text,
    estimate_text,
    fit_jury,
    weighting_sentence,
)
from ragcourt.validity.profile import STACKED, load_profile, profile_tag, stacked_tag

if TYPE_CHECKING:  # pandas is imported where a frame is made: report.data is read by the web desk too
    import pandas as pd

CALIBRATED = "+cal-"  # a calibrated judge's verdicts are stored as `<judge>+cal-<profile tag>`


@dataclass(frozen=True)
class JuryView:
    weighted: bool  # the run decided by the estimates (`reconcile: weighted`), or they would have
    frame: pd.DataFrame | None  # per check kind: checks, reviewed, each judge's accuracy, changed decisions
    sentence: str  # how many decisions the weighting changed (or would change) in all
    warning: str | None = None  # why there are no estimates


@dataclass(frozen=True)
class ProfileView:
    path: str
    frame: pd.DataFrame | None  # one row per learned threshold
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def hidden(self) -> tuple[str, ...]:
        """The page shows why a cross-validated figure is n/a only when one is (the export always has it)."""
        if self.frame is None or self.frame["cross_validated_na_reason"].notna().any():
            return ()
        return ("cross_validated_na_reason",)


def jury_view(store: RecordStore, run_id: str, config: EvalConfig) -> JuryView | None:
    """The jury's estimates of the run (None for a run of one judge: there is nothing to weigh)."""
    if len(config.judges) < 2:
        return None
    weighted = config.reconcile is Reconcile.WEIGHTED
    try:
        weights = fit_jury(store, run_id, config)
    except ConfigError as error:
        return JuryView(weighted, None, "", warning=f"jury estimates n/a: {error}")
    import pandas as pd

    columns = ["check_kind", "checks", "reviewed", *weights.judges, changed_heading(weighted)]
    rows = [[str(kind.kind), kind.n_checks, kind.n_reviewed,
             *(estimate_text(kind, judge) for judge in weights.judges), changed_text(kind)]
            for kind in weights.kinds]
    return JuryView(weighted, pd.DataFrame(rows, columns=columns), weighting_sentence(weights, weighted))


def profile_view(config: EvalConfig, stored_judges: Collection[str]) -> ProfileView | None:
    """The calibration profile the run applied (None: it applied none). `stored_judges`: the judge ids of the
    run's verdicts, which say which profile the run really applied (its tag is in the calibrated judges' ids)."""
    path = config.calibration_profile
    if path is None:
        return None
    applied_tags = sorted({j.split(CALIBRATED, 1)[1] for j in stored_judges if CALIBRATED in j})
    try:
        profile = load_profile(config)
    except ConfigError as error:
        seen = f" (the run's calibrated judges carry tag {', '.join(applied_tags)})" if applied_tags else ""
        return ProfileView(path, None, warnings=(f"the profile cannot be read now, so its figures are not shown"
                                                 f"{seen}: {error}",))
    assert profile is not None
    tag = profile_tag(profile)
    warnings = []
    if applied_tags and tag not in applied_tags:
        warnings.append(f"the file {path} is not the profile this run applied: its thresholds have tag {tag}, the "
                        f"run's calibrated verdicts tag {', '.join(applied_tags)}; the figures below are the file's")
    notes = (f"{path}: suite {profile.suite}, thresholds learned on {profile.data_file} (sha256 "
             f"{profile.data_sha256[:12]}…) on {profile.created_at:%Y-%m-%d %H:%M UTC}; calibrated judges are stored "
             f"as '<judge>{CALIBRATED}{tag}'",
             "on each kind below the judge's label is yes exactly when its P(yes) >= the threshold; a verdict "
             "without a probability keeps its label",
             "cross_validated: the objective of held-out decisions (k-fold, each fold decided by a threshold fit "
             "without it), the figure to expect on new items; in_sample is measured on the items the threshold "
             "was fit on (optimistic)")
    # the stacked models the jury member `learned` applies: their figures are the models' own (schema.stacking)
    learned = tuple(f"the learned judge's {m.describe()} against '{m.labels}' (stored as '<judge>{STACKED}"
                    f"{stacked_tag(profile)}'); in-sample AUROC {_figure(m.in_sample_auroc)}, kappa "
                    f"{_figure(m.in_sample_kappa)}" for m in profile.stacked)
    return ProfileView(path, profile_frame(profile, [spec.judge_id for spec in config.judges]), (*notes, *learned),
                       tuple(warnings))


def _figure(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def profile_frame(profile: CalibrationProfile, run_judges: Collection[str]) -> pd.DataFrame:
    import pandas as pd

    columns = ["judge", "model", "check_kind", "threshold", "objective", "labels", "in_sample", "cross_validated",
               "cross_validated_na_reason", "folds", "n", "n_positive", "n_without_probability", "applied"]
    rows = [[t.judge_id, t.judge_model, str(t.kind), t.threshold, str(t.objective), t.labels, t.in_sample,
             t.cross_validated, t.cross_validated_na, t.folds, t.n, t.n_positive, t.n_without_probability,
             "yes" if t.judge_id in run_judges else "no: not a judge of this run"]
            for t in profile.thresholds]
    return pd.DataFrame(rows, columns=columns)
