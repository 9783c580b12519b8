"""A small LangChain RAG app, and ragcourt evaluating it as it is: in batch and on live traffic.

The app: a Chroma vector store (langchain-chroma) over a few help-desk documents about a kettle, a
VectorStoreRetriever (k=3), and ChatOpenAI pointed at any OpenAI-compatible endpoint (vLLM, llama.cpp
server, Ollama, OpenAI). `build_app` is the whole app in one chain: question -> {question, context, answer}.

    python examples/langchain_app/app.py ask "How long is the warranty?" --base-url http://127.0.0.1:8000/v1
    python examples/langchain_app/app.py batch --base-url ...          # ragcourt.evaluate(retriever=, chain=)
    python examples/langchain_app/app.py live --requests 50 --base-url ...   # the live handler attached

Embeddings are ragcourt's offline MiniLM (no download); `--base-url` defaults to $APP_OPENAI_BASE_URL,
`--model` to $APP_MODEL; the key is $OPENAI_API_KEY (a placeholder for local servers).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import chromadb
from chromadb.config import Settings
from langchain_chroma import Chroma
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import Runnable, RunnableLambda, RunnableParallel, RunnablePassthrough
from langchain_core.vectorstores import VectorStoreRetriever
from langchain_openai import ChatOpenAI

HERE = Path(__file__).resolve().parent
QUESTIONS = HERE / "questions.jsonl"
COLLECTION = "kettle-help"

DOCUMENTS = (
    ("warranty", "The Acme kettle has a two-year warranty. The warranty covers defects in materials and workmanship."),
    ("returns", "Unused kettles can be returned within 30 days. Keep the receipt for every return."),
    ("descaling", "Descale the kettle every month with white vinegar. Rinse it twice after descaling."),
    ("capacity", "The Acme kettle holds 1.7 litres of water. The minimum fill line is at 0.5 litres."),
    ("power", "The kettle draws 2200 watts. It boils a full kettle in about four minutes."),
    ("safety", "The kettle switches off by itself when it boils dry. Never immerse the base in water."),
    ("cleaning", "Wipe the outside with a damp cloth. Do not use abrasive cleaners on the steel body."),
    ("filter", "The limescale filter in the spout can be removed for cleaning. Replace it once a year."),
)

PROMPT = ChatPromptTemplate.from_messages([
    ("system", "Answer the customer's question from the context only, in one sentence."),
    ("human", "Context:\n{context}\n\nQuestion: {question}"),
])


class RagcourtEmbeddings(Embeddings):
    """ragcourt's offline embedding functions (MiniLM, or feature hashing for tests) as LangChain Embeddings."""

    def __init__(self, function: Any | None = None) -> None:
        if function is None:
            from ragcourt.stores.embeddings import MiniLMEmbedding

            function = MiniLMEmbedding()
        self.function = function

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in vector] for vector in self.function(list(texts))]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def build_vectorstore(embedding: Embeddings, persist_directory: Path | None = None) -> Chroma:
    """The help-desk documents in Chroma (cosine space; embedded client, telemetry off)."""
    settings = Settings(anonymized_telemetry=False)
    client = (chromadb.PersistentClient(path=str(persist_directory), settings=settings)
              if persist_directory else chromadb.EphemeralClient(settings=settings))
    store = Chroma(collection_name=COLLECTION, embedding_function=embedding, client=client,
                   collection_metadata={"hnsw:space": "cosine"})
    if not store.get(ids=[doc_id for doc_id, _ in DOCUMENTS])["ids"]:
        store.add_documents([Document(id=doc_id, page_content=text, metadata={"title": doc_id})
                             for doc_id, text in DOCUMENTS], ids=[doc_id for doc_id, _ in DOCUMENTS])
    return store


def build_retriever(store: Chroma, k: int = 3) -> VectorStoreRetriever:
    return store.as_retriever(search_kwargs={"k": k})


def build_llm(base_url: str, model: str, api_key: str | None = None, timeout_s: float = 30.0) -> ChatOpenAI:
    return ChatOpenAI(base_url=base_url, model=model, api_key=api_key or "not-needed", timeout=timeout_s,
                      max_retries=1, temperature=0.0)


def format_documents(documents: Sequence[Document]) -> str:
    return "\n\n".join(document.page_content for document in documents)


def build_answer_chain(llm: Runnable) -> Runnable:
    """{question, context (text)} -> answer text: the generation half of the app."""
    return PROMPT | llm | StrOutputParser()


def build_app(retriever: Runnable, llm: Runnable) -> Runnable:
    """The whole app: question -> {"question", "context" (Documents), "answer"}."""
    answer = RunnableLambda(lambda x: {"question": x["question"], "context": format_documents(x["context"])})
    return RunnableParallel(context=retriever, question=RunnablePassthrough()).assign(
        answer=answer | build_answer_chain(llm)
    )


# --------------------------------------------------------------------------- the command line


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("ask", "batch", "live"))
    parser.add_argument("question", nargs="?", default="How long is the warranty of the kettle?")
    parser.add_argument("--base-url", default=os.environ.get("APP_OPENAI_BASE_URL"))
    parser.add_argument("--model", default=os.environ.get("APP_MODEL", "qwen2.5-7b-instruct"))
    parser.add_argument("--judge", action="append", help="ragcourt judge spec; default: lexical (no LLM)")
    parser.add_argument("--home", type=Path, default=Path("ragcourt-runs"))
    parser.add_argument("--requests", type=int, default=20, help="live: how many requests to serve")
    parser.add_argument("--sample-rate", type=float, default=0.5)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    import ragcourt
    from ragcourt.live.evaluator import LiveEvaluator, live_config
    from ragcourt.schema.config import EvalConfig, JudgeSpec

    args = _arguments(argv)
    if not args.base_url:
        print("give --base-url (or APP_OPENAI_BASE_URL): an OpenAI-compatible endpoint", file=sys.stderr)
        return 2
    store = build_vectorstore(RagcourtEmbeddings())
    retriever = build_retriever(store)
    llm = build_llm(args.base_url, args.model, os.environ.get("OPENAI_API_KEY"))
    judges = tuple(JudgeSpec(model=j) for j in args.judge or ["lexical"])
    if args.command == "ask":
        print(build_app(retriever, llm).invoke(args.question)["answer"])
    elif args.command == "batch":
        config = EvalConfig(judges=judges, top_k=3)
        result = ragcourt.evaluate(retriever=retriever, chain=build_answer_chain(llm), dataset=QUESTIONS,
                                   config=config, home=args.home, run_id="kettle-batch")
        print(result.to_frame().to_string())
    else:
        app = build_app(retriever, llm)
        questions = [line for line in QUESTIONS.read_text().splitlines() if line.strip()]
        live = LiveEvaluator(home=args.home, run_id="kettle-live", sample_rate=args.sample_rate,
                             config=live_config(judges=judges), app_name="kettle-app",
                             on_result=lambda d: print("evaluated:", d.question, [
                                 (m.name, m.value) for m in d.metrics]))
        with live:
            for number in range(args.requests):
                question = json.loads(questions[number % len(questions)])["question"]
                print("app:", app.invoke(question, config={"callbacks": [live.handler]})["answer"])
            live.flush(timeout=60)
        print(live.counts().describe())
    return 0


if __name__ == "__main__":
    sys.exit(main())
