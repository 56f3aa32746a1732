"""What the replay scripts share: a post-processing step applied to bench folders' edges with no model
call, reported as a row per model x program and a table of each change the step made.

A replay script gives the report's words and one function, `replay_run`, which applies its step to a
run's episodes; this module parses the bench-folder arguments, reads the folders, scores every run
again as benched (`bench_folders.rescored`: a replay must start from the bench's own counts) and
writes the report, so that every replay reads its folders and lays out its report the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from bench_folders import add_folder_arguments, command_line, folders_of, rescored, write_report
from harness import script_parser

from edgewise.domain.gold import LabeledEpisode
from edgewise.domain.types import Edge
from edgewise.eval.episode_log import EpisodePrediction
from edgewise.eval.records import EpisodeScore


class Replayed(NamedTuple):
    """One episode of a benched run: the labeled episode, the bench's prediction, and its edges with
    their score as benched (checked against the bench's counts)."""

    episode: LabeledEpisode
    prediction: EpisodePrediction
    edges: list[Edge]
    score: EpisodeScore


RunReplay = Callable[[str, list[Replayed]], tuple[str, list[str]]]
"""A program's name and its run's episodes -> the run's cells after model and program (joined by " | "
already), and one changes-table row per change the step made."""


def replay_main(
    doc: str,
    script: str,
    argv: list[str] | None,
    *,
    title: str,
    intro: Callable[[list[LabeledEpisode]], str],
    table: list[str],
    changes: str,
    changes_table: list[str],
    replay_run: RunReplay,
) -> int:
    """Run a replay script: `doc` is its `--help`, `script` its path (for the report's command line).

    The report: `# title`, the command, the runs left out, `intro` of the kept episodes, then `table`
    (its header and rule lines) with a row per complete run, `| model | program | ` and what
    `replay_run` gives; last the caption `changes` and `changes_table` (header and rule) with the rows
    of every run's changes. It goes to stdout, and to `--out` when given."""
    parser = script_parser(doc)
    add_folder_arguments(parser)
    args = parser.parse_args(argv)
    folders = folders_of(args)
    lines = [
        f"# {title}",
        "",
        f"Command: `{command_line(script, argv)}`",
        "",
        intro(folders.episodes),
        "",
        *table,
    ]
    for key, skipped in sorted(folders.incomplete.items()):
        lines.insert(4, f"- left out: {key[0]} {key[1]} lacks {skipped} of the episodes")
    listed: list[str] = []
    for (model, program), predictions in sorted(folders.runs.items()):
        replayed = [
            Replayed(episode, predictions[episode.id], *rescored(episode, predictions[episode.id]))
            for episode in folders.episodes
        ]
        cells, rows = replay_run(program, replayed)
        lines.append(f"| {model} | {program} | {cells} |")
        listed += rows
    lines += ["", changes, "", *changes_table, *listed]
    write_report("\n".join(lines) + "\n", args.out)
    return 0
