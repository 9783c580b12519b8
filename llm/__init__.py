"""Model specs and structured calls: `spec` (spec strings), `factory` (clients from specs), `client`
(structured output with one repair, unscored on failure), `sent_schema` (the output schema as a request
carries it), `cache` (content-addressed), `retry` (transient faults only), `limits` (per-endpoint concurrency
and rate), `usage` (tokens and cost per judge), `reply` and `openai_wire` (what came back), `local` (GGUF
models in process through llama.cpp).

The names below are loaded on first use (lazy_loader, from the stub `__init__.pyi` beside this file, which
is also what type checkers read): importing one module of the package never imports the others.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
