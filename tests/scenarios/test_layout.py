"""The layout shows the layers: the root holds packages, not loose modules; no root name shadows a
distribution; imports go one way (import-linter); the built wheel holds every package and data file."""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from fixtures import REPO

REQUIRED = {"pyproject.toml", "graphs", "nodes", "stores", "prompts", "tests", "cli.py", "README.md"}
LOOSE_MODULES_ALLOWED = {"__init__.py", "cli.py"}
NOT_PACKAGED = {"tests", "bench", "docs", "examples"}  # folders at the root that are not part of ragcourt
# Names a user installs beside ragcourt that are not in its own environment (the issue that made the layout).
ALSO_SHADOWABLE = {"datasets", "ragas"}


def root_entries() -> list[Path]:
    return [p for p in REPO.iterdir() if not p.name.startswith(".") and p.name != "__pycache__"
            and not p.name.endswith(".egg-info") and p.name != "build"]


def configured_packages() -> dict[str, str]:
    """ragcourt's packages -> their folders, as pyproject.toml maps them."""
    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    return dict(setuptools["package-dir"])


def test_the_root_holds_the_required_names_and_packages_but_no_loose_module() -> None:
    names = {p.name for p in root_entries()}
    assert names >= REQUIRED
    loose = {p.name for p in root_entries() if p.suffix == ".py"}
    assert loose == LOOSE_MODULES_ALLOWED
    packages = {p.name for p in root_entries() if p.is_dir() and (p / "__init__.py").exists()}
    assert 10 <= len(packages) <= 20, sorted(packages)
    # every package folder is packaged, and nothing else is
    assert {folder for name, folder in configured_packages().items() if name != "ragcourt"} == packages


def test_no_root_name_is_the_import_name_of_an_installed_distribution() -> None:
    top_level = set(importlib.metadata.packages_distributions()) | ALSO_SHADOWABLE
    ours = {p.stem if p.suffix == ".py" else p.name for p in root_entries() if p.is_dir() or p.suffix == ".py"}
    assert ours & top_level == set(), "these root names shadow other distributions when Python runs from the root"


def test_importing_datasets_from_the_root_reaches_no_ragcourt_file() -> None:
    # `python -c` from the root puts the root first on sys.path, as a user's notebook or script there would.
    probe = ("import sys\ntry:\n    import datasets\nexcept ImportError:\n    pass\n"
             "print('\\n'.join(getattr(m, '__file__', None) or '' for m in list(sys.modules.values())))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=120,
                          check=True)
    loaded = [Path(f).resolve() for f in done.stdout.splitlines() if f]
    # files of the checkout itself, not of a virtual environment kept in it (CI's .venv)
    ours = [f for f in loaded if REPO in f.parents and not f.relative_to(REPO).parts[0].startswith(".")]
    assert ours == []


def packaged_files(tracked: set[str]) -> set[str]:
    """The tracked files that belong to ragcourt, named as they are inside the wheel: every file of a package
    folder (code, stubs and data alike) and the root's modules."""
    folders = {folder for folder in configured_packages().values() if folder != "."}
    return {f"ragcourt/{relative}" for relative in tracked
            if relative.split("/")[0] in folders or ("/" not in relative and relative.endswith(".py"))}


@pytest.mark.timeout(300)
def test_the_built_wheel_holds_every_package_and_its_data_files(tmp_path: Path) -> None:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs the git checkout to know which files are tracked")
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, text=True, check=True).stdout.splitlines()
    tracked = {relative for relative in listed if (REPO / relative).is_file()}  # not the ones deleted, uncommitted
    source = tmp_path / "src"
    for relative in tracked:  # build from exactly what is tracked, as CI's fresh clone would
        target = source / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / relative, target)
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path / "dist"),
                    str(source)], capture_output=True, text=True, timeout=240, check=True)
    wheel = next((tmp_path / "dist").glob("ragcourt-*.whl"))
    in_wheel = set(zipfile.ZipFile(wheel).namelist())
    expected = packaged_files(tracked)
    assert sorted(expected - in_wheel) == []
    for data in ("ragcourt/prompts/judge_combined.md", "ragcourt/stores/assets/minilm_tokenizer.json",
                 "ragcourt/data/hotpotqa/dev_sample_100.jsonl", "ragcourt/report/templates/report.html.j2",
                 "ragcourt/web/templates/desk.html.j2", "ragcourt/metrics/__init__.pyi",
                 "ragcourt/testing/plugin.py", "ragcourt/testing/__init__.pyi"):
        assert data in in_wheel
    # the pytest plugin is found by pytest in any environment ragcourt is installed in
    entry_points = next(name for name in in_wheel if name.endswith(".dist-info/entry_points.txt"))
    assert "[pytest11]\nragcourt = ragcourt.testing.plugin" in zipfile.ZipFile(wheel).read(entry_points).decode()


