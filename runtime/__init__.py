"""Running a program on a model: the LM factory and its retries and rate limits, redaction, the
episode runner, and batch I/O (JSONL)."""
