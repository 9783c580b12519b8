"""Measurement noise between two runs, and comparing runs against it (seed 003).

`noise_frame`: the same configuration measured twice. Per question, the difference of a per-sample metric
between the runs (`ragcourt noise` defaults to the elements method's two coverages, DEFAULT_METRICS); its
standard deviation over questions, and the band z * sd / sqrt(n) within which a change of the mean is noise,
for the whole run and for each subgroup of a metadata key (a subgroup has fewer questions, so a wider band).

`compare_frame`: two runs (usually two configurations). Per metric the mean difference over the questions
both runs scored, and the band it is judged against: from two repeat runs of one configuration when
given (the seed's measurement noise, scaled to the number of compared questions), else the paired band
of the compared runs themselves (z * sd of the A-B differences / sqrt(n): the 95 % half-width of the
mean difference, which is wider than pure measurement noise whenever the change differs per question).
Each frame says which band it used.

Only two runs of one configuration measure run-to-run noise: `differing_settings` names what else two runs
changed, and a band kept for later comparisons (`SavedBand`) records whether it came from one configuration
or, allowed explicitly, from runs of different configurations (`BandSource`).

Frames keep undefined figures as None (object columns) with a reason column, never NaN.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict

from ragcourt.metrics.elements import Z_95, is_noise, noise_band, run_to_run_noise
from ragcourt.metrics.values import MetricName
from ragcourt.schema import RunInfo, Sample, SampleDiagnostics, SampleStatus
from ragcourt.schema.config import EvalConfig

# Seed 003's noise (per-question sd about 0.14) "comes mainly from the answering LLM": it is measured on the
# elements the answer states. The context side, which a fixed retriever leaves all but unmoved, is shown beside it.
DEFAULT_METRICS = (MetricName.ELEMENT_ANSWER_COVERAGE.value, MetricName.ELEMENT_COVERAGE.value)
# What each element coverage counts, for titles and legends: the two names alone do not say which side is which.
METRIC_MEANINGS = {
    MetricName.ELEMENT_ANSWER_COVERAGE.value: "answer side: share of the reference's elements the answer states",
    MetricName.ELEMENT_COVERAGE.value: "context side: share of the reference's elements found in the retrieved chunks",
}
ALL = "(all)"
PAIRED_BAND = "paired A-B differences (no noise band measured)"


# Settings that change how fast a run goes or where its spans are sent, never a figure: two runs that differ
# only in them are still repeats of one configuration.
SPEED_SETTINGS = frozenset({"concurrency", "llm_concurrency", "telemetry"})
ALLOW_DIFFERENT_CONFIGS = "--allow-different-configs"


class BandSource(StrEnum):
    """Where a noise band's per-question sd was measured."""

    ONE_CONFIGURATION = "one_configuration"  # two runs of one configuration: run-to-run noise
    DIFFERENT_CONFIGURATIONS = "different_configurations"  # allowed by --allow-different-configs: not noise alone


class SavedBand(BaseModel):
    """A per-question sd `ragcourt noise` measured, kept (HOME/noise/bands.json) for later comparisons."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    per_question_sd: float
    n_questions: int
    measured: str  # the runs, or the configuration run twice
    source: BandSource | None = None  # None: kept before ragcourt recorded whether the configurations matched
    differing: tuple[str, ...] = ()  # the settings the runs differed in (DIFFERENT_CONFIGURATIONS)

    @property
    def origin(self) -> str:
        """Where the band came from, for the `band from` column and the gate's lines."""
        if self.source is None:
            return f"`ragcourt noise`: {self.measured} (kept before ragcourt checked that the runs shared a configuration)"
        return f"`ragcourt noise`: {self.measured}"


def differing_settings(a: RunInfo, b: RunInfo) -> list[str]:
    """What two runs differ in besides chance: `system`, then the configuration keys, sorted (SPEED_SETTINGS
    aside). Empty for two runs of one configuration. A key one run lacks (stored before ragcourt had it) counts
    as its default."""
    defaults = EvalConfig().model_dump(mode="json")
    keys = sorted(k for k in {*a.config, *b.config} - SPEED_SETTINGS
                  if a.config.get(k, defaults.get(k)) != b.config.get(k, defaults.get(k)))
    return ["system", *keys] if a.system != b.system else keys


def runs_origin(run_a: str, run_b: str, differing: Sequence[str]) -> str:
    """How a band measured on two stored runs is described: repeats of one configuration, or runs of different
    configurations (naming the settings) that the user allowed."""
    if not differing:
        return f"repeat runs {run_a} / {run_b} of one configuration"
    return (f"runs {run_a} / {run_b} of different configurations ({', '.join(differing)}), allowed by "
            f"{ALLOW_DIFFERENT_CONFIGS}")


def different_configurations_refusal(run_a: str, run_b: str, differing: Sequence[str]) -> str:
    """The one line that refuses a noise band from runs of different configurations."""
    return (f"{run_a} and {run_b} ran different configurations ({', '.join(differing)}): their differences are "
            "not run-to-run noise, so no noise band is taken from them; give two runs of one configuration (`ragcourt "
            f"noise --config FILE --dataset FILE` runs one twice), or {ALLOW_DIFFERENT_CONFIGS} to use them anyway")


# Metrics reported with a cut-off k (`MetricName.at`): C-Prec@k and C-nDCG@k of the retrieval's top_k.
CUT_OFF_METRICS = (MetricName.C_PRECISION.value, MetricName.C_NDCG.value)


def known_metric_names() -> list[str]:
    """Every metric name a run can report, for messages: MetricName values, the scorer's own, NAME@K."""
    return [*(m.value for m in MetricName), *(f"{m}@K" for m in CUT_OFF_METRICS)]


