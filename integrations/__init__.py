"""Drop-in adapters for memory systems that run their own extraction prompts (Graphiti)."""
