"""`edgewise data`: describe, check and rebuild labeled-episode files."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HELP = "describe, validate or rebuild labeled episode files"
DESCRIPTION = """Labeled episodes are JSONL, one LabeledEpisode per line (see data/README.md).

  stats     counts per split and source (episodes, edges, types, entities, dates) and a 95% interval hint
  validate  check a file line by line; every problem is printed with its line and field
  build     rebuild train/dev/test/smoke from the raw public data"""
EXAMPLES = """examples:
  edgewise data stats
  edgewise data stats --split test
  edgewise data stats --data my_episodes.jsonl
  edgewise data validate my_episodes.jsonl
  edgewise data build --raw ../shared/data/raw"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "data",
        help=HELP,
        description=DESCRIPTION,
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(dest="data_command", metavar="ACTION")

    def show_help(_args: argparse.Namespace) -> int:
        parser.print_help()
        return 2

    parser.set_defaults(func=show_help)

    stats = actions.add_parser("stats", help="counts per split and source, and a 95%% interval hint")
    stats.add_argument(
        "--split",
        action="append",
        choices=["train", "dev", "test", "smoke"],
        help="a shipped split; repeat for several (default: all four). Example: --split test",
    )
    stats.add_argument(
        "--data",
        action="append",
        type=Path,
        help="a JSONL file of your own; repeatable. Example: --data mine.jsonl",
    )
    stats.set_defaults(func=run_stats)

    validate = actions.add_parser("validate", help="check a labeled-episode file line by line")
    validate.add_argument("file", type=Path, help="the JSONL file to check")
    validate.set_defaults(func=run_validate)

    build = actions.add_parser("build", help="rebuild the shipped splits from the raw public data")
    build.add_argument(
        "--raw",
        type=Path,
        default=None,
        help="raw data folder (default: ../shared/data/raw). Example: --raw /data/raw",
    )
    build.add_argument(
        "--out",
        type=Path,
        default=None,
        help="output folder (default: the package's episodes/). Example: --out /tmp/episodes",
    )
    build.set_defaults(func=run_build)


def run_stats(args: argparse.Namespace) -> int:
    from edgewise.data.loader import load_episodes
    from edgewise.data.stats import compute_stats, format_table, interval_hint

    sets = {}
    for name in args.split or ([] if args.data else ["train", "dev", "test", "smoke"]):
        sets[name] = load_episodes(name)
    for path in args.data or []:
        sets[str(path)] = load_episodes(path)
    print(format_table(compute_stats(sets)))
    print()
    for name, episodes in sets.items():
        if name not in {"train", "dev", "smoke"}:  # the sets scores are reported on
            print(interval_hint(name, episodes))
    return 0


def run_validate(args: argparse.Namespace) -> int:
    from edgewise.data.loader import validate_file

    if not args.file.is_file():
        print(f"edgewise: error: no such file: {args.file}", file=sys.stderr)
        return 2
    errors = validate_file(args.file)
    for error in errors:
        print(error)
    if errors:
        print(f"{args.file}: {len(errors)} problem(s)", file=sys.stderr)
        return 1
    count = sum(1 for line in args.file.open(encoding="utf-8") if line.strip())
    print(f"{args.file}: {count} episodes, all valid")
    return 0


def run_build(args: argparse.Namespace) -> int:
    from edgewise.data.build.pipeline import main

    return main(args.raw, args.out)
