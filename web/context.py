"""What the routers of the app for one run share: the run, its directory, the page templates, and the record
store and rescorer that the app's lifespan opens (and closes) around serving."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from jinja2 import Environment

from ragcourt.stores.records import RecordStore
from ragcourt.web.rescorer import Rescorer


@dataclass
class DeskContext:
    run_id: str
    run_dir: Path
    templates: Environment
    holder: dict[str, RecordStore | Rescorer] = field(default_factory=dict)  # filled by the app's lifespan

    def store(self) -> RecordStore:
        found = self.holder["store"]
        assert isinstance(found, RecordStore)
        return found

    def rescorer(self) -> Rescorer:
        found = self.holder["rescorer"]
        assert isinstance(found, Rescorer)
        return found
