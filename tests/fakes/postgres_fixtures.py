"""PostgreSQL fixtures for any test (a pytest plugin the root conftest loads): `postgres_url`, a database of the
session's own on a server started on first use only, and `postgres_store_url`, a URL whose search_path is a fresh
schema in it.

A database per session, so per xdist worker, not only a schema per test: PostgreSQL's advisory locks (a run's
lock on a PostgreSQL store) are per database, and two workers running the same run id at once would take each
other's."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fakes.private_postgres import postgres_server, private_database, schema_url


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    for server_url in postgres_server():
        with private_database(server_url) as url:
            yield url


@pytest.fixture
def postgres_store_url(postgres_url: str) -> Iterator[str]:
    with schema_url(postgres_url) as url:
        yield url
