"""`edgewise data`: describe, check and rebuild labeled-episode files."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from edgewise.cli import EXIT_ERROR, EXIT_OK, EXIT_SOME_FAILED, add_command
from edgewise.data.loader import SPLITS
from edgewise.domain.errors import UsageError

if TYPE_CHECKING:
    from edgewise.domain.gold import LabeledEpisode

HELP = "describe, validate or rebuild labeled episode files"
DESCRIPTION = """Labeled episodes are JSONL, one LabeledEpisode per line (see data/README.md).

  stats     counts per split and source (episodes, edges, types, entities, dates), a 95% interval hint,
            and how the hand-written conversational episodes spread over genres, languages, gold
            edges per episode and the cases they test
  validate  check files (or every *.jsonl in a folder) line by line; every problem is printed with
            its file, line and field, and the check goes on to the end (exit 2 when any is found);
            a signature type that no entity of a file has (a misspelling?) is named on stderr, once
            per file, without changing the exit status
  build     rebuild train/dev/test/smoke from the raw public data
  export    write the splits (or your files) as a Hugging Face dataset with declared column types,
            or as one Parquet file per split"""
EXAMPLES = """examples:
  edgewise data stats
  edgewise data stats --split test
  edgewise data stats --data my_episodes.jsonl
  edgewise data validate my_episodes.jsonl
  edgewise data validate data/episodes
  edgewise data build --raw ../shared/data/raw
  edgewise data export runs/edgewise-episodes
  edgewise data export runs/episodes-parquet --format parquet --split test"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(subparsers, "data", HELP, DESCRIPTION, EXAMPLES)
    actions = parser.add_subparsers(dest="data_command", metavar="ACTION")

    def show_help(_args: argparse.Namespace) -> int:
        parser.print_help(sys.stderr)
        return EXIT_ERROR

    parser.set_defaults(func=show_help)

    stats = actions.add_parser("stats", help="counts per split and source, and a 95%% interval hint")
    add_episode_sets(stats, data_help="a JSONL file of your own; repeatable. Example: --data mine.jsonl")
    stats.set_defaults(func=run_stats)

    validate = actions.add_parser("validate", help="check labeled-episode files line by line")
    validate.add_argument(
        "paths",
        nargs="+",
        type=Path,
        metavar="PATH",
        help="JSONL files, or folders whose *.jsonl files are all checked. Example: data/episodes",
    )
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

    export = actions.add_parser("export", help="write the splits as a Hugging Face dataset or Parquet files")
    export.add_argument(
        "out", type=Path, metavar="OUT", help="folder to write. Example: runs/edgewise-episodes"
    )
    add_episode_sets(
        export,
        data_help="a labeled JSONL file of your own, exported under its file name; repeatable. "
        "Example: --data mine.jsonl",
    )
    export.add_argument(
        "--format",
        choices=["hf", "parquet"],
        default="hf",
        help="hf: a DatasetDict folder for datasets.load_from_disk; parquet: OUT/<split>.parquet "
        "(default hf). Example: --format parquet",
    )
    export.set_defaults(func=run_export)


def add_episode_sets(parser: argparse.ArgumentParser, *, data_help: str) -> None:
    """`--split` and `--data`, the episode sets `stats` and `export` read (see `chosen_splits`)."""
    parser.add_argument(
        "--split",
        action="append",
        choices=SPLITS,
        help="a shipped split; repeat for several (default: all four). Example: --split test",
    )
    parser.add_argument("--data", action="append", type=Path, help=data_help)


def chosen_splits(args: argparse.Namespace) -> list[str]:
    """The shipped splits named by `--split`; all of them when neither `--split` nor `--data` is given."""
    return args.split or ([] if args.data else list(SPLITS))


