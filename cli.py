"""The command line: the composition root. Its commands (ragcourt/commands/, one module each) read files
and flags, build the stores, the system under test and the jury, and hand them to the run; this module
registers them on the typer app.

A command's module is imported only when that command runs: `ragcourt --help` lists the commands from the
table below without importing any of them (each module pulls in pandas, chromadb, langchain or the LLM
clients), so asking for help costs no more than starting Python and typer.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from importlib.metadata import version
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from typer.core import TyperCommand, TyperGroup, TyperOption

if TYPE_CHECKING:
    # typer ships its own copy of click: its classes, not those of an installed click, are what it passes.
    from typer._click import Command, Context, HelpFormatter


@dataclass(frozen=True)
class CommandEntry:
    """Where a command lives, and the one line `ragcourt --help` shows for it: the first paragraph of the
    command's own help (tests/test_cli.py checks that the two stay the same)."""

    module: str
    short_help: str


# In the order of `ragcourt --help`.
COMMANDS: dict[str, CommandEntry] = {
    "demo": CommandEntry("demo", "Index the bundled HotpotQA sample, evaluate the reference RAG at top_k 5 and "
                                 "top_k 1 with a two-judge jury, offline: where each loses quality, the difference "
                                 "against the noise band, the escalations that matter most."),
    "index": CommandEntry("index", "Index a corpus into the workspace's chromadb (embedded, offline "
                                   "embeddings)."),
    "run": CommandEntry("run", "Evaluate a dataset; streams one line per finished question."),
    "summary": CommandEntry("summary", "Print a run's figures from the store (no LLM call)."),
    "review": CommandEntry("review", "Walk the run's pending escalations in the terminal; decisions override the "
                                     "jury."),
    "graph": CommandEntry("graph", "Print the per-sample state machine as Mermaid."),
    "generate": CommandEntry("generate", "Write one realistic user question per document; the document becomes "
                                         "the gold document."),
    "report": CommandEntry("report", "Write a self-contained HTML report (opens offline: one inline script sorts "
                                     "and filters its tables; no external resource)."),
    "serve": CommandEntry("serve", "Serve the review desk (keyboard-driven), live progress and the report of a "
                                   "run."),
    "rank": CommandEntry("rank", "Rank systems with DICE: pairwise A/B/Tie judgments (both orders, or seed 001's "
                                 "one drawn order), Swiss tournament, Elo. Scalar metrics of the answer files can "
                                 "play as threshold judges (--metric-judge)."),
    "calibrate": CommandEntry("calibrate", "Agreement of judges with human labels: accuracy, Cohen's / Fleiss' "
                                           "kappa, correlations, confusion."),
    "watch": CommandEntry("watch", "Follow a running evaluation: one line per finished question and a summary "
                                   "that updates."),
    "ragchecker-samples": CommandEntry("elements", "The bundled RAGChecker pairs as samples: query, long reference "
                                                   "answer (gt_answer) and model 1's (or 2's) response as a "
                                                   "precomputed answer. The pairs have no retrieved "
                                                   "contexts: run them with `--system precomputed`; element "
                                                   "verdicts then come from the answer only."),
    "noise": CommandEntry("noise", "Per-question standard deviation between two runs of one configuration and the "
                                   "band within which a change of a mean is noise (z = 1.96), for "
                                   "the whole run and per subgroup."),
    "compare": CommandEntry("noise", "Per metric: mean of A and B over the questions both scored, B - A, and "
                                     "\"noise\" when inside the band."),
    "rerun": CommandEntry("rerun", "Evaluate only the samples whose reference answer or element list changed since "
                                   "the base run, and copy every other row; prints which rows were "
                                   "re-run, why and when."),
    "elements": CommandEntry("elements", "Export and import the frozen element lists of reference answers, so a "
                                         "person can edit them (seed 003)."),
}


def _untyped_flag(option: object) -> None:
    """A flag takes no value: typer's Rich help would print `<bool>` beside it (--help included)."""
    if isinstance(option, TyperOption) and (option.is_flag or option.count):
        option.metavar = ""


def literal_help(command: Command) -> Command:
    """`command` (and its subcommands) with help written as plain text shown as written. Typer reads help as
    Rich markup, where `ragcourt[otel]` or `[default: 10]` look like style tags and vanish: every help string
    is escaped here, once, so none has to escape its own brackets."""
    command.help = escape(command.help) if command.help else command.help
    command.short_help = escape(command.short_help) if command.short_help else command.short_help
    for param in command.get_params(typer.Context(command)):  # the --help option too (built and kept here)
        if getattr(param, "help", None):  # typer's options and arguments both carry one
            param.help = escape(param.help)  # type: ignore[attr-defined]
        _untyped_flag(param)
    for sub in getattr(command, "commands", {}).values():
        literal_help(sub)
    return command


def load_command(name: str) -> Command | None:
    """The real click command `name`: its module registers it on a scratch typer app, as on the full one."""
    entry = COMMANDS.get(name)
    if entry is None:
        return None
    module = importlib.import_module(f"ragcourt.commands.{entry.module}")
    scratch = typer.Typer(add_completion=False)
    scratch.callback()(lambda: None)  # a callback makes typer build a group even for a one-command module
    module.register(scratch)
    group = typer.main.get_group(scratch)
    command = group.get_command(typer.Context(group), name)
    return None if command is None else literal_help(command)


class LazyCommands(TyperGroup):
    """A typer group whose commands are imported on first use. While help is being written, each command is
    a stand-in carrying only its name and short help, so listing them imports nothing."""

    listing = False

    def list_commands(self, ctx: Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        if self.listing:
            entry = COMMANDS.get(cmd_name)
            return None if entry is None else TyperCommand(cmd_name, short_help=escape(entry.short_help),
                                                           help=escape(entry.short_help))
        return load_command(cmd_name)

    def invoke(self, ctx: Context) -> object:
        # Imported here: `--help` never gets this far, and the module loads rich's full console.
        from ragcourt.commands.output import one_line_errors

        with one_line_errors():  # one line and exit 2, never a traceback, for what any command may meet
            return super().invoke(ctx)

    def get_help_option(self, ctx: Context) -> TyperOption | None:
        option = super().get_help_option(ctx)
        _untyped_flag(option)
        return option

    def format_help(self, ctx: Context, formatter: HelpFormatter) -> None:
        self.listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self.listing = False


app = typer.Typer(cls=LazyCommands, add_completion=False, no_args_is_help=True)


def _print_version(asked: bool) -> None:
    if asked:
        typer.echo(f"ragcourt {version('ragcourt')}")  # the installed distribution's, as pip shows it
        raise typer.Exit()


@app.callback()
def ragcourt(
    show_version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True,
                                               metavar="", help="Show the version and exit.")] = False,
) -> None:
    """Evaluate RAG systems: find where quality is lost (retrieval, generation or the documents)."""


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        # Imported here: the console module loads rich's full console, which `--help` does not need.
        from ragcourt.commands.output import console

        console.print("interrupted; everything judged so far is stored — run the same command to resume")
        sys.exit(130)
