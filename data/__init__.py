"""Public, human-labelled sample data shipped for the demo and tests (see data/README.md)."""
