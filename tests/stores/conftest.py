"""Store fixtures: every backend of the record store, PostgreSQL on a private cluster (fakes/postgres_fixtures.py).

`store_location` runs a test once per backend: a SQLite file in tmp_path, and a PostgreSQL URL whose
search_path is a fresh schema of its own (dropped afterwards), so tests never see each other's rows.
"""

from __future__ import annotations

import pytest

BACKENDS = ("sqlite", "postgresql")


@pytest.fixture(params=BACKENDS)
def store_location(request: pytest.FixtureRequest, tmp_path) -> str:  # type: ignore[no-untyped-def]
    if request.param == "sqlite":
        return str(tmp_path / "store.sqlite")
    return str(request.getfixturevalue("postgres_store_url"))
