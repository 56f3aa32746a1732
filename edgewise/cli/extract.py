"""`edgewise extract`: JSONL episodes in, one JSONL result (or error) line per input line out."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from contextlib import ExitStack
from pathlib import Path

from tqdm import tqdm

from edgewise.jsonl import (
    InputLine,
    error_record,
    read_episode_lines,
    result_record,
    resume_point,
    write_record,
)
from edgewise.modules.batch import iter_concurrently
from edgewise.modules.lm import add_lm_arguments, config_from_args, lm_context, open_lm, redact
from edgewise.programs import resolve_program
from edgewise.signatures.types import ExtractionResult

HELP = "extract edges from JSONL episodes"
DESCRIPTION = """Extract temporal graph edges from episodes, one JSON object per line.

Each input line is an episode: {"id": ..., "episodeContent": ..., "previousEpisodes": [...],
"entities": [{"name": ...}], "referenceTime": "2025-01-01T00:00:00Z", "edgeTypes": [...]}.
Each output line carries the input's "id" and "line" and either the seed's {"edges": [...]} plus
"warnings" and "usage", or an "error" object (line, field, message). Output keeps input order."""

EXAMPLES = """examples:
  edgewise extract --input episodes.jsonl --output edges.jsonl
  echo '{"episodeContent": "Ana joined Acme in 2021.", "entities": [{"name": "Ana"}, {"name": "Acme"}],
        "referenceTime": "2025-01-01T00:00:00Z"}' | edgewise extract --model openai/gpt-4o-mini
  edgewise extract --program runs/prog --input big.jsonl --output out.jsonl --workers 8 --resume"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "extract", help=HELP, description=DESCRIPTION, epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--input", "-i", type=Path,
        help="episodes JSONL file (default: stdin). Example: --input episodes.jsonl",
    )
    parser.add_argument(
        "--output", "-o", type=Path,
        help="results JSONL file (default: stdout). Example: --output edges.jsonl",
    )
    parser.add_argument(
        "--program", default="default",
        help="compiled program directory or shipped name, or default / seed / seed-structured "
        "(default: default). Example: --program runs/prog",
    )
    parser.add_argument(
        "--baseline", choices=["seed", "seed-structured"],
        help="run the verbatim seed prompt instead of --program. Example: --baseline seed",
    )
    parser.add_argument(
        "--reflexion-rounds", type=int,
        help="rounds of missed-fact review (default: the program's own, 0 for default). Example: --reflexion-rounds 1",
    )
    parser.add_argument(
        "--workers", type=int, default=1,
        help="episodes extracted concurrently (default 1). Example: --workers 8",
    )
    parser.add_argument(
        "--resume", action="store_true",
        help="continue a stopped run: keep the complete lines of --output and extract only the rest. "
        "Example: --output out.jsonl --resume",
    )
    parser.add_argument(
        "--no-progress", action="store_true", help="no progress bar on stderr. Example: --no-progress"
    )
    add_lm_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.resume and args.output is None:
        raise ValueError("--resume needs --output (the file to continue)")
    if args.workers < 1:
        raise ValueError("--workers must be >= 1")
    config = config_from_args(args)
    program = resolve_program(args.baseline or args.program, reflexion_rounds=args.reflexion_rounds)
    outcomes: Counter[str] = Counter()
    with ExitStack() as stack:
        source = str(args.input) if args.input else "<stdin>"
        stream_in = stack.enter_context(open(args.input, "rb")) if args.input else sys.stdin.buffer
        done = resume_point(args.output) if args.resume else 0
        stream_out = (
            stack.enter_context(open(args.output, "a" if args.resume else "w", encoding="utf-8"))
            if args.output else sys.stdout
        )
        lm = stack.enter_context(open_lm(config))
        stack.enter_context(lm_context(lm))
        progress = stack.enter_context(
            tqdm(desc="episodes", unit="ep", file=sys.stderr, disable=args.no_progress, initial=done)
        )

        def extract(item: InputLine) -> ExtractionResult | None:
            return program(item.episode).result if item.episode is not None else None

        items = read_episode_lines(stream_in, source, skip=done)
        for item, outcome in iter_concurrently(extract, items, workers=args.workers):
            if item.error is not None:
                record = error_record(item, "input", item.error.record())
                outcomes["invalid input"] += 1
            elif isinstance(outcome, Exception):
                reason = type(outcome).__name__
                record = error_record(
                    item, "lm", {"line": item.line, "field": None, "message": redact(f"{reason}: {outcome}", config)}
                )
                outcomes[f"failed: {reason}"] += 1
            else:
                record = result_record(item, outcome)
                outcomes["done"] += 1
            write_record(stream_out, record)
            progress.update(1)
    summary = ", ".join(f"{name} {count}" for name, count in sorted(outcomes.items())) or "no input lines"
    print(f"edgewise extract: {summary}" + (f" (resumed after {done} lines)" if done else ""), file=sys.stderr)
    return 0
