"""How the suite spreads over pytest-xdist workers (a pytest plugin the root conftest loads); pyproject's addopts
ask for `-n auto --dist loadgroup`.

- How many: `-n auto` means WORKERS processes when the run spans more than one test file, and none (the tests
  run in the pytest process, as plain pytest) when it names a single file: each worker imports and collects
  the whole suite (about 15 s of CPU), more than one file usually takes. `-n N` or PYTEST_XDIST_AUTO_NUM_WORKERS
  choose N; `-n 0` runs in process.
- Which stay together: the tests of a module with a module- or class-scoped fixture (a server or a model
  started once for the module) go to one worker, as one xdist_group named after the module, so that fixture is
  made once; a test's own `@pytest.mark.xdist_group(...)` is kept.
- Which first: tests marked `slow` (with their group) are handed out first, so that no long test starts last and
  keeps one worker busy after the others have finished.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# More workers than the machine's 2 cores: alone, a test waits on servers and subprocesses more than it computes
# (pytest at about 44 % of one core over the whole suite).
WORKERS = 4
SHARED_SCOPES = frozenset({"class", "module", "package"})


def names_one_file(config: pytest.Config) -> bool:
    """Whether every argument is a test file (or a test in one) and they are all the same file."""
    files = {(config.invocation_params.dir / arg.split("::")[0]).resolve() for arg in config.args}
    return len(files) == 1 and all(Path(f).is_file() for f in files)


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's own hook reads it
    return 0 if names_one_file(config) else WORKERS


def module_of(item: pytest.Item) -> str:
    return item.nodeid.split("::")[0]


def shares_a_fixture(item: pytest.Item) -> bool:
    """Whether the test uses a module-, class- or package-scoped fixture (session ones are each worker's own).
    pytest has no public reader of a test's fixture definitions: `_fixtureinfo` is what plugins use."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(defs and defs[-1].scope in SHARED_SCOPES for defs in info.name2fixturedefs.values())


def group_of(item: pytest.Item) -> str | None:
    marker = item.get_closest_marker("xdist_group")
    if marker is not None:
        return str(marker.args[0] if marker.args else marker.kwargs.get("name", "default"))
    return None


# tryfirst: the marks must be on the items before xdist's worker reads them into the node ids (loadgroup)
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    grouped_modules = {module_of(item) for item in items if group_of(item) is None and shares_a_fixture(item)}
    for item in items:
        if group_of(item) is None and module_of(item) in grouped_modules:
            item.add_marker(pytest.mark.xdist_group(module_of(item)))
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        return  # in process the order stays the files' own: a module's tests stay next to each other
    slow_units = {group_of(item) or item.nodeid for item in items if item.get_closest_marker("slow") is not None}
    # a stable sort: every worker collects the same order, as xdist requires
    items.sort(key=lambda item: (group_of(item) or item.nodeid) not in slow_units)