def lint_imports(package_root: Path) -> subprocess.CompletedProcess[str]:
    """import-linter's layer contract (pyproject.toml) over the `ragcourt` found in `package_root`."""
    env = {**os.environ, "PYTHONPATH": str(package_root)}
    return subprocess.run([shutil.which("lint-imports") or "lint-imports", "--config", str(REPO / "pyproject.toml"),
                           "--no-cache"], cwd=package_root, env=env, capture_output=True, text=True, timeout=240)


def scratch_copy(tmp_path: Path) -> Path:
    """The package's Python files under tmp_path/ragcourt (what import-linter reads), nothing else."""
    for path in REPO.rglob("*.py*"):
        relative = path.relative_to(REPO)
        if relative.parts[0] in NOT_PACKAGED or relative.parts[0].startswith(".") or "__pycache__" in relative.parts:
            continue
        target = tmp_path / "ragcourt" / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    return tmp_path


@pytest.mark.timeout(300)
def test_the_layers_import_one_way(tmp_path: Path) -> None:
    done = lint_imports(scratch_copy(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 kept, 0 broken" in done.stdout  # the layers, and no import cycle


@pytest.mark.timeout(300)
def test_an_import_that_goes_up_a_layer_breaks_the_contract(tmp_path: Path) -> None:
    root = scratch_copy(tmp_path)
    values = root / "ragcourt" / "metrics" / "values.py"  # pure maths may not reach the run level
    values.write_text(values.read_text(encoding="utf-8") + "\nfrom ragcourt.runs import runner  # noqa\n",
                      encoding="utf-8")
    done = lint_imports(root)
    assert done.returncode != 0
    assert "0 kept, 2 broken" in done.stdout  # up a layer, so runs -> metrics -> runs is a cycle too
    assert "ragcourt.metrics.values -> ragcourt.runs.runner" in done.stdout


@pytest.mark.timeout(300)
def test_two_modules_of_one_package_importing_each_other_break_the_cycle_contract(tmp_path: Path) -> None:
    """Issue 34: data.formats <-> data.loaders, llm.client <-> llm.observer and the live modules imported each
    other; import-linter's acyclic_siblings finds such a circle at any depth, a TYPE_CHECKING import included."""
    root = scratch_copy(tmp_path)
    retry = root / "ragcourt" / "llm" / "retry.py"  # llm.client imports llm.retry
    retry.write_text(retry.read_text(encoding="utf-8") + "\nfrom ragcourt.llm import client  # noqa\n",
                     encoding="utf-8")
    done = lint_imports(root)
    assert done.returncode != 0
    assert "1 kept, 1 broken" in done.stdout
    assert "No cycles are allowed in ragcourt.llm" in done.stdout


def test_every_name_a_package_facade_exports_resolves() -> None:
    """A facade's `__all__` (eager or from its `.pyi` stub) names only what its modules define."""
    import importlib

    packages = ["ragcourt", *[name for name in configured_packages() if name != "ragcourt"]]
    missing = []
    for name in packages:
        facade = importlib.import_module(name)
        assert getattr(facade, "__all__", None), f"{name} has no __all__"
        missing += [f"{name}.{export}" for export in facade.__all__ if not hasattr(facade, export)]
    assert missing == []
