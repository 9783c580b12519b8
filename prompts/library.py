"""The prompt library: one Markdown file per prompt, each with an id, a version and a content hash.

A prompt file is a small front matter between `---` lines (id, version, variables, description, source)
followed by the template body with `{name}` placeholders for the declared variables only. Rendering
substitutes exactly those placeholders in a single pass, so literal braces (JSON examples) survive and a
value that itself contains `{question}` is never expanded again.

Untrusted text (questions, answers, chunks) must reach a prompt through `untrusted()` (or `format_items()`
for batched items, `question_block()` for a question and its conversation history): it is wrapped between markers that the text cannot contain, and every prompt states
that text between such markers is data, never instructions.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from importlib import resources
from types import MappingProxyType

import yaml

from ragcourt.schema import CheckKind, Turn

PROMPT_HASH_LENGTH = 12
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_FRONT_MATTER = re.compile(r"\A---\n(?P<meta>.*?)\n---\n(?P<body>.*)\Z", re.DOTALL)
_LABEL = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_ITEM_ID = re.compile(r"[A-Za-z0-9_.:-]+")
_NONCE_LENGTH = 8


class PromptId(StrEnum):
    """Every prompt file in this directory, by file stem."""

    DECOMPOSE_QUESTION = "decompose_question"
    DECOMPOSE_ANSWER = "decompose_answer"
    SPLIT_ELEMENTS = "split_elements"
    JUDGE_ELEMENT_IN_CONTEXT = "judge_element_in_context"
    JUDGE_ELEMENT_IN_ANSWER = "judge_element_in_answer"
    JUDGE_SUBQUERY_IN_CHUNK = "judge_subquery_in_chunk"
    JUDGE_CLAIM_SERVES_SUBQUERY = "judge_claim_serves_subquery"
    JUDGE_CLAIM_SUPPORTED = "judge_claim_supported"
    JUDGE_SUBQUERY_ANSWERED = "judge_subquery_answered"
    JUDGE_COMBINED = "judge_combined"  # every alignment kind of one sample and condition in one call
    JUDGE_COMBINED_REFERENCE = "judge_combined_reference"  # judge_combined with method reference's kinds
    JUDGE_CLAIM_IN_REFERENCE = "judge_claim_in_reference"  # method reference: claims against the elements
    JUDGE_ELEMENT_IN_CHUNK = "judge_element_in_chunk"  # method reference: elements against each chunk
    SPLIT_JOINT = "split_joint"  # batching joint: the sample's splits in one call
    DIMENSION_SCORE = "dimension_score"
    DIMENSION_SCORE_ONLY = "dimension_score_only"  # seed 000's protocol: the score alone (dimension_protocol)
    RUBRIC_RELEVANCE = "rubric_relevance"
    RUBRIC_SPECIFICITY = "rubric_specificity"
    RUBRIC_COMPLETENESS = "rubric_completeness"
    RUBRIC_QUALITY = "rubric_quality"
    PAIRWISE = "pairwise"
    ANSWER_WITH_CONTEXT = "answer_with_context"
    PROBE_CONFIDENCE = "probe_confidence"  # CUE-R: a confidence for a system that reports none
    GENERATE_QUESTION = "generate_question"


JUDGE_PROMPTS: Mapping[CheckKind, PromptId] = MappingProxyType(
    {
        CheckKind.ELEMENT_IN_CONTEXT: PromptId.JUDGE_ELEMENT_IN_CONTEXT,
        CheckKind.ELEMENT_IN_ANSWER: PromptId.JUDGE_ELEMENT_IN_ANSWER,
        CheckKind.SUBQUERY_IN_CHUNK: PromptId.JUDGE_SUBQUERY_IN_CHUNK,
        CheckKind.CLAIM_SERVES_SUBQUERY: PromptId.JUDGE_CLAIM_SERVES_SUBQUERY,
        CheckKind.SUBQUERY_ANSWERED: PromptId.JUDGE_SUBQUERY_ANSWERED,
        CheckKind.CLAIM_SUPPORTED: PromptId.JUDGE_CLAIM_SUPPORTED,
        CheckKind.CLAIM_IN_REFERENCE: PromptId.JUDGE_CLAIM_IN_REFERENCE,
        CheckKind.ELEMENT_IN_CHUNK: PromptId.JUDGE_ELEMENT_IN_CHUNK,
        CheckKind.DIMENSION_SCORE: PromptId.DIMENSION_SCORE,
        CheckKind.PAIRWISE: PromptId.PAIRWISE,
    }
)
"""The prompt that decides each kind of check."""


class PromptError(ValueError):
    """A malformed prompt file, or a render call with missing or unexpected variables."""


@dataclass(frozen=True, slots=True)
class Prompt:
    id: str
    version: int
    variables: tuple[str, ...]
    description: str
    source: str
    template: str
    hash: str  # first 12 hex digits of sha256 of the whole file (front matter included)

    def render(self, **values: str) -> str:
        """The template with every declared variable replaced by its value (single pass).

        Values are inserted as given: wrap untrusted text with `untrusted()` before passing it.
        """
        missing = [name for name in self.variables if name not in values]
        unexpected = sorted(set(values) - set(self.variables))
        if missing or unexpected:
            parts = []
            if missing:
                parts.append(f"missing {', '.join(missing)}")
            if unexpected:
                parts.append(f"unexpected {', '.join(unexpected)}")
            raise PromptError(
                f"prompt '{self.id}' takes variables ({', '.join(self.variables)}): {'; '.join(parts)}"
            )
        for name, value in values.items():
            if not isinstance(value, str):
                raise PromptError(
                    f"prompt '{self.id}': variable '{name}' must be a string, got {type(value)}"
                )
        declared = set(self.variables)
        return separate_blocks(_PLACEHOLDER.sub(
            lambda match: values[match.group(1)] if match.group(1) in declared else match.group(0),
            self.template,
        ))


def parse_prompt(text: str, *, expected_id: str | None = None) -> Prompt:
    """A Prompt from the text of a prompt file. The declared variables must equal the body's placeholders."""
    match = _FRONT_MATTER.match(text.replace("\r\n", "\n"))
    if match is None:
        raise PromptError("a prompt file starts with front matter between two '---' lines")
    try:
        meta = yaml.safe_load(match.group("meta"))
    except yaml.YAMLError as exc:
        raise PromptError(f"front matter is not valid YAML: {exc}") from None
    if not isinstance(meta, dict):
        raise PromptError("front matter must be a mapping")
    required = ("id", "version", "variables", "description", "source")
    absent = [key for key in required if key not in meta]
    if absent or set(meta) - set(required):
        raise PromptError(
            f"front matter needs exactly {required}; missing {absent}, extra {set(meta) - set(required)}"
        )
    prompt_id, version, variables = meta["id"], meta["version"], meta["variables"]
    if expected_id is not None and prompt_id != expected_id:
        raise PromptError(f"file of prompt '{expected_id}' declares id '{prompt_id}'")
    if isinstance(version, bool) or not isinstance(version, int):
        raise PromptError(f"prompt '{prompt_id}': version must be an integer")
    if not isinstance(variables, list) or not all(isinstance(v, str) for v in variables):
        raise PromptError(f"prompt '{prompt_id}': variables must be a list of names")
    body = match.group("body")
    placeholders = set(_PLACEHOLDER.findall(body))
    if placeholders != set(variables) or len(set(variables)) != len(variables):
        raise PromptError(
            f"prompt '{prompt_id}': declared variables {sorted(variables)} differ from the placeholders "
            f"in the body {sorted(placeholders)}"
        )
    return Prompt(
        id=str(prompt_id),
        version=version,
        variables=tuple(variables),
        description=str(meta["description"]),
        source=str(meta["source"]),
        template=body,
        hash=hashlib.sha256(text.encode("utf-8")).hexdigest()[:PROMPT_HASH_LENGTH],
    )


