"""The `edgewise` command: one entry point, one subcommand per job, each a thin layer over the API.

Exit status: 0 done; 1 nothing ran, or the command stopped on an error (a usage error, a
configuration error such as a missing key, a file that cannot be read or written; one line on stderr
says which); 3 the command stopped on a bug in edgewise (the message says so, and `EDGEWISE_DEBUG=1`
prints its traceback); 130 interrupted (Ctrl-C, SIGTERM). Commands whose input lines can fail one by
one add 2: the batch ran to its end but some lines failed (`extract`: error lines in the output;
`data validate`: problems in the file). docs/batch-contract.md lists them.

An error is the user's to fix when it is an `EdgewiseError` (edgewise's own, worded for the user) or an
`OSError` (a file or socket the system refused); anything else is a bug, and is not printed as if
the input were wrong.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
import threading
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import FrameType
from typing import Final, NoReturn

import edgewise.runtime.offline  # noqa: F401
from edgewise.domain.errors import DEBUG_ENV, EdgewiseError, debug_enabled
from edgewise.runtime.redaction import redact

SUBCOMMANDS: Final = ("extract", "optimize", "bench", "report", "data", "serve", "local_model")

EXIT_OK: Final = 0
EXIT_ERROR: Final = 1
EXIT_SOME_FAILED: Final = 2
EXIT_BUG: Final = 3
EXIT_INTERRUPTED: Final = 130

EPILOG: Final = """examples:
  edgewise extract --input episodes.jsonl --output edges.jsonl          # offline, local model
  edgewise extract --model openai/gpt-4o-mini < episodes.jsonl
  edgewise bench --models local --programs seed,default --split smoke
  edgewise optimize --model local --optimizer bootstrap --train smoke --dev smoke --out runs/prog
  edgewise data stats
  edgewise serve --program runs/prog
  edgewise local-model list
Run `edgewise <command> --help` for every flag of a command."""


class CommandParser(argparse.ArgumentParser):
    """argparse whose usage errors exit with 1, "nothing ran", as every other error before a run does.

    argparse's own status for them is 2, which here means "the batch ran and some lines failed"; a
    script must be able to tell a mistyped flag from a partly failed batch. Subcommand parsers are
    made from the same class (argparse's `add_subparsers` uses the parent's class).
    """

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_ERROR, f"{self.prog}: error: {message}\n")


def add_command(
    subparsers: argparse._SubParsersAction, name: str, summary: str, description: str, examples: str
) -> argparse.ArgumentParser:
    """The parser of one subcommand: `summary` is its line in `edgewise --help`; its description and
    examples are printed as written, line breaks and indentation kept."""
    raw = argparse.RawDescriptionHelpFormatter
    return subparsers.add_parser(
        name, help=summary, description=description, epilog=examples, formatter_class=raw
    )


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(
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


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Let SIGTERM stop a command the way Ctrl-C does.

    Long runs go to the background (nohup, a scheduler, a CI timeout), where the stop signal is
    SIGTERM, not Ctrl-C; by default it kills the process on the spot, so a bench would lose its
    partial results and an optimize run its last word. As a KeyboardInterrupt it takes the same
    path as Ctrl-C: finished work is written, local model servers are stopped.
    """
    claimed = threading.current_thread() is threading.main_thread() and (
        signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    )
    previous = signal.signal(signal.SIGTERM, _interrupt) if claimed else None
    try:
        yield
    finally:
        if claimed:
            signal.signal(signal.SIGTERM, previous)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_ERROR
    try:
        with terminate_as_interrupt():
            return int(args.func(args) or EXIT_OK)
    except KeyboardInterrupt:
        print("edgewise: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (EdgewiseError, OSError) as error:
        print(f"edgewise: error: {error}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as error:  # noqa: BLE001 - a bug: said to be one, never passed off as the user's mistake
        report_bug(error)
        return EXIT_BUG


def report_bug(error: Exception) -> None:
    """Say on stderr that `error` is a bug in edgewise, with its type and message; the traceback too
    under `EDGEWISE_DEBUG=1`, else how to get it. Keys are masked: a traceback can quote any string."""
    if debug_enabled():
        trace = "".join(traceback.format_exception(error))
        print(redact(trace, max_chars=None), end="", file=sys.stderr)
    message = redact(f"{type(error).__name__}: {error}")
    hint = "its traceback is above" if debug_enabled() else f"{DEBUG_ENV}=1 prints its traceback"
    print(
        f"edgewise: internal error (a bug in edgewise, not in the input): {message}; {hint}", file=sys.stderr
    )


if __name__ == "__main__":
    raise SystemExit(main())
