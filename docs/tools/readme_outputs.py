"""Write the README's output blocks from a real run of its commands.

    python docs/tools/readme_outputs.py           # rewrite the blocks in README.md
    python docs/tools/readme_outputs.py --check   # exit 1 when a block differs from a fresh run

Each block sits between `<!-- begin output: NAME -->` and `<!-- end output -->`. Its commands are the lines
of the ```bash block just above it, run as written (through bash, so globs work) in a scratch directory that
holds a link to the repository's `examples/`, exactly as a user runs them from the repository root after the
set-up line. The `demo` block runs `ragcourt demo`, the set-up line's last command. All blocks share one
workspace and run in README order, so a later command finds the runs of earlier ones. A block shows some
lines (SHOWN below) of its last command's output; the commands before it only have to succeed.

tests/scenarios/test_readme_commands.py runs the same function and checks that the README shows what it
produces, with durations and rates masked (they differ from run to run).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
BLOCK = re.compile(r"(<!-- begin output: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- end output -->)", re.S)
BASH = re.compile(r"```bash\n(?P<body>.*?)```", re.S)
WIDTH = "120"  # the terminal width the tables are drawn at


@dataclass(frozen=True)
class Shown:
    """Which lines of a command's output the README shows: every line from one matching `start` to the next
    one matching `end` (both kept), for each (start, end); or single lines matching `line`. Lines matching
    `dropped` never show (a table's title, which the README's text above it says in its own words)."""

    ranges: tuple[tuple[str, str], ...] = ()
    lines: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()

    def pick(self, output: str) -> list[str]:
        kept: list[str] = []
        inside: str | None = None
        for text in output.splitlines():
            text = text.rstrip()
            if inside is not None:
                keep = True
                if re.search(inside, text):
                    inside = None
            else:
                starts = [end for start, end in self.ranges if re.search(start, text)]
                inside = starts[0] if starts else None
                keep = bool(starts) or any(re.search(pattern, text) for pattern in self.lines)
            if keep and not any(re.search(pattern, text) for pattern in self.dropped):
                kept.append(text)
        return kept


TABLE_END = r"^\s*└"
SHOWN: dict[str, Shown] = {
    "demo": Shown(ranges=((r"headline figures \(mean", TABLE_END), (r"where quality is lost: gap shares", TABLE_END))),
    "index": Shown(lines=(r"^indexed ",)),
    "run": Shown(ranges=((r"^\s*run own-k5: \d+ samples", TABLE_END),), lines=(r"^elements: ", r"^gap shares")),
    "precomputed": Shown(lines=(r"^elements: ", r"^gap shares")),
    "report": Shown(lines=(r"^report: ",)),
    "compare": Shown(lines=(r"^┃ metric", r"^│ element_coverage", r"^│ answer_f1", r"^│ grounding_score")),
    "rank": Shown(ranges=((r"^┏", TABLE_END),)),
    "cube-cuer": Shown(ranges=((r"^\s+CuBE \(", TABLE_END),), lines=(r"^n=\d+ perturbed answers",),
                       dropped=(r"^\s+CuBE \(",)),
    "gate": Shown(lines=(r"^FAIL ",)),
}


def commands_of(readme: str) -> list[tuple[str, list[str]]]:
    """(block name, its commands) in README order: the lines of the bash block above each output block."""
    found = []
    for block in BLOCK.finditer(readme):
        name = block["name"]
        if name == "demo":
            found.append((name, ["ragcourt demo"]))
            continue
        bash = list(BASH.finditer(readme, 0, block.start()))
        if not bash:
            raise SystemExit(f"README.md: output block '{name}' has no ```bash block above it")
        found.append((name, [line for line in bash[-1]["body"].splitlines() if line.strip()]))
    return found


def run_commands(readme: str, workdir: Path, only: Callable[[str], bool] = lambda name: True) -> dict[str, str]:
    """Run the README's commands in `workdir` (a link to examples/ is made there) and return each block's
    shown lines. A command that fails is an error unless its block expects it (the gate exits 1)."""
    (workdir / "examples").symlink_to(REPO / "examples", target_is_directory=True)
    env = {**os.environ, "COLUMNS": WIDTH, "NO_COLOR": "1"}
    env.pop("CI", None)  # progress lines are the same either way; keep the output as a user's terminal pipe
    shown: dict[str, str] = {}
    for name, commands in commands_of(readme):
        if not only(name):
            continue
        for command in commands:
            done = subprocess.run(["bash", "-c", command], cwd=workdir, env=env, capture_output=True, text=True,
                                  timeout=900)
            expected = 1 if name == "gate" else 0
            if done.returncode != expected:
                raise RuntimeError(f"`{command}` exited {done.returncode} (expected {expected}):\n"
                                   f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        shown[name] = "\n".join(SHOWN[name].pick(done.stdout + done.stderr))
    return shown


def render(readme: str, shown: dict[str, str]) -> str:
    def block(match: re.Match[str]) -> str:
        name = match["name"]
        if name not in shown:
            return match.group(0)
        return f"{match.group(1)}```text\n{shown[name]}\n```\n{match.group(4)}"

    return BLOCK.sub(block, readme)


def shown_in(readme: str) -> dict[str, str]:
    """Each output block's lines as the README has them."""
    return {m["name"]: m["body"].removeprefix("```text\n").removesuffix("```\n").rstrip("\n")
            for m in BLOCK.finditer(readme)}


def masked(text: str) -> str:
    """`text` with what differs between two identical runs masked: durations, rates, file sizes."""
    text = re.sub(r"\d+(\.\d+)?\s?(s|KiB|MiB)\b", "N\\2", text)
    text = re.sub(r"\d+:\d\d\b", "N:NN", text)
    return re.sub(r"[\d.]+/s\b", "N/s", text)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of rewriting")
    parser.add_argument("--skip", action="append", default=[], metavar="NAME",
                        help="leave this block as it is (e.g. demo, the slowest: it indexes 995 paragraphs)")
    args = parser.parse_args(argv)
    readme = README.read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="ragcourt-readme-") as scratch:
        shown = run_commands(readme, Path(scratch), only=lambda name: name not in args.skip)
    if args.check:
        stale = [name for name, text in shown_in(readme).items()
                 if name in shown and masked(text) != masked(shown[name])]
        for name in stale:
            print(f"README.md: output block '{name}' differs from a fresh run", file=sys.stderr)
        return 1 if stale else 0
    README.write_text(render(readme, shown), encoding="utf-8")
    print(f"README.md: {len(shown)} output blocks written")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
