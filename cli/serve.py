"""`edgewise serve`: the HTTP service (FastAPI on uvicorn) around a compiled program.

The process opens the model once (`--model` / `--api-base`, or the managed local model), loads the
program once, and answers `POST /v1/extract`, `POST /v1/extract/batch` and `GET /healthz` until it is
stopped. Set `EDGEWISE_API_TOKEN` to require `Authorization: Bearer <token>` on the /v1/ routes.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import sys
from typing import Any, Final

from edgewise.cli import add_command
from edgewise.cli.flags import at_least, between
from edgewise.cli.options import add_lm_arguments, add_program_argument, config_from_args
from edgewise.programs.names import choose_program, resolve_program
from edgewise.runtime.lm import bound_memory_cache, open_lm
from edgewise.service.app import (
    DEFAULT_MAX_BATCH,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_ENTITIES,
    DEFAULT_WORKERS,
    SERVE_EXTRA_HINT,
    create_app,
)
from edgewise.service.bad_request import json_bad_request_protocol

TOKEN_ENV: Final = "EDGEWISE_API_TOKEN"
DEFAULT_HOST: Final = "127.0.0.1"
DEFAULT_PORT: Final = 8765
# The service's limits, each a whole number >= 1: (flag, default, what it bounds, an example value).
_LIMITS: Final = (
    ("--workers", DEFAULT_WORKERS, "extractions run at once; more requests wait", 16),
    ("--max-body-bytes", DEFAULT_MAX_BODY_BYTES, "largest request body; larger ones get 413", 4000000),
    ("--max-entities", DEFAULT_MAX_ENTITIES, "most entities in one episode; more get 422", 500),
    ("--max-batch", DEFAULT_MAX_BATCH, "most episodes in one /v1/extract/batch call", 16),
)

HELP = "serve extraction over HTTP: POST /v1/extract with the seed's context object"
DESCRIPTION = f"""Serve a program over HTTP (FastAPI + uvicorn).

POST /v1/extract takes the seed's context object (episodeContent, previousEpisodes, nodes or
entities, referenceTime, edgeTypes, customPrompt) and returns {{"edges": [...]}} in the seed's
shape plus "warnings" and "usage". POST /v1/extract/batch takes {{"episodes": [...]}} and answers
each item on its own. GET /healthz says the service is up and which program and model it runs; the
OpenAPI docs are at /docs. Without --program the shipped program compiled for --model runs
(qwen2.5-coder-1.5b-program-v2 on the local 1.5B; default elsewhere), named on stderr at start.
Set {TOKEN_ENV} to require "Authorization: Bearer <token>" on the /v1/ routes."""

EXAMPLES = f"""examples:
  edgewise serve --program runs/prog --model openai/gpt-4o-mini
  {TOKEN_ENV}=s3cret edgewise serve --api-base http://127.0.0.1:8000/v1 --model qwen2.5-7b --workers 8
  curl -s localhost:{DEFAULT_PORT}/v1/extract -H 'content-type: application/json' -d '{{"episodeContent":
    "Ana joined Acme in 2021.", "nodes": ["Ana", "Acme"], "referenceTime": "2025-01-01T00:00:00Z"}}'"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(subparsers, "serve", HELP, DESCRIPTION, EXAMPLES)
    add_program_argument(parser)
    parser.add_argument(
        "--host",
        default=DEFAULT_HOST,
        help=f"address to listen on (default {DEFAULT_HOST}, this machine only; 0.0.0.0 exposes it to the "
        f"network, so set {TOKEN_ENV}). Example: --host 0.0.0.0",
    )
    parser.add_argument(
        "--port",
        type=between(0, 65535),
        default=DEFAULT_PORT,
        help=f"TCP port (default {DEFAULT_PORT}). Example: --port 9000",
    )
    for flag, default, meaning, example in _LIMITS:
        parser.add_argument(
            flag,
            type=at_least(1),
            default=default,
            help=f"{meaning} (default {default}). Example: {flag} {example}",
        )
    parser.add_argument(
        "--log-level",
        choices=["critical", "error", "warning", "info", "debug"],
        default="info",
        help="server log level (default info). Example: --log-level warning",
    )
    add_lm_arguments(parser)
    parser.set_defaults(func=run)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def run(args: argparse.Namespace) -> int:
    """Open the model, load the program, serve until stopped (Ctrl-C); returns the exit status."""
    try:
        import uvicorn
    except ModuleNotFoundError as error:
        raise RuntimeError(f"{SERVE_EXTRA_HINT} ({error})") from None

    token = os.environ.get(TOKEN_ENV) or None
    if token is None and not _is_loopback(args.host):
        print(
            f"edgewise serve: warning: listening on {args.host} without {TOKEN_ENV}; anyone who can reach "
            "this port can spend your model budget",
            file=sys.stderr,
        )
    config = config_from_args(args)
    if config.cache:
        bound_memory_cache()
    choice = choose_program(args.program, config.model)
    program = resolve_program(choice.name)
    with open_lm(config) as lm:
        print(f"edgewise serve: {choice.notice()}", file=sys.stderr)
        app = create_app(
            program,
            lm,
            program_name=choice.name,
            api_token=token,
            max_body_bytes=args.max_body_bytes,
            max_entities=args.max_entities,
            workers=args.workers,
            max_batch=args.max_batch,
        )
        uvicorn.run(app, **server_settings(args.host, args.port, args.log_level))
    return 0


def server_settings(host: str, port: int, log_level: str) -> dict[str, Any]:
    """uvicorn's settings for the service: no Server header, a 10 s graceful stop, and a JSON 400 for a
    request the HTTP parser rejects before the app sees it (see `json_bad_request_protocol`)."""
    return {
        "host": host,
        "port": port,
        "log_level": log_level,
        "server_header": False,
        "timeout_graceful_shutdown": 10,
        "http": json_bad_request_protocol(),
    }
