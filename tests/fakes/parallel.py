"""How the suite spreads over pytest-xdist workers (a pytest plugin the root conftest loads); pyproject's addopts
ask for `-n auto --dist loadgroup`.

- How many: `-n auto` means WORKERS processes for the whole suite or a folder of it, and none (the tests run in
  the pytest process, as plain pytest) when the arguments name test files only: each worker imports and
  collects what it is given (about 17 s of CPU for the whole suite), more than a few files usually take.
  `-n N` or PYTEST_XDIST_AUTO_NUM_WORKERS choose N; `-n 0` runs in process.
- Which stay together: the tests of a module with a module- or class-scoped fixture (a server or a model
  started once for the module) go to one worker, as one xdist_group named after the module, so that fixture is
  made once; a test's own `@pytest.mark.xdist_group(...)` is kept. xdist's loadgroup passes a test's group to
  the scheduler inside its node id, which pytest 9.2's structured ids no longer let it change
  (pytest-dev/pytest-xdist#1386): each worker writes the groups it collected to a file instead, and the
  scheduler here reads them from there.
- Which first: tests marked `slow` (with their group) are handed out first, so that no long test starts last and
  keeps one worker busy after the others have finished. They share the cores with the other workers' tests, so
  one without a timeout of its own gets SLOW_TIMEOUT_S instead of pyproject's 300 s.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

# More workers than the machine's 2 cores, so that a test waiting on a server or a subprocess leaves its share of
# a core to another (docs/BENCHMARKS.md, "The test loop", has what this gained and cost on the shared machine).
WORKERS = 4
SHARED_SCOPES = frozenset({"class", "module", "package"})
# The demo's real indexing took 116 s alone on the shared machine, and over 300 s beside three busy workers.
SLOW_TIMEOUT_S = 900


def names_files_only(config: pytest.Config) -> bool:
    """Whether every argument is a test file or a test in one (no folder, not the default testpaths)."""
    paths = [config.invocation_params.dir / arg.split("::")[0] for arg in config.args]
    return bool(paths) and all(path.is_file() for path in paths)


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's own hook reads it
    return 0 if names_files_only(config) else WORKERS


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


GROUPS_FILE = "ragcourt_groups_file"  # the workerinput key: where the workers write {node id: group}
_groups_dir = pytest.StashKey[Path]()


def groups_of(items: list[pytest.Item]) -> dict[str, str]:
    """Group the tests of each module that shares a fixture (marking them xdist_group), keep explicit groups."""
    grouped_modules = {module_of(item) for item in items if group_of(item) is None and shares_a_fixture(item)}
    for item in items:
        if group_of(item) is None and module_of(item) in grouped_modules:
            item.add_marker(pytest.mark.xdist_group(module_of(item)))
    return {item.nodeid: group for item in items if (group := group_of(item)) is not None}


# tryfirst: the marks must be on the items before xdist's worker reads them
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    groups = groups_of(items)
    for item in items:
        if item.get_closest_marker("slow") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(SLOW_TIMEOUT_S))
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    if workerinput is None:
        return  # in process the order stays the files' own: a module's tests stay next to each other
    if GROUPS_FILE in workerinput:  # every worker collects the same: each writes it whole, then renames it
        target = Path(workerinput[GROUPS_FILE])
        partial = target.with_name(f"{target.name}.{workerinput['workerid']}")
        partial.write_text(json.dumps(groups))
        os.replace(partial, target)
    slow_units = {groups.get(item.nodeid, item.nodeid) for item in items if item.get_closest_marker("slow")}
    # a stable sort: every worker collects the same order, as xdist requires
    items.sort(key=lambda item: groups.get(item.nodeid, item.nodeid) not in slow_units)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:  # in the controller, for each worker before it starts
    config = node.config
    if _groups_dir not in config.stash:
        config.stash[_groups_dir] = Path(tempfile.mkdtemp(prefix="ragcourt-xdist-"))
    node.workerinput[GROUPS_FILE] = str(config.stash[_groups_dir] / "groups.json")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") != "loadgroup" or _groups_dir not in config.stash:
        return None
    from xdist.scheduler import LoadGroupScheduling

    groups_file = config.stash[_groups_dir] / "groups.json"

    class FileGroupScheduling(LoadGroupScheduling):
        """loadgroup, with the groups the workers wrote (read once every worker has collected)."""

        groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:
                self.groups = json.loads(groups_file.read_text()) if groups_file.exists() else {}
            return self.groups.get(nodeid) or super()._split_scope(nodeid)

    return FileGroupScheduling(config, log)


def pytest_unconfigure(config: pytest.Config) -> None:
    if _groups_dir in config.stash:
        shutil.rmtree(config.stash[_groups_dir], ignore_errors=True)
