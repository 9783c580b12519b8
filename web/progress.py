"""Live progress of a run, read from the store and the run directory (works while another process runs it)."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ragcourt.runs.runner import DIAGNOSTICS_FILE, RunPaths
from ragcourt.schema import SampleStatus
from ragcourt.stores.records import RecordStore

RECENT = 10


@dataclass(frozen=True)
class Finished:
    sample_id: str
    status: str
    question: str
    escalated: int


@dataclass(frozen=True)
class Progress:
    run_id: str
    samples: int  # samples registered for the run
    finished: int  # samples with diagnostics (ok or failed)
    failed: int
    running: bool  # a live process holds the run lock
    pending_reviews: int
    recent: tuple[Finished, ...]  # newest first, from diagnostics.jsonl

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by someone else
        return True
    return True


def _lock_alive(run_dir: Path) -> bool:
    lock = RunPaths(run_dir).lock
    try:
        holder = lock.read_text().strip()
    except OSError:
        return False
    return holder.isdigit() and _alive(int(holder))


def _recent(run_dir: Path) -> tuple[Finished, ...]:
    path = run_dir / DIAGNOSTICS_FILE
    try:
        lines = path.read_text(encoding="utf-8").splitlines()[-RECENT:]
    except OSError:
        return ()
    out = []
    for line in reversed(lines):
        try:
            row = json.loads(line)
            out.append(Finished(sample_id=str(row["sample_id"]), status=str(row["status"]),
                                question=str(row.get("question", "")), escalated=len(row.get("escalations", ()))))
        except (ValueError, KeyError, TypeError):
            continue  # a line being written right now
    return tuple(out)


def progress(store: RecordStore, run_id: str, run_dir: Path) -> Progress:
    diagnostics = store.get_diagnostics(run_id)
    return Progress(
        run_id=run_id, samples=len(store.get_samples(run_id)), finished=len(diagnostics),
        failed=sum(d.status is SampleStatus.FAILED for d in diagnostics), running=_lock_alive(run_dir),
        pending_reviews=len(store.pending_escalations(run_id)), recent=_recent(run_dir),
    )
