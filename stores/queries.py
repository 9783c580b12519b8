"""Read-back aggregates of the record store: counts, sums and frames over a run, computed by the database."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
from pydantic import BaseModel

from ragcourt.schema import (
    NORMAL,
    Check,
    Decomposition,
    ElementStatus,
    FigureFlag,
    ReviewAction,
    Sample,
    SampleStatus,
    Verdict,
    VerdictStatus,
)
from ragcourt.schema.config import encoder_suffix
from ragcourt.stores.record_base import RecordStoreBase
from ragcourt.stores.record_cache import CACHE_ROWS_SQL, CacheEntry, reply_of

# The checks of a run as `checks_for` lists them: links whose check is stored.
_RUN_LINKS = "run_checks l JOIN checks c ON c.id = l.check_id WHERE l.run_id = ?"


@dataclass(frozen=True)
class VerdictTally:
    """Verdicts of a run's checks with one judge, model and status: how many and their summed tokens."""

    judge_id: str
    model_id: str | None
    status: VerdictStatus
    n_verdicts: int
    prompt_tokens: int
    completion_tokens: int


@dataclass(frozen=True)
class MetricTotals:
    """One metric over a run's samples: its values (n/a ones left out) in sample order, and its counts."""

    name: str
    values: tuple[float, ...]
    n_na: int  # samples where the metric is n/a
    n_unscored: int  # summed over the samples
    n_escalated: int
    # per value, whether it was judged without a split that failed (InputFlag JUDGED_WITHOUT_SPLIT); empty: none
    flagged: tuple[bool, ...] = ()


@dataclass(frozen=True)
class SampleCheckCounts:
    """A sample's checks in a run (grouped by the check's own sample_id, as the report groups them)."""

    n_checks: int
    n_escalated: int  # checks whose reconciled record in the run is escalated
    n_reviewed: int  # checks with at least one review in the run


