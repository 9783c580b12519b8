"""MkDocs hook: the pages written from the code at build time, so they cannot drift from it.

* `reference/cli.md`: every command of `ragcourt` with its arguments and options, read from the click
  commands the CLI registers (`ragcourt.cli.COMMANDS`, `load_command`): the same text `--help` prints.
* `reference/config.md`: every key of the run configuration, read from the `EvalConfig` pydantic model and
  the models it nests (type, default, description).

A page asks for a generated section with a marker line, `<!-- generated: cli -->` or
`<!-- generated: config -->`; the hook replaces it.

The pages document the working tree the site is built from, whatever is installed (an editable install hides
the package from mkdocstrings' source finder): the repository root is the package, so a scratch folder with a
`ragcourt` link to it goes first on the import path and is mkdocstrings' search path.
"""

from __future__ import annotations

import enum
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, get_args, get_origin

import typer
from mkdocs.plugins import event_priority

MARKER = re.compile(r"^<!-- generated: (?P<name>[a-z]+) -->$", re.M)
# The papers' names where a help text or description speaks of the method by its source's number.
METHOD_NAMES = {"seed 000": "CuBE", "seed 001": "DICE", "seed 002": "Q-CARE", "seed 003": "element-level attribution",
                "seed 004": "CUE-R"}


PACKAGE_LINKS: list[Path] = []


@event_priority(100)  # before mkdocstrings reads its handlers' options
def on_config(config: Any) -> Any:
    root = Path(config.config_file_path).resolve().parent
    link_dir = Path(tempfile.mkdtemp(prefix="ragcourt-docs-"))
    (link_dir / "ragcourt").symlink_to(root, target_is_directory=True)
    PACKAGE_LINKS.append(link_dir)
    sys.path.insert(0, str(link_dir))
    handlers = config.plugins["mkdocstrings"].config.handlers
    handlers.setdefault("python", {})["paths"] = [str(link_dir)]
    return config


def on_post_build(config: Any) -> None:
    while PACKAGE_LINKS:
        shutil.rmtree(PACKAGE_LINKS.pop(), ignore_errors=True)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    return MARKER.sub(lambda match: GENERATORS[match["name"]](), markdown)


def markdown_text(text: str | None) -> str:
    """A help text as Markdown: Rich's escaped brackets as Markdown's (a bracket is a link otherwise), the
    methods under their papers' names."""
    text = (text or "").replace("\\[", "[").replace("\b", "").replace("[", "\\[")
    for number, name in METHOD_NAMES.items():
        text = text.replace(number, name)
    return text.strip()


def plain(text: str | None) -> str:
    """A help text as one line of a Markdown table cell."""
    return " ".join(markdown_text(text).split()).replace("|", "\\|")


# --------------------------------------------------------------------------- the command line


def cli_reference() -> str:
    from ragcourt.cli import COMMANDS, load_command

    sections = []
    for name in COMMANDS:
        command = load_command(name)
        if command is None:
            continue
        sections.append(command_section(f"ragcourt {name}", command, level=2))
    return "\n".join(sections)


def command_section(path: str, command: Any, level: int) -> str:
    lines = [f"{'#' * level} `{path}`", ""]
    lines += [markdown_text(command.help), ""]
    arguments = [p for p in command.params if p.param_type_name == "argument"]
    options = [p for p in command.params if p.param_type_name == "option" and p.name != "help"]
    subcommands = getattr(command, "commands", None) or {}
    usage = " ".join([path, *(a.name.upper() for a in arguments), "COMMAND" if subcommands else "",
                      "[OPTIONS]" if options else ""])
    lines += ["```text", " ".join(usage.split()), "```", ""]
    if arguments:
        lines += ["| argument | description |", "|---|---|"]
        lines += [f"| `{a.name.upper()}` | {plain(getattr(a, 'help', ''))} |" for a in arguments]
        lines.append("")
    if options:
        lines += ["| option | default | description |", "|---|---|---|"]
        context = typer.Context(command)
        lines += [option_row(o, context) for o in options]
        lines.append("")
    for sub_name, sub in sorted(subcommands.items()):
        lines.append(command_section(f"{path} {sub_name}", sub, level + 1))
    return "\n".join(lines)


def option_row(option: Any, context: Any) -> str:
    """One option as a table row: its names and value type (`<str>`, `<majority|weighted>`; none for a flag),
    its default, its help."""
    names = ", ".join(f"`{n}`" for n in [*option.opts, *option.secondary_opts])
    kind = "" if option.is_flag else (option.metavar or option.display_type(context).strip("<>"))
    if option.multiple and kind.startswith("list[") and kind.endswith("]"):
        kind = kind[len("list["):-1]  # one value each time; "(repeatable)" says the rest
    kind = kind.removesuffix(" range")
    kind = f" `{kind}`" if kind else ""
    default = option.default
    if option.is_flag:
        active = option.opts[0] if default else (option.secondary_opts or [""])[0]
        shown = f"`{active}`" if option.secondary_opts else ""
    elif default is None or default == () or callable(default):
        shown = ""
    else:
        shown = f"`{default.value if isinstance(default, enum.Enum) else default}`"
    extra = " (repeatable)" if option.multiple else ""
    return f"| {names}{kind.replace('|', chr(92) + '|')}{extra} | {shown} | {plain(option.help)} |"


