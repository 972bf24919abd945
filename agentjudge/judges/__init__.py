"""Built-in judges: LLM / RAG, files, commands, coverage, comparison, retrieval metrics."""