def is_known_metric(name: str) -> bool:
    """Whether `name` is a metric a run can report: a MetricName value, a scorer-added name, or a
    cut-off metric with a positive integer k (`c_prec@5`). Checked before anything runs."""
    base, at, k = name.partition("@")
    if at:
        return base in CUT_OFF_METRICS and re.fullmatch(r"[1-9][0-9]*", k) is not None
    return name in {m.value for m in MetricName}


def unknown_metrics(names: Sequence[str]) -> list[str]:
    """The names in `names` that no run can report (misspellings), in the given order."""
    return [name for name in names if not is_known_metric(name)]


def nothing_varied(frame: pd.DataFrame) -> bool:
    """Whether a `noise_frame` shows the two runs gave identical values on every paired question (the
    whole-run row has sd 0 and mean difference 0): its band of 0 measures no noise at all."""
    rows = frame.loc[frame["group"] == ALL].to_dict("records")
    return bool(rows) and rows[0]["per_question_sd"] == 0 and rows[0]["mean_difference"] == 0


def metric_values(diagnostics: Sequence[SampleDiagnostics], metric: str) -> tuple[dict[str, float], int]:
    """sample id -> value of `metric` for finished samples, and how many finished samples had it n/a."""
    values: dict[str, float] = {}
    n_na = 0
    for d in diagnostics:
        if d.status is not SampleStatus.OK:
            continue
        found = d.metric(metric)
        if found is None:
            continue
        if found.value is None:
            n_na += 1
        else:
            values[d.sample_id] = found.value
    return values, n_na


def metric_names(*runs: Sequence[SampleDiagnostics]) -> list[str]:
    """Metric names present in every run, in first-seen order over the questions by id (the same order
    whatever order the questions finished in)."""
    per_run = [dict.fromkeys(m.name for d in sorted(run, key=lambda d: d.sample_id) for m in d.metrics)
               for run in runs]
    return [name for name in per_run[0] if all(name in names for names in per_run[1:])] if per_run else []


def _groups(samples: Sequence[Sample], by: str | None) -> dict[str, set[str]]:
    groups: dict[str, set[str]] = {ALL: {s.id for s in samples}}
    if by:
        for sample in samples:
            value = sample.metadata.get(by)
            groups.setdefault(f"{by}={'(missing)' if value is None else value}", set()).add(sample.id)
    return groups


def noise_frame(
    run_a: Sequence[SampleDiagnostics], run_b: Sequence[SampleDiagnostics], samples: Sequence[Sample],
    metric: str, by: str | None = None, z: float = Z_95,
) -> pd.DataFrame:
    """One row per group: questions paired, per-question sd, mean difference, band, and whether it is noise."""
    values_a, na_a = metric_values(run_a, metric)
    values_b, na_b = metric_values(run_b, metric)
    rows: list[dict[str, Any]] = []
    for group, ids in _groups(samples, by).items():
        a = {k: v for k, v in values_a.items() if k in ids}
        b = {k: v for k, v in values_b.items() if k in ids}
        noise = run_to_run_noise(a, b, z)
        rows.append({
            "metric": metric, "group": group, "n_questions": noise.n_questions, "n_unpaired": noise.n_unpaired,
            "per_question_sd": noise.per_question_sd, "mean_difference": noise.mean_difference,
            "band": noise.band,
            "is_noise": None if noise.band is None or noise.mean_difference is None
            else is_noise(noise.mean_difference, noise.band),
            "na_reason": noise.na_reason,
        })
    frame = pd.DataFrame(rows, dtype=object)
    frame.attrs["n_na"] = {"a": na_a, "b": na_b}
    return frame


def repeat_sds(
    repeat_a: Sequence[SampleDiagnostics], repeat_b: Sequence[SampleDiagnostics], metrics: Sequence[str]
) -> dict[str, float | None]:
    """Per metric, the per-question sd between two runs of one configuration (None with < 2 questions)."""
    return {
        metric: run_to_run_noise(metric_values(repeat_a, metric)[0], metric_values(repeat_b, metric)[0]).per_question_sd
        for metric in metrics
    }


def compare_frame(
    run_a: Sequence[SampleDiagnostics], run_b: Sequence[SampleDiagnostics],
    noise_sd: Mapping[str, float | None] | None = None, noise_source: str = "", z: float = Z_95,
) -> pd.DataFrame:
    """Per metric in both runs: mean of A and B over the questions both scored, B - A, the band, the verdict."""
    rows: list[dict[str, Any]] = []
    for metric in metric_names(run_a, run_b):
        a, _ = metric_values(run_a, metric)
        b, _ = metric_values(run_b, metric)
        shared = sorted(set(a) & set(b))
        row: dict[str, Any] = {"metric": metric, "n_questions": len(shared), "mean_a": None, "mean_b": None,
                               "difference": None, "band": None, "band_from": None, "verdict": None,
                               "na_reason": None}
        rows.append(row)
        if not shared:
            row["na_reason"] = "no question has a value in both runs"
            continue
        row["mean_a"] = sum(a[q] for q in shared) / len(shared)
        row["mean_b"] = sum(b[q] for q in shared) / len(shared)
        row["difference"] = row["mean_b"] - row["mean_a"]
        if noise_sd is not None:
            sd, row["band_from"] = noise_sd.get(metric), noise_source
            why = f"the repeat runs give no sd for {metric} (fewer than two questions)"
        else:
            sd, row["band_from"] = run_to_run_noise(a, b, z).per_question_sd, PAIRED_BAND
            why = "fewer than two questions in both runs"
        if sd is None:
            row["na_reason"] = why
            continue
        row["band"] = noise_band(sd, len(shared), z)
        row["verdict"] = "noise" if is_noise(row["difference"], row["band"]) else "change"
    return pd.DataFrame(rows, dtype=object)
