"""A workspace whose record store is PostgreSQL: `run --store URL` gives the same figures as the SQLite
store, and the commands after it (`summary`, the store's own reads) find the run with `--home` alone."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from ragcourt.cli import app
from ragcourt.runs.workspace import STORE_URL_FILE, Workspace

ROWS = [
    {"id": f"q{i}", "question": f"Who wrote book {i}?",
     "reference_answer": f"Author {i} wrote book {i}. It was published in {1900 + i}.",
     "contexts": [f"Book {i} is a novel by Author {i}.", f"Book {i} was published in {1900 + i}."],
     "answer": f"Author {i} wrote it." if i % 2 else f"It was published in {1900 + i}."}
    for i in range(6)
]


def _dataset(tmp_path: Path) -> Path:
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in ROWS), encoding="utf-8")
    return path


def _run_id(output: str) -> str:
    return next(line.split()[1].rstrip(":") for line in output.splitlines() if line.startswith("run run-"))


def test_a_postgres_store_gives_the_figures_of_the_sqlite_store(tmp_path: Path, postgres_store_url: str,
                                                                monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("RAGCOURT_STORE", raising=False)
    runner = CliRunner()
    dataset = _dataset(tmp_path)
    local = runner.invoke(app, ["run", str(dataset), "--system", "precomputed", "--home", str(tmp_path / "lite")])
    shared = runner.invoke(app, ["run", str(dataset), "--system", "precomputed", "--home", str(tmp_path / "pg"),
                                 "--store", postgres_store_url])
    assert local.exit_code == 0, local.output
    assert shared.exit_code == 0, shared.output
    run_id = _run_id(shared.output)
    assert run_id == _run_id(local.output)  # where records go is no part of a run's identity
    assert not (tmp_path / "pg" / "store.sqlite").exists()
    assert (tmp_path / "pg" / STORE_URL_FILE).read_text().strip() == postgres_store_url
    assert (tmp_path / "pg" / STORE_URL_FILE).stat().st_mode & 0o077 == 0  # it may hold a password

    summaries = [runner.invoke(app, ["summary", run_id, "--home", str(tmp_path / home)]) for home in ("lite", "pg")]
    assert all(s.exit_code == 0 for s in summaries), [s.output for s in summaries]
    assert summaries[0].output == summaries[1].output
    assert "6 samples (0 failed)" in summaries[1].output

    with Workspace(tmp_path / "lite").open_store() as lite, Workspace(tmp_path / "pg").open_store() as pg:
        assert pg.url == postgres_store_url and lite.url is None
        # finishing order (the stored order) varies between runs; each sample's figures do not
        shown = {d.sample_id: d.model_dump(exclude={"created_at"}) for d in lite.get_diagnostics(run_id)}
        assert {d.sample_id: d.model_dump(exclude={"created_at"}) for d in pg.get_diagnostics(run_id)} == shown
        assert pg.count_checks(run_id) == lite.count_checks(run_id) > 0


def test_the_store_setting_comes_from_the_config_or_the_environment(tmp_path: Path, postgres_store_url: str,
                                                                    monkeypatch) -> None:  # type: ignore[no-untyped-def]
    runner = CliRunner()
    dataset = _dataset(tmp_path)
    config = tmp_path / "config.yaml"
    config.write_text(f"store: '{postgres_store_url}'\n", encoding="utf-8")
    monkeypatch.delenv("RAGCOURT_STORE", raising=False)
    by_config = runner.invoke(app, ["run", str(dataset), "--system", "precomputed", "--config", str(config),
                                    "--home", str(tmp_path / "a")])
    assert by_config.exit_code == 0, by_config.output
    assert (tmp_path / "a" / STORE_URL_FILE).read_text().strip() == postgres_store_url
    monkeypatch.setenv("RAGCOURT_STORE", postgres_store_url)
    by_env = runner.invoke(app, ["run", str(dataset), "--system", "precomputed", "--home", str(tmp_path / "b")])
    assert by_env.exit_code == 0, by_env.output
    assert not (tmp_path / "b" / "store.sqlite").exists()
    # the same database: the second workspace's run found the first one's samples finished
    assert _run_id(by_env.output) == _run_id(by_config.output)
    monkeypatch.setenv("RAGCOURT_STORE", "/tmp/not-a-url.sqlite")
    refused = runner.invoke(app, ["run", str(dataset), "--system", "precomputed", "--home", str(tmp_path / "c")])
    assert refused.exit_code != 0 and "postgresql://" in refused.output
