"""Bytes per sample of the record store, by table, and of the run folder.

    python bench/store_bytes.py [--offline-data data.jsonl] [--llm-samples 1000] [--postgres URL]

Two runs, each into a fresh workspace in a temporary folder:

- offline: `ragcourt index` of the HotpotQA file's paragraphs, then `ragcourt run` of its questions against the
  reference system with the default configuration (the offline jury: no LLM, no network);
- llm: the LLM judge and the LLM decomposer on the simulated server (bench/sim_server.py, no latency) over
  distinct HotpotQA and long-form samples with precomputed contexts and answers (bench/cost_speed.py's
  `bench_samples`), the configuration of the cost benchmark's scale run.

Each table's bytes are its own pages plus those of its indexes (SQLite's `dbstat`, read after the run's
process closed the store, so the write-ahead log is checkpointed into the file); on PostgreSQL,
`pg_total_relation_size` (table, TOAST and indexes) of each table in a schema of its own. The run folder is
every file under `runs/<id>/`.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

BENCH = Path(__file__).resolve().parent
DEFAULT_DATA = BENCH.parent / "data" / "hotpotqa" / "dev_sample_100.jsonl"
sys.path.insert(0, str(BENCH))


def sqlite_tables(path: Path) -> dict[str, int]:
    """Bytes of each table of the SQLite file, its indexes included."""
    conn = sqlite3.connect(path)
    try:
        owner = dict(conn.execute("SELECT name, tbl_name FROM sqlite_master WHERE type IN ('table', 'index')"))
        sizes: dict[str, int] = {}
        for name, size in conn.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name"):
            table = owner.get(name, name)
            sizes[table] = sizes.get(table, 0) + int(size)
        return sizes
    finally:
        conn.close()


def postgres_tables(url: str) -> dict[str, int]:
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n "
                            "ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind = 'r'")
        return {name: int(size) for name, size in rows}


def folder_bytes(folder: Path) -> dict[str, int]:
    return {str(path.relative_to(folder)): path.stat().st_size for path in sorted(folder.rglob("*")) if path.is_file()}


@contextmanager
def private_schema(url: str) -> Iterator[str]:
    """A URL whose search_path is a new schema (dropped at the end): the run's tables alone."""
    import psycopg

    schema = f"bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    separator = "&" if "?" in url else "?"
    try:
        yield f"{url}{separator}options=-csearch_path%3D{schema}"
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


def _command(*args: str, store: str | None) -> None:
    env = {**os.environ, **({"RAGCOURT_STORE": store} if store else {})}
    done = subprocess.run(["ragcourt", *args], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"ragcourt {' '.join(args)} failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-4000:]}")


def offline_run(home: Path, data: Path, store: str | None) -> str:
    _command("index", str(data), "--home", str(home), store=store)
    _command("run", str(data), "--home", str(home), "--run-id", "offline", store=store)
    return "offline"


def part_llm(home: str, n: str, url: str, store: str) -> None:
    """The LLM run in this process (called as `--part llm HOME N URL STORE`)."""
    import asyncio

    from cost_speed import CONTEXT_K, bench_samples

    from ragcourt.runs import api
    from ragcourt.schema.config import Batching, EvalConfig, JudgeSpec
    from ragcourt.systems import Precomputed

    if store:
        os.environ["RAGCOURT_STORE"] = store
    samples = bench_samples(100, 80, total=int(n))
    config = EvalConfig(judges=(JudgeSpec(model=f"openai:sim@{url}", id="sim-judge"),), decomposer=f"openai:sim@{url}",
                        batching=Batching.JOINT, llm_concurrency=32, concurrency=64, top_k=CONTEXT_K)

    async def run() -> int:
        count = 0
        async for _ in api.astream(samples, Precomputed(), config=config, home=Path(home), run_id="llm"):
            count += 1
        return count

    finished = asyncio.run(run())
    assert finished == len(samples), f"{finished} of {len(samples)} samples finished"


def llm_run(home: Path, n: int, store: str | None) -> str:
    from cost_speed import sim_server

    with sim_server(0.0) as sim:
        subprocess.run([sys.executable, __file__, "--part", "llm", str(home), str(n), sim.base_url, store or ""],
                       check=True)
    return "llm"


def report(label: str, samples: int, tables: dict[str, int], run_folder: dict[str, int]) -> dict[str, object]:
    total = sum(tables.values())
    print(f"\n{label}: {samples} samples, store {total / 1e6:.2f} MB = {total / samples / 1e3:.1f} KB a sample; "
          f"without the LLM cache {(total - tables.get('llm_cache', 0)) / samples / 1e3:.1f} KB; "
          f"run folder {sum(run_folder.values()) / 1e6:.2f} MB")
    print(f"  {'table':<16} {'bytes':>12} {'bytes/sample':>13}")
    for name, size in sorted(tables.items(), key=lambda item: -item[1]):
        print(f"  {name:<16} {size:>12,} {size / samples:>13,.0f}")
    for name, size in run_folder.items():
        print(f"  runs/{name:<11} {size:>12,} {size / samples:>13,.0f}")
    return {"label": label, "samples": samples, "tables": tables, "run_folder": run_folder}


def measure(kind: str, samples: int, data: Path, postgres: str | None, keep: Path | None) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder) if keep is None else keep / kind
        if postgres:
            with private_schema(postgres) as url:
                run_id = offline_run(home, data, url) if kind == "offline" else llm_run(home, samples, url)
                tables = postgres_tables(url)
        else:
            run_id = offline_run(home, data, None) if kind == "offline" else llm_run(home, samples, None)
            tables = sqlite_tables(home / "store.sqlite")
        backend = "PostgreSQL" if postgres else "SQLite"
        return report(f"{kind} ({backend})", samples, tables, folder_bytes(home / "runs" / run_id))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--offline-data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--llm-samples", type=int, default=1000)
    parser.add_argument("--postgres", help="a postgresql:// URL: measure there too (a schema of its own, dropped)")
    parser.add_argument("--pg-only", action="store_true", help="with --postgres: measure PostgreSQL alone")
    parser.add_argument("--only", choices=("offline", "llm"))
    parser.add_argument("--json", type=Path, help="write the figures here too")
    parser.add_argument("--keep", type=Path, help="run in this (new) folder and keep the workspaces (SQLite)")
    parser.add_argument("--part", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.part:
        part_llm(*args.part[1:])
        return
    offline_samples = sum(1 for line in args.offline_data.read_text(encoding="utf-8").splitlines() if line.strip())
    results = []
    backends = [args.postgres] if args.pg_only else [None, *([args.postgres] if args.postgres else [])]
    for postgres in backends:
        if args.only in (None, "offline"):
            results.append(measure("offline", offline_samples, args.offline_data, postgres, args.keep))
        if args.only in (None, "llm"):
            results.append(measure("llm", args.llm_samples, args.offline_data, postgres, args.keep))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
