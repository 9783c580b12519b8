"""Test doubles shared by the whole suite: a real OpenAI-compatible HTTP server on 127.0.0.1, a
scripted LangChain chat model, and the network guard. Importable as `fakes` because the root
tests/conftest.py puts tests/ on sys.path."""