@cache
def load_prompt(pid: PromptId) -> Prompt:
    """The prompt shipped in this package under `pid` (read once per process)."""
    pid = PromptId(pid)
    data = resources.files("ragcourt.prompts").joinpath(f"{pid.value}.md").read_bytes()
    return parse_prompt(data.decode("utf-8"), expected_id=pid.value)


# --------------------------------------------------------------------------- untrusted text


def _nonces(text: str) -> Iterable[str]:
    """Content-dependent nonces of growing length: 8 hex digits of sha256(text), then longer."""
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    length = _NONCE_LENGTH
    while True:
        while len(digest) < length:
            digest += hashlib.sha256(digest.encode("ascii")).hexdigest()
        yield digest[:length]
        length *= 2


def _markers(label: str, nonce: str) -> tuple[str, str]:
    return f"<<<{label}-{nonce}>>>", f"<<<END-{label}-{nonce}>>>"


def untrusted(text: str, label: str) -> str:
    """`text` between markers it does not contain: `<<<LABEL-nonce>>>` ... `<<<END-LABEL-nonce>>>`.

    The nonce is the first 8 hex digits of sha256(text), doubled in length until neither marker occurs
    in the text (the loop ends: a marker longer than the text cannot occur in it). No randomness, so the
    same text always renders the same prompt (and hits the same cache entry). The text is not changed.
    """
    if not _LABEL.fullmatch(label):
        raise ValueError(f"label must be letters, digits and '_', starting with a letter: {label!r}")
    label = label.upper()
    for nonce in _nonces(text):
        start, end = _markers(label, nonce)
        if start not in text and end not in text:
            return f"{start}\n{text}\n{end}"
    raise AssertionError("unreachable: _nonces is infinite")


