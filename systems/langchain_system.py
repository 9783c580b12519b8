"""A LangChain app as the system under test: its retriever and answer chain, or one chain that does both."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from langchain_core.documents import Document

from ragcourt.schema import Chunk, Condition, ConditionKind, Sample, content_id
from ragcourt.systems.protocol import ConditionUnavailable, Generation


class RetrieverControl(StrEnum):
    """How LangChainSystem sets a LangChain retriever's k and score threshold for a condition."""

    SEARCH_KWARGS = "search_kwargs"  # VectorStoreRetriever and most vector-store retrievers: k and threshold
    K_FIELD = "k_field"  # a pydantic field `k` (BM25Retriever, TFIDFRetriever, ...): k only
    FIXED = "fixed"  # neither: the retriever's own results cut to k; it can never return more


def retriever_control(retriever: Any) -> RetrieverControl:
    if isinstance(getattr(retriever, "search_kwargs", None), dict):
        return RetrieverControl.SEARCH_KWARGS
    fields = getattr(type(retriever), "model_fields", {})
    if "k" in fields and isinstance(getattr(retriever, "k", None), int):
        return RetrieverControl.K_FIELD
    return RetrieverControl.FIXED


def resized_retriever(retriever: Any, k: int, score_threshold: float | None) -> Any:
    """A copy of `retriever` that returns k documents above `score_threshold` (None: no cut-off).

    VectorStoreRetriever: k and score_threshold go into search_kwargs; a threshold on a "similarity"
    retriever switches it to "similarity_score_threshold", and no threshold drops the app's own one.
    """
    control = retriever_control(retriever)
    if control is RetrieverControl.K_FIELD:
        return retriever.model_copy(update={"k": k})
    if control is RetrieverControl.FIXED:
        return retriever
    search_kwargs = {**retriever.search_kwargs, "k": k}
    update: dict[str, Any] = {"search_kwargs": search_kwargs}
    if score_threshold is None:
        search_kwargs.pop("score_threshold", None)
    else:
        search_kwargs["score_threshold"] = score_threshold
        if getattr(retriever, "search_type", None) == "similarity":
            update["search_type"] = "similarity_score_threshold"
    return retriever.model_copy(update=update)


class ContextFormat(StrEnum):
    """What an answer chain receives as its context input."""

    TEXT = "text"  # the chunks' texts joined by blank lines, as a prompt template takes them
    DOCUMENTS = "documents"  # a list of LangChain Documents, for chains that format them themselves


