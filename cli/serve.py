"""`edgewise serve`: the HTTP service (FastAPI on uvicorn) around a compiled program.

The process opens the model once (`--model` / `--api-base`, or the managed local model), loads the
program once, and answers `POST /v1/extract`, `POST /v1/extract/batch` and `GET /healthz` until it is
stopped. Set `EDGEWISE_API_TOKEN` to require `Authorization: Bearer <token>` on the /v1/ routes.
Its limits hold it against slow, abandoned and too many clients: docs/security.md.
"""

from __future__ import annotations

import argparse
import ipaddress
import math
import os
import sys
from typing import Any, Final

from edgewise.cli import add_command
from edgewise.cli.flags import above, at_least, between, flag_values
from edgewise.cli.options import add_lm_arguments, add_program_argument, config_from_args
from edgewise.domain.errors import MissingExtraError
from edgewise.programs.lora_adapter import program_adapter
from edgewise.programs.names import choose_program, resolve_program
from edgewise.runtime.lm import open_lm
from edgewise.runtime.reply_cache import use_reply_cache
from edgewise.service.app import (
    DEFAULT_MAX_BATCH,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_ENTITIES,
    DEFAULT_MAX_QUEUE,
    DEFAULT_READ_TIMEOUT_S,
    DEFAULT_REQUEST_TIMEOUT_S,
    DEFAULT_WORKERS,
    MIN_API_TOKEN_CHARS,
    SERVE_EXTRA_HINT,
    check_api_token,
    create_app,
)
from edgewise.service.connections import (
    DEFAULT_LIMITS,
    DEFAULT_MAX_CONNECTIONS,
    MAX_HEADER_BYTES,
    ConnectionLimits,
    connection_limits,
    guarded_protocol,
    open_file_limit,
)
from edgewise.service.lifecycle import DEFAULT_SHUTDOWN_TIMEOUT_S, Lifecycle
from edgewise.service.runner import thread_limit

TOKEN_ENV: Final = "EDGEWISE_API_TOKEN"
DEFAULT_HOST: Final = "127.0.0.1"
DEFAULT_PORT: Final = 8765
KEEP_ALIVE_S: Final = 5
"""How long an idle kept-alive connection stays open (uvicorn's `timeout_keep_alive`)."""
STOP_MARGIN_S: Final = 2
"""uvicorn's own graceful timeout is this much past the service's, so the service answers first."""
# The service's limits, each a whole number: (flag, least value, default, what it bounds, an example).
_LIMITS: Final = (
    ("--workers", 1, DEFAULT_WORKERS, "extractions run at once; more requests wait in the queue", 16),
    (
        "--max-queue",
        0,
        DEFAULT_MAX_QUEUE,
        (
            "episodes that may wait for a worker (a batch's episodes count one each); more get 503 overloaded "
            "with Retry-After"
        ),
        256,
    ),
    ("--max-body-bytes", 1, DEFAULT_MAX_BODY_BYTES, "largest request body; larger ones get 413", 4000000),
    ("--max-entities", 1, DEFAULT_MAX_ENTITIES, "most entities in one episode; more get 422", 500),
    ("--max-batch", 1, DEFAULT_MAX_BATCH, "most episodes in one /v1/extract/batch call", 16),
    (
        "--max-connections",
        1,
        DEFAULT_MAX_CONNECTIONS,
        (
            "open client connections; at the cap the one that has waited longest without sending a request "
            "is closed (lowered to fit the open-file limit, ulimit -n)"
        ),
        4096,
    ),
)
_APP_LIMITS: Final = tuple(flag for flag, *_ in _LIMITS if flag != "--max-connections")
"""The limits `create_app` takes, each as the parameter of its flag's name (the connection cap is
`connection_limits`')."""
# The service's time limits in seconds: (flag, default, what it bounds, an example).
_TIMEOUTS: Final = (
    (
        "--request-timeout",
        DEFAULT_REQUEST_TIMEOUT_S,
        (
            "seconds from a request's headers to its answer, queue included; past it 503 request_timeout and "
            "its work is cancelled. Each model request's --timeout is at most this"
        ),
        30,
    ),
    (
        "--read-timeout",
        DEFAULT_READ_TIMEOUT_S,
        (
            "seconds a connection has to send a whole request head (else it is closed), and a request to send "
            "its body after its head (else 408)"
        ),
        5,
    ),
    (
        "--shutdown-timeout",
        DEFAULT_SHUTDOWN_TIMEOUT_S,
        (
            "on SIGTERM or Ctrl-C, seconds running requests have to finish before they get 503 shutting_down; "
            "queued ones get it at once"
        ),
        30,
    ),
)