# --------------------------------------------------------------------------- the configuration


def config_reference() -> str:
    from pydantic import BaseModel

    from ragcourt.schema.config import EvalConfig

    sections = [model_table("Top level", EvalConfig)]
    nested: list[type[BaseModel]] = []
    for field in EvalConfig.model_fields.values():
        for model in models_in(field.annotation):
            if model not in nested:
                nested.append(model)
    for model in nested:
        sections.append(model_table(f"`{model.__name__}`", model))
    return "\n".join(sections)


def models_in(annotation: Any) -> list[type]:
    from pydantic import BaseModel

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for arg in get_args(annotation) for model in models_in(arg)]


def model_table(title: str, model: Any) -> str:
    doc = plain((model.__doc__ or "").strip().split("\n\n")[0])
    lines = [f"## {title}", "", doc, "", "| key | type | default | description |", "|---|---|---|---|"]
    for name, field in model.model_fields.items():
        default = field.get_default(call_default_factory=True)
        description = field.description or KEY_DESCRIPTIONS.get(f"{model.__name__}.{name}", "")
        lines.append(f"| `{name}` | {type_name(field.annotation)} | {default_text(default)} | {plain(description)} |")
    lines.append("")
    return "\n".join(lines)


def type_name(annotation: Any) -> str:
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return " \\| ".join(f"`{member.value}`" for member in annotation)
    origin = get_origin(annotation)
    if origin is None:
        return getattr(annotation, "__name__", str(annotation))
    args = [a for a in get_args(annotation) if a is not type(None) and a is not Ellipsis]
    inner = " or ".join(type_name(a) for a in args)
    if origin in (tuple, list):
        return f"list of {inner}"
    if origin is dict:
        return f"mapping {' to '.join(type_name(a) for a in args)}"
    return inner + (" or null" if type(None) in get_args(annotation) else "")


def default_text(value: Any) -> str:
    from pydantic import BaseModel

    if isinstance(value, BaseModel):
        return "(see below)"
    if isinstance(value, tuple) and value and isinstance(value[0], BaseModel):
        return f"{len(value)} entries (see below)"
    if isinstance(value, enum.Enum):
        return f"`{value.value}`"
    if isinstance(value, tuple):
        return "`[" + ", ".join(str(v.value if isinstance(v, enum.Enum) else v) for v in value) + "]`"
    if value is None:
        return ""
    return f"`{value}`"


# What the keys that carry no description in the model mean (the model's own description wins where it has one).
KEY_DESCRIPTIONS = {
    "EvalConfig.judges": "the jury: one entry per judge (a model spec and its options, below)",
    "EvalConfig.methods": "which families of checks the run makes: Q-CARE, element-level attribution, CuBE, CUE-R, and "
                          "the reference-side checks RAGAS also makes",
    "EvalConfig.dimensions": "CuBE's dimensions, each scored 0-10 with a rubric (below)",
    "EvalConfig.perturbations": "CUE-R's perturbations (below)",
    "EvalConfig.top_k": "how many chunks the system retrieves for the normal condition; the k of C-Prec@k and C-nDCG@k",
    "EvalConfig.score_threshold": "a similarity cut-off of the normal retrieval (the loose retrieval drops it)",
    "EvalConfig.loose_coverage_threshold": "under this element coverage a question's retrieval is run again loosely",
    "EvalConfig.loose_k_factor": "the loose retrieval asks for this many times top_k chunks",
    "EvalConfig.review_mode": "deferred: escalations wait for `review` / `serve`; inline: the run stops and waits for a "
                              "person at each",
    "EvalConfig.timeout_s": "seconds a model call may take before it is retried",
    "EvalConfig.trim_proportion": "CuBE's trimmed means: the share cut from each end",
    "EvalConfig.seed": "seeds every draw of the run (distractors, sampled chunks)",
    "EvalConfig.telemetry": "where OpenTelemetry spans go (below)",
    "JudgeSpec.model": "a model spec: lexical, semantic, learned, local[:PATH], openai:MODEL[@BASE_URL]",
    "JudgeSpec.logprobs": "ask the endpoint for logprobs, so binary verdicts carry P(yes) from the decision token",
    "DimensionSpec.name": "the dimension's name (relevance, specificity, completeness and quality are built in)",
    "DimensionSpec.weight": "a number, or auto: the dimension's correlation with the gold document's retrieval rank",
    "PerturbationSpec.kinds": "which perturbations of each chunk: remove, replace, duplicate (with cuer and none given: all "
                              "three)",
    "PerturbationSpec.distractor": "random (a seeded draw from the corpus) or best_non_gold (the next-ranked non-gold "
                                   "chunk)",
    "PerturbationSpec.seed": "seeds the distractor draw and the sampled chunks",
}

GENERATORS = {"cli": cli_reference, "config": config_reference}
