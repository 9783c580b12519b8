"""The prompts: one Markdown file per prompt (front matter, then the template), loaded and hashed by
`library`; untrusted text enters a prompt only through `untrusted`, between markers it cannot contain."""

from ragcourt.prompts.library import (
    JUDGE_PROMPTS,
    PROMPT_HASH_LENGTH,
    Prompt,
    PromptError,
    PromptId,
    format_items,
    load_prompt,
    parse_prompt,
    parse_untrusted,
    untrusted,
)

__all__ = [
    "JUDGE_PROMPTS",
    "PROMPT_HASH_LENGTH",
    "Prompt",
    "PromptError",
    "PromptId",
    "format_items",
    "load_prompt",
    "parse_prompt",
    "parse_untrusted",
    "untrusted",
]