HELP = "serve extraction over HTTP: POST /v1/extract with the seed's context object"
DESCRIPTION = f"""Serve a program over HTTP (FastAPI + uvicorn).

POST /v1/extract takes the seed's context object (episodeContent, previousEpisodes, nodes or
entities, referenceTime, edgeTypes, customPrompt) and returns {{"edges": [...]}} in the seed's
shape plus "warnings" and "usage". POST /v1/extract/batch takes {{"episodes": [...]}} and answers
each item on its own. GET /healthz says the service is up and which program and model it runs; the
OpenAPI docs are at /docs. Without --program the shipped program compiled for --model runs
(qwen2.5-coder-1.5b-program-v2 on the local 1.5B; default elsewhere), named on stderr at start.
Set {TOKEN_ENV} (at least {MIN_API_TOKEN_CHARS} characters) to require "Authorization: Bearer <token>"
on the /v1/ routes; an empty or shorter one is refused at start. A request has --request-timeout
seconds for its answer; the limits below hold the service against slow, abandoned and too many
clients (docs/security.md)."""

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
    for flag, least, default, meaning, example in _LIMITS:
        parser.add_argument(
            flag,
            type=at_least(least),
            default=default,
            help=f"{meaning} (default {default}). Example: {flag} {example}",
        )
    for flag, seconds, meaning, example in _TIMEOUTS:
        parser.add_argument(
            flag,
            type=above(0),
            default=seconds,
            help=f"{meaning} (default {seconds:g}). Example: {flag} {example}",
        )
    parser.add_argument(
        "--log-level",
        choices=["critical", "error", "warning", "info", "debug"],
        default="info",
        help="server log level (default info). Example: --log-level warning",
    )
    add_lm_arguments(parser)
    parser.add_argument(
        "--shared-cache",
        action="store_true",
        help="answer a request from the replies earlier requests got (edgewise's reply cache, shared by "
        "every client). Off by default: a cached reply costs no model call, so its usage would tell a "
        "client that another one sent the same episode; use it only when the clients trust each other. "
        "Example: --shared-cache",
    )
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
        raise MissingExtraError(f"{SERVE_EXTRA_HINT} ({error})") from None

    token = os.environ.get(TOKEN_ENV)
    check_api_token(token, name=TOKEN_ENV)
    limits = connection_limits(args.max_connections, thread_limit(args.workers), open_file_limit())
    if limits.max_connections < args.max_connections:
        print(
            f"edgewise serve: at most {limits.max_connections} connections (--max-connections "
            f"{args.max_connections} does not fit the open-file limit, ulimit -n {open_file_limit()})",
            file=sys.stderr,
        )
    if token is None and not _is_loopback(args.host):
        print(
            f"edgewise serve: warning: listening on {args.host} without {TOKEN_ENV}; anyone who can reach "
            "this port can spend your model budget",
            file=sys.stderr,
        )
    config = config_from_args(args)
    config = config.model_copy(
        update={
            "cache": config.cache and args.shared_cache,
            # no model request outlives the request it serves (the bundled local model keeps its own)
            "timeout_s": min(config.timeout_s, args.request_timeout),
        }
    )
    if config.cache:
        use_reply_cache()
    choice = choose_program(args.program, config.model)
    program = resolve_program(choice.name)
    config = config.model_copy(update={"lora_adapter": program_adapter(program, config.model)})
    with open_lm(config) as lm:
        print(f"edgewise serve: {choice.notice()}", file=sys.stderr)
        lifecycle = Lifecycle(args.shutdown_timeout)
        app = create_app(
            program,
            lm,
            program_name=choice.name,
            api_token=token,
            request_timeout_s=args.request_timeout,
            read_timeout_s=args.read_timeout,
            lifecycle=lifecycle,
            **flag_values(args, *_APP_LIMITS),
        )
        settings = server_settings(
            args.host,
            args.port,
            args.log_level,
            read_timeout_s=args.read_timeout,
            limits=limits,
            lifecycle=lifecycle,
        )
        uvicorn.run(app, **settings)
    return 0


def server_settings(
    host: str,
    port: int,
    log_level: str,
    *,
    read_timeout_s: float = DEFAULT_READ_TIMEOUT_S,
    limits: ConnectionLimits = DEFAULT_LIMITS,
    lifecycle: Lifecycle | None = None,
) -> dict[str, Any]:
    """uvicorn's settings for the service: no Server header, at most `MAX_HEADER_BYTES` of an
    unfinished request head, kept-alive connections closed after `KEEP_ALIVE_S` idle, the listen
    backlog of `limits`, and the service's HTTP protocol (`guarded_protocol`: the header deadline, the
    connection cap, a JSON 400 for a request the HTTP parser rejects, the drain on stop). uvicorn's
    graceful timeout runs past the service's own (`lifecycle`, the body's read time), so every
    request has been answered before uvicorn would cancel one."""
    stop_s = max(lifecycle.shutdown_timeout_s if lifecycle else DEFAULT_SHUTDOWN_TIMEOUT_S, read_timeout_s)
    return {
        "host": host,
        "port": port,
        "log_level": log_level,
        "server_header": False,
        "timeout_keep_alive": KEEP_ALIVE_S,
        "timeout_graceful_shutdown": math.ceil(stop_s) + STOP_MARGIN_S,
        "h11_max_incomplete_event_size": MAX_HEADER_BYTES,
        "backlog": limits.backlog,
        "http": guarded_protocol(
            read_timeout_s=read_timeout_s, max_connections=limits.max_connections, lifecycle=lifecycle
        ),
    }
