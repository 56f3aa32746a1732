"""The `edgewise` command: one entry point, one subcommand per job, each a thin layer over the API."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import Final

import edgewise._offline  # noqa: F401

SUBCOMMANDS: Final = ("extract", "optimize", "bench", "data", "serve", "local_model")

EPILOG: Final = """examples:
  edgewise extract --input episodes.jsonl --output edges.jsonl          # offline, local model
  edgewise extract --model openai/gpt-4o-mini < episodes.jsonl
  edgewise bench --models local --programs seed,default --split smoke
  edgewise optimize --model local --optimizer bootstrap --train smoke --dev smoke --out runs/prog
  edgewise data stats
  edgewise serve --program runs/prog
  edgewise local-model list
Run `edgewise <command> --help` for every flag of a command."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="edgewise",
        description="Knowledge-graph edge extraction as a compiled, measured DSPy program.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS:
        try:
            module = importlib.import_module(f"edgewise.cli.{name}")
        except ModuleNotFoundError as error:
            if error.name != f"edgewise.cli.{name}":
                raise
            continue
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("edgewise: interrupted", file=sys.stderr)
        return 130
    except (ValueError, RuntimeError, OSError) as error:
        print(f"edgewise: error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
