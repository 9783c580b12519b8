"""The pytest plugin (entry point `pytest11: ragcourt`): the `--ragcourt-workspace` option (or the
`ragcourt_workspace` ini key), and the fixtures `ragcourt_eval` (a RagEvaluator bound to the session's
workspace and the running test) and `ragcourt_workspace` (that directory).

The workspace defaults to `ragcourt` under pytest's cache directory (`.pytest_cache/d/ragcourt`, also when
the cache plugin is off), so a second session resumes every run from it: no LLM call for unchanged tests,
and a CI job that caches that directory pays only for changed questions. pytest loads this module in every
session of an environment with ragcourt installed: it imports nothing of ragcourt until a test asks.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from ragcourt.testing.evaluator import RagEvaluator

OPTION = "--ragcourt-workspace"
INI = "ragcourt_workspace"
CACHE_NAME = "ragcourt"

_session: dict[str, pytest.Config] = {}  # the running session's config, for assert_rag outside a fixture


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ragcourt", "ragcourt RAG evaluation")
    group.addoption(OPTION, default=None, metavar="DIR",
                    help="the ragcourt workspace of assert_rag and ragcourt_eval (runs, store, LLM cache); "
                         "default: ragcourt under pytest's cache directory")
    parser.addini(INI, "the ragcourt workspace (relative to the rootdir); --ragcourt-workspace wins", default="")


def pytest_configure(config: pytest.Config) -> None:
    _session["config"] = config


def pytest_unconfigure(config: pytest.Config) -> None:
    if _session.get("config") is config:
        del _session["config"]


def workspace_of(config: pytest.Config) -> Path:
    """The session's workspace: the option (relative to the invocation directory), the ini key (relative to
    the rootdir), else under the cache directory; made on first use only."""
    given = config.getoption(OPTION)
    if given:
        path = Path(given) if Path(given).is_absolute() else config.invocation_params.dir / given
    elif config.getini(INI):
        path = config.rootpath / str(config.getini(INI))
    else:
        cache = getattr(config, "cache", None)
        # -p no:cacheprovider: the same place the cache would have used, so runs are kept either way
        return cache.mkdir(CACHE_NAME) if cache is not None else _made(config.rootpath / ".pytest_cache" / "d" /
                                                                        CACHE_NAME)
    return _made(path)


def _made(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def session_workspace() -> Path | None:
    """The running session's workspace, or None outside a pytest session with this plugin."""
    config = _session.get("config")
    return workspace_of(config) if config is not None else None


@pytest.fixture
def ragcourt_workspace(request: pytest.FixtureRequest) -> Path:
    """The directory of the session's ragcourt workspace."""
    return workspace_of(request.config)


@pytest.fixture
def ragcourt_eval(request: pytest.FixtureRequest, ragcourt_workspace: Path) -> RagEvaluator:
    """An evaluator bound to the session's workspace and this test: `ragcourt_eval.assert_rag(samples, system,
    thresholds={...}, judges=[...])`, or `.evaluate(...)` for the EvalResult alone."""
    from ragcourt.testing.evaluator import RagEvaluator

    return RagEvaluator(home=ragcourt_workspace, test_id=request.node.nodeid)
