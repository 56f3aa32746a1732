"""The programs (EdgeExtractor, SeedPromptExtractor), post-processing, batching and LM construction."""
