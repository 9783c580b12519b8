"""PostgreSQL fixtures for any test (a pytest plugin the root conftest loads): `postgres_url`, a server for the
session (started on first use only), and `postgres_store_url`, a URL whose search_path is a fresh schema."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fakes.private_postgres import postgres_server, schema_url


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    yield from postgres_server()


@pytest.fixture
def postgres_store_url(postgres_url: str) -> Iterator[str]:
    with schema_url(postgres_url) as url:
        yield url
