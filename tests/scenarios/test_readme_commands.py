"""The README's commands, run verbatim, print what the README shows; the README stays a short user guide.

The output blocks of README.md are written by docs/tools/readme_outputs.py from a real run of the bash block
above each; these tests run the same commands the same way (offline, in a scratch directory linked to
examples/) and compare, with durations and rates masked. After a change of what a command prints, run
`python docs/tools/readme_outputs.py` and commit the README it writes.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from fixtures import REPO

README = REPO / "README.md"
# Names a user cannot know: the methods go by their papers' names, and no page points into a developer's
# machine or the project's tracker.
# case-insensitive ("Issue 22"); a short commit hash is 7 hex digits with at least one digit and one letter
INTERNAL = re.compile(r"seed 00\d|seeds? \d{3}|issue \d+|\.\./shared|shared slice|/tmp/|gdemo|\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b", re.IGNORECASE)


def readme_outputs() -> ModuleType:
    spec = importlib.util.spec_from_file_location("readme_outputs", REPO / "docs" / "tools" / "readme_outputs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while they are defined
    spec.loader.exec_module(module)
    return module


def test_the_readme_is_short_and_speaks_of_the_product_only() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 350
    assert INTERNAL.findall(text) == []
    for command in ("python3 -m venv .venv && . .venv/bin/activate && pip install . && ragcourt demo",
                    'python3 -m venv .venv && . .venv/bin/activate && pip install ".[dev]" && python -m pytest -q'):
        assert f"```bash\n{command}\n```" in text


def test_the_docs_pages_speak_of_the_product_only() -> None:
    pages = [p for p in (REPO / "docs").rglob("*.md")]
    assert len(pages) >= 20
    named = {str(p.relative_to(REPO)): INTERNAL.findall(p.read_text(encoding="utf-8")) for p in pages}
    assert {page: found for page, found in named.items() if found} == {}


def test_every_page_the_readme_links_exists() -> None:
    links = re.findall(r"\]\((docs/[^)#]+)", README.read_text(encoding="utf-8"))
    assert len(links) >= 20
    assert [link for link in links if not (REPO / link).exists()] == []


@pytest.mark.timeout(900)
def test_the_own_data_commands_run_verbatim_and_print_what_the_readme_shows(tmp_path: Path) -> None:
    tool = readme_outputs()
    readme = README.read_text(encoding="utf-8")
    fresh = tool.run_commands(readme, tmp_path, only=lambda name: name != "demo")
    shown = tool.shown_in(readme)
    assert set(fresh) == set(shown) - {"demo"} and len(fresh) >= 8
    for name, text in fresh.items():
        assert text.strip(), f"block '{name}': the command printed none of the lines the README shows"
        assert tool.masked(shown[name]) == tool.masked(text), (
            f"README block '{name}' is not what its commands print now; run python docs/tools/readme_outputs.py")
    # what the steps promise, on the real figures
    assert re.search(r"^indexed 80 chunks into 'own_data'", fresh["index"], re.M)
    assert re.search(r"^FAIL element_coverage 0\.\d+ < 0\.900", fresh["gate"], re.M)
    assert [line.split("│")[2].strip() for line in fresh["rank"].splitlines() if line.startswith("│")][-1] == \
        "closed_book"


@pytest.mark.timeout(900)
def test_the_demo_prints_the_tables_the_readme_shows(tmp_path: Path) -> None:
    tool = readme_outputs()
    readme = README.read_text(encoding="utf-8")
    fresh = tool.run_commands(readme, tmp_path, only=lambda name: name == "demo")
    assert tool.masked(tool.shown_in(readme)["demo"]) == tool.masked(fresh["demo"])


def test_getting_started_runs_the_readme_s_commands() -> None:
    """The getting-started page's first run is the README's, so the test above runs it verbatim too."""
    page = (REPO / "docs" / "getting-started.md").read_text(encoding="utf-8")
    first_run = re.search(r"```bash\n(ragcourt index examples/own_data.*?)```", page, re.S)
    assert first_run is not None
    readme_commands = {c for _, commands in readme_outputs().commands_of(README.read_text(encoding="utf-8"))
                       for c in commands}
    assert set(first_run[1].splitlines()) <= readme_commands


def test_the_output_masking_hides_timings_and_nothing_else() -> None:
    tool = readme_outputs()
    assert tool.masked("indexed 80 chunks into 'own_data' in 9.1s") == tool.masked("indexed 80 chunks into 'own_data' in 2.8s")
    assert tool.masked("report: a/report.html (137 KiB)") == tool.masked("report: a/report.html (140 KiB)")
    assert tool.masked("│ element_coverage │ 0.625 │") != tool.masked("│ element_coverage │ 0.500 │")


def test_the_generator_checks_the_readme() -> None:
    """`readme_outputs.py --check` is what a maintainer runs; its help names the option."""
    done = subprocess.run(["python3", str(REPO / "docs" / "tools" / "readme_outputs.py"), "--help"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "--check" in done.stdout


def test_the_pytest_failure_the_ci_guide_shows_is_what_the_example_prints(tmp_path: Path) -> None:
    page = (REPO / "docs" / "guides" / "ci-and-pytest.md").read_text(encoding="utf-8")
    shown = re.search(r"```text\n(E .*?)```", page, re.S)
    assert shown is not None
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "examples/pytest",
                           "--ragcourt-workspace", str(tmp_path)], cwd=REPO, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 1 and "1 failed, 1 passed" in done.stdout, done.stdout[-3000:]
    printed = {line.rstrip() for line in done.stdout.splitlines()}
    assert [line for line in shown[1].splitlines() if line.rstrip() not in printed] == []
