"""The DSPy program: `EdgeExtractor`, the seed baseline `SeedPromptExtractor`, post-processing."""
