"""State embeddings (WL over the instance learning graph, FSF) and the cached embedded datasets."""