def run_stats(args: argparse.Namespace) -> int:
    from edgewise.data.loader import load_episodes
    from edgewise.data.stats import compute_stats, format_table, interval_hint

    sets = {}
    for name in chosen_splits(args):
        sets[name] = load_episodes(name)
    for path in args.data or []:
        sets[str(path)] = load_episodes(path)
    print(format_table(compute_stats(sets)))
    print()
    hints = [
        interval_hint(name, episodes)
        for name, episodes in sets.items()
        if name not in {"train", "dev", "smoke"}
    ]
    for hint in hints:  # for the sets scores are reported on
        print(hint)
    if {"train", "dev"} & set(chosen_splits(args)):
        section = handwritten_section({name: sets[name] for name in ("train", "dev") if name in sets})
        if section and hints:
            print()
        for line in section:
            print(line)
    return 0


def handwritten_section(sets: dict[str, list[LabeledEpisode]]) -> list[str]:
    """The lines on the hand-written episodes: genre, language, gold edges per episode and test tags."""
    from edgewise.data.converters.conversational import GENRES, HANDWRITTEN_DIR, check_handwritten
    from edgewise.data.stats import format_spread, handwritten_spread

    handwritten, problems = check_handwritten()
    if not handwritten:
        return []
    rows = handwritten_spread(handwritten, sets)
    if rows:
        lines = [
            f"Hand-written conversational episodes ({HANDWRITTEN_DIR.name}/; genre is the first kind tag):",
            "",
            format_spread(rows, GENRES),
        ]
    else:
        waiting = (
            f"{len(handwritten)} hand-written episodes in {HANDWRITTEN_DIR.name}/, none in these splits yet"
        )
        lines = [f"{waiting}: `edgewise data build` appends them."]
    if problems:
        lines.append(
            f"The hand-written files have {len(problems)} problem(s): "
            "python -m edgewise.data.converters.conversational --check-handwritten"
        )
    return lines


def files_to_validate(paths: list[Path]) -> list[Path]:
    """Each file given, and each *.jsonl file of each folder given (sorted); a `UsageError` for anything else."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(entry for entry in path.glob("*.jsonl") if entry.is_file())
            if not found:
                raise UsageError(
                    f"{path} is a folder without *.jsonl files; give labeled-episode files or a folder of them"
                )
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise UsageError(f"no such file or folder: {path}")
    return files


def run_validate(args: argparse.Namespace) -> int:
    """Check every file to its end; exit 0 when all are valid, 2 when any line has a problem."""
    from edgewise.data.loader import check_file

    problems = 0
    for path in files_to_validate(args.paths):
        checked = check_file(path)
        for error in checked.errors:
            print(error)
        for line in checked.types.report(str(path)):  # a hint, not a problem: the status stays
            print(line, file=sys.stderr)
        if checked.errors:
            print(f"{path}: {len(checked.errors)} problem(s)", file=sys.stderr)
        else:
            print(f"{path}: {checked.episodes} episodes, all valid")
        problems += len(checked.errors)
    return EXIT_SOME_FAILED if problems else EXIT_OK


def run_build(args: argparse.Namespace) -> int:
    from edgewise.data.converters.pipeline import main

    return main(args.raw, args.out)


def run_export(args: argparse.Namespace) -> int:
    """Write the chosen splits with `edgewise.data.hf`'s declared features; print what was written."""
    from datasets import DatasetDict

    from edgewise.data.hf import to_dataset
    from edgewise.data.loader import load_episodes

    sets = {name: load_episodes(name) for name in chosen_splits(args)}
    for path in args.data or []:
        sets[path.stem] = load_episodes(path)
    dataset = DatasetDict({name: to_dataset(episodes) for name, episodes in sets.items()})
    if args.format == "hf":
        dataset.save_to_disk(str(args.out))
    else:
        args.out.mkdir(parents=True, exist_ok=True)
        for name, split in dataset.items():
            split.to_parquet(str(args.out / f"{name}.parquet"))
    counts = ", ".join(f"{name} {len(split)}" for name, split in dataset.items())
    print(f"wrote {args.out} ({args.format}): {counts}")
    return EXIT_OK