class RecordQueries(RecordStoreBase):
    """The aggregate and frame methods of `RecordStore`."""

    # ------------------------------------------------------------------ aggregates
    # Counts and sums over a run computed by the database, so a report over 10,000 samples does not build
    # hundreds of thousands of records only to count them. Each equals the same figure computed over the
    # records the listing methods return (tests/stores/test_records_aggregates.py).

    def count_checks(self, run_id: str) -> int:
        """len(checks_for(run_id))."""
        return int(self._select(f"SELECT COUNT(*) FROM {_RUN_LINKS}", (run_id,))[0][0])

    def judge_model_ids(self, judge_id: str) -> set[str]:
        """The models whose verdicts are stored under this judge id."""
        rows = self._select("SELECT DISTINCT model_id FROM verdicts WHERE judge_id = ? AND model_id IS NOT NULL",
                            (judge_id,))
        return {str(model_id) for (model_id,) in rows}

    def run_judge_ids(self, run_id: str) -> tuple[str, ...] | None:
        """The ids of the judges a run's configuration names; None for a run that names none (or is unknown).

        Checks are content addressed and shared by every run that asks them, and so are their verdicts: what
        a run shows of them is its own jury's verdicts, never those of another run's judges.
        """
        run = self.get_run(run_id)
        judges = run.config.get("judges") if run is not None else None
        if not isinstance(judges, list) or not judges:
            return None
        # as JudgeSpec.judge_id names them: a semantic judge's encoder is part of its id (stored without one: MiniLM)
        ids = tuple(str(j.get("id") or j["model"] + encoder_suffix(j.get("encoder") if j["model"] == "semantic" else None))
                    for j in judges if isinstance(j, dict) and j.get("model"))
        assert run is not None  # its config named the judges
        if not run.config.get("calibration_profile"):
            return ids
        # A judge the run's calibration profile calibrates stores its verdicts as `<judge>+cal-<profile tag>`, and
        # a `learned` one as `<judge>+model-<tag of the profile's stacked models>` (validity.profile); the profile
        # file is not the store's to read, so the tags are the run's own.
        calibrated = []
        for judge in ids:
            for prefix in (f"{judge}+cal-", f"{judge}+model-"):
                sql = (f"SELECT DISTINCT judge_id FROM verdicts WHERE check_id IN (SELECT l.check_id FROM "
                       f"{_RUN_LINKS}) AND substr(judge_id, 1, ?) = ? ORDER BY 1")
                calibrated += [str(found) for (found,) in self._select(sql, (run_id, len(prefix), prefix))]
        return ids + tuple(calibrated)

    def run_verdicts(self, run_id: str, check_ids: Sequence[str]) -> list[Verdict]:
        """The verdicts of the run's jury (run_judge_ids) on these checks, in the store's order."""
        jury = self.run_judge_ids(run_id)
        return [v for v in self.get_verdicts(check_ids) if jury is None or v.judge_id in jury]

    def verdict_tallies(self, run_id: str) -> list[VerdictTally]:
        """The verdicts of the run's checks by its judges (run_judge_ids), by judge, model and status."""
        judges = self.run_judge_ids(run_id)
        only_jury = f" AND judge_id IN ({', '.join('?' * len(judges))})" if judges else ""
        sql = (
            "SELECT judge_id, model_id, status, COUNT(*), SUM(prompt_tokens), SUM(completion_tokens) FROM verdicts "
            f"WHERE check_id IN (SELECT l.check_id FROM {_RUN_LINKS}){only_jury} GROUP BY 1, 2, 3 ORDER BY 1, 2, 3"
        )
        return [
            VerdictTally(judge_id=judge_id, model_id=model_id, status=VerdictStatus(status), n_verdicts=int(n),
                         prompt_tokens=int(prompt), completion_tokens=int(completion))
            for judge_id, model_id, status, n, prompt, completion in self._select(sql, (run_id, *(judges or ())))
        ]

    def count_escalated(self, run_id: str) -> int:
        """How many of the run's reconciled records are escalated."""
        sql = "SELECT COUNT(*) FROM reconciled WHERE run_id = ? AND escalated = TRUE"  # SQLite: TRUE is 1
        return int(self._select(sql, (run_id,))[0][0])

    def count_pending_escalations(self, run_id: str) -> int:
        """len(pending_escalations(run_id))."""
        sql = (
            "SELECT COUNT(*) FROM reconciled r WHERE r.run_id = ? AND r.escalated = TRUE AND NOT EXISTS "
            "(SELECT 1 FROM reviews v WHERE v.run_id = r.run_id AND v.check_id = r.check_id AND v.action != ?)"
        )
        return int(self._select(sql, (run_id, str(ReviewAction.SKIP)))[0][0])

    def check_counts_by_sample(self, run_id: str) -> dict[str, SampleCheckCounts]:
        """Per sample id (the check's own): its linked checks, escalated ones, reviewed ones."""
        dialect = self.dialect
        # INDEXED BY (SQLite): the planner would take the primary key and read every check's row for its sample_id
        checks = (
            f"SELECT c.sample_id, COUNT(*) FROM run_checks l JOIN checks c{dialect.indexed_by('checks_by_id_sample_id')} "
            "ON c.id = l.check_id WHERE l.run_id = ? GROUP BY c.sample_id"
        )
        # escalations and reviews are few: start from them, not from every link (an index each)
        escalated = (
            f"SELECT c.sample_id, COUNT(*) FROM reconciled r {dialect.ordered_join} run_checks l"
            f"{dialect.indexed_by('run_checks_by_check')} "
            "ON l.run_id = r.run_id AND l.check_id = r.check_id JOIN checks c ON c.id = l.check_id "
            "WHERE r.run_id = ? AND r.escalated = TRUE GROUP BY c.sample_id"
        )
        reviewed = (
            "SELECT c.sample_id, COUNT(*) FROM run_checks l JOIN checks c ON c.id = l.check_id "
            "WHERE l.run_id = ? AND l.check_id IN (SELECT check_id FROM reviews WHERE run_id = ?) GROUP BY c.sample_id"
        )
        n_escalated = dict(self._select(escalated, (run_id,)))
        n_reviewed = dict(self._select(reviewed, (run_id, run_id)))
        return {
            sample_id: SampleCheckCounts(n_checks=int(n), n_escalated=int(n_escalated.get(sample_id, 0)),
                                         n_reviewed=int(n_reviewed.get(sample_id, 0)))
            for sample_id, n in self._select(checks, (run_id,))
        }

    def count_empty_answers(self, run_id: str) -> int:
        """Samples whose system gave the empty answer ("", schema.records.Answer) under the normal condition."""
        text, status = (self.dialect.json_text("payload", field) for field in ("text", "status"))
        sql = f"SELECT COUNT(*) FROM answers WHERE run_id = ? AND condition = ? AND {status} = ? AND {text} = ''"
        return int(self._select(sql, (run_id, NORMAL.key, str(VerdictStatus.OK)))[0][0])

    def count_diagnostics(self, run_id: str) -> int:
        return int(self._select("SELECT COUNT(*) FROM diagnostics WHERE run_id = ?", (run_id,))[0][0])

    def failed_samples(self, run_id: str) -> list[tuple[str, str | None]]:
        """(sample id, error) of the run's failed samples, in the order get_diagnostics lists them."""
        sql = (
            f"SELECT sample_id, {self.dialect.json_text('payload', 'error')} FROM diagnostics "
            "WHERE run_id = ? AND status = ? ORDER BY rowid"
        )
        return [(sample_id, error) for sample_id, error in self._select(sql, (run_id, str(SampleStatus.FAILED)))]

    def metric_totals(self, run_id: str) -> list[MetricTotals]:
        """Each metric's figures over the run's diagnostics (as reading get_diagnostics gives), by name."""
        dialect = self.dialect
        sql = (
            f"SELECT {dialect.json_dump('m.value')} FROM diagnostics d, {dialect.array_items('d.payload', 'metrics', 'm')} "
            "WHERE d.run_id = ? ORDER BY d.rowid, m.key"
        )
        values: dict[str, list[float]] = {}
        flagged: dict[str, list[bool]] = {}
        counts: dict[str, list[int]] = {}
        # each metric comes back as its stored JSON text, numbers as written: parsed here, every float is the
        # one get_diagnostics reads, and the values keep their order for an identical mean
        for (text,) in self._select(sql, (run_id,)):
            metric = json.loads(text)
            found = values.setdefault(metric["name"], [])
            marks = flagged.setdefault(metric["name"], [])
            tally = counts.setdefault(metric["name"], [0, 0, 0])
            if metric["value"] is None:
                tally[0] += 1
            else:
                found.append(float(metric["value"]))
                marks.append(metric.get("flag") is not None)  # absent in runs stored before flags
            tally[1] += metric["n_unscored"]
            tally[2] += metric["n_escalated"]
        return [MetricTotals(name=name, values=tuple(values[name]), n_na=counts[name][0],
                             n_unscored=counts[name][1], n_escalated=counts[name][2],
                             flagged=tuple(flagged[name]) if any(flagged[name]) else ())
                for name in sorted(values)]

    def count_failed_splits(self, run_id: str) -> int:
        """The splits the run's samples needed and did not get (SampleDiagnostics.failed_splits, summed)."""
        sql = (f"SELECT COUNT(*) FROM diagnostics d, {self.dialect.array_items('d.payload', 'failed_splits', 'f')} "
               "WHERE d.run_id = ?")
        return int(self._select(sql, (run_id,))[0][0])

    def count_flagged_samples(self, run_id: str) -> int:
        """The run's samples with a figure judged without a split that failed (a value, flagged)."""
        sql = (f"SELECT COUNT(DISTINCT d.sample_id) FROM diagnostics d, "
               f"{self.dialect.array_items('d.payload', 'metrics', 'm')} "
               f"WHERE d.run_id = ? AND {self.dialect.json_text('m.value', 'flag.cause')} = ?")
        return int(self._select(sql, (run_id, str(FigureFlag.JUDGED_WITHOUT_SPLIT)))[0][0])

    def element_status_counts(self, run_id: str) -> dict[ElementStatus, int]:
        """How many elements of the run's diagnostics have each status (statuses with none are left out)."""
        dialect = self.dialect
        sql = (
            f"SELECT {dialect.json_text('e.value', 'status')}, COUNT(*) FROM diagnostics d, "
            f"{dialect.array_items('d.payload', 'elements', 'e')} WHERE d.run_id = ? GROUP BY 1"
        )
        return {ElementStatus(status): int(n) for status, n in self._select(sql, (run_id,))}

    def element_split_attribution(self, run_id: str) -> dict[ElementStatus, float]:
        """The attributions of the run's judges_split elements added up per status (`metrics.elements.
        split_attribution` over its diagnostics); every other element's attribution is empty."""
        dialect = self.dialect
        sql = (
            f"SELECT a.key, SUM({dialect.json_number('a.value')}) FROM diagnostics d, "
            f"{dialect.array_items('d.payload', 'elements', 'e')}, {dialect.object_entries('e.value', 'attribution', 'a')} "
            "WHERE d.run_id = ? GROUP BY 1"
        )
        return {ElementStatus(status): float(total) for status, total in self._select(sql, (run_id,))}

    # ------------------------------------------------------------------ frames

    def to_frame(self, record_type: type[BaseModel], run_id: str | None = None) -> pd.DataFrame:
        """One row per stored record of the type (of one run if given), nested fields flattened.

        Checks and verdicts are global; with a run_id they are those linked to the run by `link_checks`.
        Decompositions and the cache (`CacheEntry`) belong to no run and take no run_id.
        """
        if record_type is Sample:
            rows = self._sample_rows(run_id)
        else:
            rows = [record.model_dump(mode="json") for record in self._frame_records(record_type, run_id)]
        if not rows:
            prefix = ["run_id"] if record_type is Sample else []
            return pd.DataFrame(columns=[*prefix, *record_type.model_fields])
        return pd.json_normalize(rows)

    def _sample_rows(self, run_id: str | None) -> list[dict[str, Any]]:
        # Samples carry no run_id; the frame says which run each row belongs to.
        sql = "SELECT run_id, payload FROM samples"
        params: tuple[str, ...] = ()
        if run_id is not None:
            sql, params = sql + " WHERE run_id = ?", (run_id,)
        return [
            {"run_id": run, **Sample.model_validate_json(payload).model_dump(mode="json")}
            for run, payload in self._select(sql + " ORDER BY rowid", params)
        ]

    def _frame_records(self, record_type: type[BaseModel], run_id: str | None) -> list[BaseModel]:
        if record_type is CacheEntry or record_type is Decomposition:
            if run_id is not None:
                raise ValueError(
                    f"{record_type.__name__} rows belong to no run: call to_frame without run_id"
                )
            if record_type is CacheEntry:
                rows = self._select(f"{CACHE_ROWS_SQL} ORDER BY rowid")
                return [CacheEntry(key=key, value=reply_of(value, body)) for key, value, body in rows]
            return list(self._listing(Decomposition, {}))
        if record_type is Check and run_id is not None:
            return list(self.checks_for(run_id))
        if record_type is Verdict and run_id is not None:
            sql = (
                f"SELECT {self._payload_sql(Verdict)} FROM verdicts WHERE check_id IN "
                "(SELECT check_id FROM run_checks WHERE run_id = ?) ORDER BY rowid"
            )
            jury = self.run_judge_ids(run_id)
            return [v for v in self._records(Verdict, sql, (run_id,)) if jury is None or v.judge_id in jury]
        if not self._keeps(record_type):
            raise TypeError(f"the record store keeps no {record_type.__name__} records")
        return list(self._listing(record_type, {"run_id": run_id}))
