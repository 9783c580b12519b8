"""ragcourt: evaluate RAG systems and say where quality is lost."""
