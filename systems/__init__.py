"""The system under test: the RAGSystem protocol and its adapters.

- `protocol`: what ragcourt asks of a system (`RAGSystem`, `Generation`, `Generator`, `ConditionUnavailable`)
  and how chunks are shown to a generator (`context_ids`, `render_chunks`).
- `reference`: the built-in reference system (`ReferenceRAG`) and its generators (`LLMGenerator`,
  `ExtractiveGenerator`); `bm25`: its BM25 retrieval over the collection's chunks (`BM25Index`).
- `precomputed`: contexts and answers given in the dataset (`Precomputed`).
- `langchain_system`: a LangChain app evaluated as it is (`LangChainSystem`).
- `confidence_probe`: CUE-R's optional confidence for a system that reports none (`ConfidenceProbe`).

The names below are loaded on first use (lazy_loader, from the stub `__init__.pyi` beside this file, which is
also what type checkers read): reading a run back (`Precomputed` in analysis) must not import the LLM clients
and chromadb that the reference system and the probe need.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