@dataclass
class LangChainSystem:
    """A LangChain app evaluated as it is. Two shapes:

    - `retriever` + an answer chain `runnable` mapping {question_key: question, "context": context} to an
      answer (a string, a message, or a dict with `answer_key`). Every condition works: ragcourt shows the
      answer chain whatever context a condition needs.
    - `retriever=None` and ONE chain that retrieves for itself and returns a dict with `context_key`
      (Documents) and `answer_key`. Its input is the question, or {chain_input_key: question}. Only the
      normal condition exists: nobody can show such a chain another context.

    k and score threshold reach the retriever as `RetrieverControl` says: through `search_kwargs`
    (k and score_threshold), through a `k` field, or not at all. A retriever without either is asked
    as it is and its documents are cut to k; with `normal_k` set, asking it for more (the loose
    condition) is ConditionUnavailable, because it cannot widen its search.

    A chain names no chunk it relied on and no confidence: its generations carry no trace (CUE-R judges one
    from the answer's claims) and no confidence (CUE-R's probe may ask for one).
    """

    retriever: Any
    runnable: Any
    name: str = "langchain"
    extra_inputs: dict[str, Any] = field(default_factory=dict)
    context_format: ContextFormat = ContextFormat.TEXT
    question_key: str = "question"
    context_key: str = "context"
    answer_key: str = "answer"
    chain_input_key: str | None = None
    normal_k: int | None = None
    # One-chain mode: the answer the chain gave with the documents it retrieved, per question.
    _chain_answers: dict[str, Generation] = field(default_factory=dict, init=False, repr=False)

    @property
    def fixed_retrieval(self) -> bool:
        """One chain retrieves for itself with its own k: nobody can ask it for another (no loose run), and
        C-Prec@k counts its documents whole instead of dividing by the run's top_k."""
        return self.retriever is None

    async def retrieve(self, sample: Sample, k: int, score_threshold: float | None) -> list[Chunk]:
        if self.retriever is None:
            return await self._run_whole_chain(sample, k)
        control = retriever_control(self.retriever)
        if control is RetrieverControl.FIXED and self.normal_k is not None and k > self.normal_k:
            raise ConditionUnavailable(
                f"retriever {type(self.retriever).__name__} exposes neither search_kwargs nor a k field, "
                f"so it cannot return more than its own documents (asked for k={k})"
            )
        documents = await resized_retriever(self.retriever, k, score_threshold).ainvoke(sample.question)
        if control is RetrieverControl.FIXED:
            documents = documents[:k]
        return chunks_from_documents(documents)

    async def generate(self, sample: Sample, chunks: Sequence[Chunk], condition: Condition) -> Generation:
        if self.retriever is None:
            if condition.kind is not ConditionKind.NORMAL:
                raise ConditionUnavailable(
                    f"a chain that retrieves for itself cannot be shown the {condition.key} context; "
                    "pass retriever= and an answer chain that takes {question, context}"
                )
            if sample.question not in self._chain_answers:
                await self._run_whole_chain(sample, None)
            return self._chain_answers[sample.question]
        if self.context_format is ContextFormat.DOCUMENTS:
            context: Any = [_document_from_chunk(chunk) for chunk in chunks]
        else:
            context = "\n\n".join(chunk.text for chunk in chunks)
        output = await self.runnable.ainvoke(
            {self.question_key: sample.question, "context": context, **self.extra_inputs}
        )
        # A chain's output names no chunk it relied on: no trace (seed 004's U is then judged), never "all shown".
        return Generation(text=answer_text(output, self.answer_key))

    async def _run_whole_chain(self, sample: Sample, k: int | None) -> list[Chunk]:
        if k is not None and self.normal_k is not None and k != self.normal_k:
            raise ConditionUnavailable(
                f"a chain that retrieves for itself cannot be asked for k={k}; pass retriever= to vary k"
            )
        chain_input: Any = sample.question if self.chain_input_key is None else {self.chain_input_key: sample.question}
        output = await self.runnable.ainvoke(chain_input)
        if not isinstance(output, Mapping) or self.context_key not in output or self.answer_key not in output:
            raise TypeError(
                f"the chain must return a dict with '{self.context_key}' (Documents) and '{self.answer_key}', "
                f"got {type(output).__name__}"
                + (f" with keys {sorted(output)}" if isinstance(output, Mapping) else "")
            )
        chunks = chunks_from_documents(output[self.context_key])
        self._chain_answers[sample.question] = Generation(text=answer_text(output, self.answer_key))
        return chunks


def answer_text(output: Any, answer_key: str = "answer") -> str:
    """The answer in a chain's output: a string, a message's content, or a dict's `answer_key`."""
    if isinstance(output, Mapping):
        output = output.get(answer_key, "")
    text = getattr(output, "content", output)
    return text if isinstance(text, str) else str(text)


# What a Chunk is made of, read from a Document without building one: (id, text, metadata with scalar values;
# the Chunk validates them).
DocumentParts = tuple[str | None, str, dict[str, Any]]


def document_parts(document: Any) -> DocumentParts:
    """A LangChain Document's (or a plain string's) id, text and scalar metadata: cheap plain values, for a caller
    that must not pay for validating and hashing (the live handler, in the app's thread)."""
    if isinstance(document, str):
        return None, document, {}
    metadata = {k: v for k, v in (document.metadata or {}).items() if isinstance(v, str | int | float | bool)}
    return document.id, document.page_content, metadata


def chunks_from_documents(documents: Sequence[Any]) -> list[Chunk]:
    """LangChain Documents (or plain strings) as ranked Chunks."""
    return chunks_from_parts([document_parts(document) for document in documents])


def chunks_from_parts(parts: Sequence[DocumentParts]) -> list[Chunk]:
    """Ranked Chunks from `document_parts`. Without an id, the content names the chunk: the same text is the same
    chunk in every request."""
    chunks = []
    for rank, (document_id, text, metadata) in enumerate(parts, start=1):
        score = metadata.get("score")
        chunks.append(Chunk(
            id=str(document_id or metadata.get("id") or f"doc-{content_id(text)}"), text=text,
            title=metadata.get("title"), source=metadata.get("source"),
            score=float(score) if isinstance(score, int | float) else None, rank=rank, metadata=metadata,
        ))
    return chunks


def _document_from_chunk(chunk: Chunk) -> Document:
    metadata = {**chunk.metadata, **{k: v for k, v in (("title", chunk.title), ("source", chunk.source)) if v}}
    return Document(id=chunk.id, page_content=chunk.text, metadata=metadata)
