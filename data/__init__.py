"""Datasets: the loaders of samples, corpora, HotpotQA and RAGChecker files, whose errors name the
file, line and field (`loaders`), and datasets as they come: Parquet, saved Hugging Face datasets, RAGAS and
LangSmith exports, with column maps (`formats`); people's 0-10 ratings of a run's answers (`human_scores`);
question sets generated from a corpus (`question_sets`); and the public, human-labelled sample data shipped for
the demo and tests (see data/README.md).

Reading is one streaming reader (`reading`: a SampleStream is checked whole in one pass and read again each time
it is iterated) over the rules of a sample row (`rows`), with a module per format around it (`read_jsonl`,
`read_json`, `read_csv`, `read_parquet`, `read_hf`; `read_models` for files of pydantic records), on the text
helpers of `text_input` and the errors of `errors`.

The names below are loaded on first use (lazy_loader, from the stub `__init__.pyi` beside this file, which
is also what type checkers read): importing one module of the package never imports the others.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
