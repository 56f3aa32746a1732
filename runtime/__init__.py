"""Running a program on a model: the LM factory and its retries, the local models and llama.cpp
runtimes, the episode runner, and batch I/O (JSONL, the Ray Data stage)."""
