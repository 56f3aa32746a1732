"""A stand-in for ``llama-server`` with the same command line, for testing the server lifecycle offline.

It serves /health (503 while "loading", then 200), /v1/models (the --alias) and a fixed
/v1/chat/completions reply. Its behaviour is chosen through environment variables:

- ``FAKE_LLAMA_MODE``: ``ok`` (default), ``crash`` (print an error and exit 1 while loading),
  ``sigill`` (die of an illegal instruction while loading, as a build for other CPUs does),
  ``ignore-term`` (survive SIGTERM, so only SIGKILL stops it), ``foreign`` (list another alias).
- ``FAKE_LLAMA_LOAD_S``: seconds /health answers 503 before 200 (default 0.3).
- ``FAKE_LLAMA_ARGV_FILE``: where to write its pid and the command line it received, as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def parse_args(argv: list[str]) -> argparse.Namespace:
    """Accept llama-server's flags that edgewise passes; reject unknown ones like the real binary."""
    parser = argparse.ArgumentParser(prog="llama-server")
    parser.add_argument("-m", "--model", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("-c", "--ctx-size", type=int, default=0)
    parser.add_argument("-t", "--threads", type=int, default=-1)
    parser.add_argument("-np", "--parallel", type=int, default=-1)
    parser.add_argument("--no-webui", action="store_true")
    parser.add_argument("--alias", default="")
    parser.add_argument("--metrics", action="store_true")
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    mode = os.environ.get("FAKE_LLAMA_MODE", "ok")
    load_s = float(os.environ.get("FAKE_LLAMA_LOAD_S", "0.3"))
    argv_file = os.environ.get("FAKE_LLAMA_ARGV_FILE")
    if argv_file:
        with open(argv_file, "w") as handle:
            json.dump({"pid": os.getpid(), "argv": argv}, handle)
    print(f"fake llama-server: loading model '{args.model}'", file=sys.stderr, flush=True)
    if mode == "crash":
        time.sleep(0.1)
        print("llama_model_load: error loading model: tensor data is not within file bounds", file=sys.stderr)
        print("main: exiting due to model loading error", file=sys.stderr, flush=True)
        return 1
    if mode == "sigill":
        print("AMX is not ready to be used!", file=sys.stderr, flush=True)
        os.kill(os.getpid(), signal.SIGILL)
    if mode == "ignore-term":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    alias = "someone-else" if mode == "foreign" else args.alias
    ready_at = time.monotonic() + load_s

    class Handler(BaseHTTPRequestHandler):
        def _send(self, status: int, body: dict[str, object]) -> None:
            data = json.dumps(body).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if time.monotonic() < ready_at:
                self._send(503, {"error": {"code": 503, "message": "Loading model"}})
            elif self.path == "/health":
                self._send(200, {"status": "ok"})
            elif self.path == "/v1/models":
                self._send(200, {"object": "list", "data": [{"id": alias, "object": "model"}]})
            else:
                self._send(404, {"error": {"code": 404, "message": "File Not Found"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            self.rfile.read(length)
            message = {"role": "assistant", "content": '{"edges": []}'}
            self._send(
                200,
                {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": alias,
                    "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14},
                },
            )

        def log_message(self, format: str, *values: object) -> None:
            print(format % values, file=sys.stderr, flush=True)

    server = ThreadingHTTPServer((args.host, args.port), Handler)
    print(f"main: server is listening on http://{args.host}:{args.port}", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