_START = re.compile(r"<<<([A-Z][A-Z0-9_]*)-([0-9a-f]+)>>>\n")


def _blocks(rendered: str) -> list[tuple[int, int, str, str, str]]:
    """(start, end, label, nonce, text) of every untrusted block of a rendered prompt, in order.

    Read left to right: the template and the text between blocks are ours, so the first marker found is a
    real one; a block's text cannot contain its own end marker, so the first one after its start ends it, and
    whatever marker-like text lies inside is skipped with it.
    """
    found, pos = [], 0
    while (match := _START.search(rendered, pos)) is not None:
        label, nonce = match.groups()
        end_marker = f"\n{_markers(label, nonce)[1]}"
        stop = rendered.find(end_marker, match.end())
        if stop < 0:
            break  # not a block of ours (no end): nothing after it is read as one
        found.append((match.start(), stop + len(end_marker), label, nonce, rendered[match.end():stop]))
        pos = stop + len(end_marker)
    return found


def separate_blocks(rendered: str) -> str:
    """The rendered prompt with every block's markers absent from every untrusted text of the prompt.

    `untrusted()` keeps a block's markers out of its own text; one text could still carry a copy of another
    block's marker (its nonce is a hash of that other text, which may be public). Such a block gets the first
    longer nonce of its own series that no text of this prompt contains: deterministic, so caching holds,
    and a prompt without such a copy renders exactly as before.
    """
    blocks = _blocks(rendered)
    texts = [text for *_, text in blocks]

    def clear(label: str, nonce: str) -> bool:
        start, end = _markers(label, nonce)
        return not any(start in text or end in text for text in texts)

    out, pos = [], 0
    for begin, finish, label, nonce, text in blocks:
        if not clear(label, nonce):
            nonce = next(n for n in _nonces(text) if len(n) > len(nonce) and clear(label, n))
        start, end = _markers(label, nonce)
        out.append(rendered[pos:begin])
        out.append(f"{start}\n{text}\n{end}")
        pos = finish
    out.append(rendered[pos:])
    return "".join(out)


def parse_untrusted(block: str) -> tuple[str, str]:
    """(label, text) of a block made by `untrusted()`; the inverse used to check the wrapping."""
    match = re.match(r"<<<([A-Z][A-Z0-9_]*)-([0-9a-f]+)>>>\n", block)
    if match is None:
        raise ValueError("block does not start with an untrusted-text marker")
    label, nonce = match.groups()
    end = f"\n{_markers(label, nonce)[1]}"
    # The text cannot contain the end marker, and the marker holds no newline after its first character,
    # so the first occurrence after the start marker is the real one.
    stop = block.find(end, match.end())
    if stop < 0:
        raise ValueError("block has no end marker")
    return label, block[match.end() : stop]


def format_items(
    items: Iterable[tuple[str, str]], label: str, *, notes: Mapping[str, str] | None = None
) -> str:
    """Batched items as the judge prompts expect them: `[id]` (plus an optional note) over wrapped text.

    Ids and notes are made by the caller (e.g. "e1", "ctx_0", "related claims: c1, c2") and must not
    carry untrusted text; ids are checked to be plain tokens.
    """
    blocks = []
    for item_id, text in items:
        if not _ITEM_ID.fullmatch(item_id):
            raise ValueError(f"item id must be a plain token (letters, digits, _ . : -): {item_id!r}")
        note = (notes or {}).get(item_id)
        head = f"[{item_id}]" if not note else f"[{item_id}] ({note})"
        blocks.append(f"{head}\n{untrusted(text, label)}")
    return "\n\n".join(blocks)



HISTORY_HEADING = (
    "Conversation so far, oldest turn first. The question after it is the latest user turn of this conversation: "
    "read what it refers to (pronouns, ellipsis, \"that one\") from these turns, but the question to work on is "
    "the latest one only."
)


def question_block(question: str, history: Sequence[Turn] = ()) -> str:
    """The value of a prompt's `{question}` slot: the question between QUESTION markers, after the conversation
    that led to it when there is one (seed 002, section 6).

    Without history this is exactly `untrusted(question, "QUESTION")`, so a single-turn sample's prompt renders
    as before conversations existed (same text, same cache key, and no prompt file changed its hash). With it,
    a heading, each turn in its own block labelled by its role (HISTORY_USER, HISTORY_ASSISTANT), then the
    question. The role is in the label, which our code writes: a turn's text cannot close its block or open
    another (untrusted() and, at render time, separate_blocks() keep every marker of the prompt out of every
    text), so it cannot forge a role, a turn or the question.
    """
    quoted = untrusted(question, "QUESTION")
    if not history:
        return quoted
    turns = "\n\n".join(untrusted(turn.content, f"HISTORY_{turn.role}") for turn in history)
    return f"{HISTORY_HEADING}\n{turns}\n\nLatest question:\n{quoted}"
