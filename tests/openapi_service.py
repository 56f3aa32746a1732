"""`edgewise serve`'s app on 127.0.0.1, backed by the mock model with injected faults, for the OpenAPI fuzz test.

python tests/openapi_service.py   # prints the base URL, serves until killed
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from mock_openai import FaultRate, MockOpenAIServer

from edgewise.cli import serve as serve_cli
from edgewise.modules.extractor import EdgeExtractor
from edgewise.runtime.lm import LMConfig, build_lm
from edgewise.service.app import create_app

# Faults the mock model injects into a fifth of its replies; each must come back as a documented answer.
FAULTS = FaultRate(p=0.2, kinds=("500", "429", "drop", "invalid_json", "schema_break"), seed=0)
MAX_ENTITIES = 20
MAX_BATCH = 4


@contextmanager
def served_app() -> Iterator[str]:
    """The service's base URL while it runs; the mock model and the server stop afterwards."""
    import uvicorn

    with MockOpenAIServer(content='{"edges": []}', faults=FAULTS) as model:
        config = LMConfig(
            model="openai/mock",
            api_base=model.api_base,
            api_key="sk-test",
            cache=False,
            num_retries=1,
            retry_base_s=0.01,
            retry_cap_s=0.05,
            timeout_s=5,
        )
        app = create_app(
            EdgeExtractor(), build_lm(config), max_entities=MAX_ENTITIES, max_batch=MAX_BATCH, workers=2
        )
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        server = uvicorn.Server(
            uvicorn.Config(app, **serve_cli.server_settings("127.0.0.1", port, "critical"))
        )
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        deadline = time.monotonic() + 20
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.should_exit = True
            thread.join(timeout=20)


if __name__ == "__main__":
    with served_app() as url:
        print(url, flush=True)
        while True:
            time.sleep(3600)
