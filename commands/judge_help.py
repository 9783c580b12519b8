"""The judges a `--judge` option takes, written once from the names the code builds them by (runs.models:
the no-LLM rules, the learned judge, then a model spec per provider), so no command's help can leave one out."""

from __future__ import annotations

from ragcourt.judging.baseline import BaselineRule
from ragcourt.llm.spec import BundledModel, Provider
from ragcourt.schema.config import BaselineModel

_RULES = {BaselineRule.LEXICAL: "content-word overlap", BaselineRule.SEMANTIC: "MiniLM embedding similarity"}


def judge_forms(*, learned: bool = True) -> list[str]:
    """Each judge a run can build, with a few words on what it is; `learned` False for a command that refuses it."""
    forms = [f"{rule} ({_RULES[rule]}, no LLM)" for rule in BaselineRule]
    if learned:
        forms.append(f"{BaselineModel.LEARNED} (the stacked models of a calibration profile, no LLM)")
    bundled = ", ".join(f"{Provider.LOCAL}:{name}" for name in BundledModel)
    forms.append(f"{Provider.LOCAL} (SmolLM2-135M in process; also {bundled} or {Provider.LOCAL}:PATH.gguf)")
    forms.append(f"{Provider.OPENAI}:MODEL[@URL] (any OpenAI-compatible server)")
    return forms


def judge_help(note: str = "", *, learned: bool = True) -> str:
    """The help of a repeatable --judge option: every judge, then what this command adds (`note`)."""
    return f"repeatable: {', '.join(judge_forms(learned=learned))}" + (f"; {note}" if note else "")
