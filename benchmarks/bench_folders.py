"""Bench folders read back for analysis with no model call: the labeled episodes and what each program predicted.

`edgewise bench --out` writes `episodes.jsonl` (the labeled episodes) and `predictions.jsonl` (one line
per model x program x episode: the post-processed edges, their verdicts and the warnings). A sample
benched in parts (test-150: the conversational and DialogRE folders and five chunks) is read as one:
the first folder that holds an episode wins, and `episodes_file` keeps the episodes of one JSONL file.
Only the model x program runs that hold every kept episode are returned; the others are named in
`incomplete`, so no figure is computed over part of a sample.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import NamedTuple

from edgewise.domain.gold import LabeledEpisode
from edgewise.domain.types import Edge
from edgewise.eval.episode_log import EpisodePrediction, read_episodes, read_predictions
from edgewise.eval.records import EpisodeScore
from edgewise.eval.scoring import score_episode

RunKey = tuple[str, str]
"""(model, program)."""


class FolderRuns(NamedTuple):
    """The kept episodes (in first-seen order) and each complete run's prediction per episode id."""

    episodes: list[LabeledEpisode]
    runs: dict[RunKey, dict[str, EpisodePrediction]]
    incomplete: dict[RunKey, int]
    """Runs left out, with how many of the kept episodes they lack."""


def read_folders(
    folders: list[Path], *, episodes_file: Path | None = None, programs: list[str] | None = None
) -> FolderRuns:
    """The folders' episodes and predictions merged (first folder wins), restricted to `episodes_file`'s ids."""
    episodes: dict[str, LabeledEpisode] = {}
    runs: dict[RunKey, dict[str, EpisodePrediction]] = {}
    for folder in folders:
        for episode in read_episodes(folder):
            episodes.setdefault(episode.id, episode)
        for prediction in read_predictions(folder):
            if programs is None or prediction.program in programs:
                runs.setdefault((prediction.model, prediction.program), {}).setdefault(
                    prediction.id, prediction
                )
    if episodes_file is not None:
        wanted = [
            json.loads(line)["id"]
            for line in episodes_file.read_text(encoding="utf-8").splitlines()
            if line.strip()
        ]
        missing = [episode_id for episode_id in wanted if episode_id not in episodes]
        if missing:
            raise SystemExit(
                f"{episodes_file}: {len(missing)} of its {len(wanted)} episodes are in none of the folders "
                f"(first: {missing[0]})"
            )
        episodes = {episode_id: episodes[episode_id] for episode_id in wanted}
    kept = list(episodes.values())
    complete: dict[RunKey, dict[str, EpisodePrediction]] = {}
    incomplete: dict[RunKey, int] = {}
    for key, by_id in runs.items():
        lacking = sum(1 for episode in kept if episode.id not in by_id)
        if lacking:
            incomplete[key] = lacking
        else:
            complete[key] = {episode.id: by_id[episode.id] for episode in kept}
    return FolderRuns(kept, complete, incomplete)


def add_folder_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments every script over bench folders takes: the folders, --episodes, --programs, --out."""
    parser.add_argument("results_dirs", type=Path, nargs="+", help="folders `edgewise bench --out` wrote")
    parser.add_argument("--episodes", type=Path, help="a JSONL file: only its episodes (all must be there)")
    parser.add_argument(
        "--programs", help="only these programs, comma-separated (default: every complete run)"
    )
    parser.add_argument("--out", type=Path, help="also write the report here")


def folders_of(args: argparse.Namespace) -> FolderRuns:
    """The folders `add_folder_arguments` parsed, read."""
    return read_folders(
        args.results_dirs,
        episodes_file=args.episodes,
        programs=args.programs.split(",") if args.programs else None,
    )


def write_report(text: str, out: Path | None) -> None:
    """The report on stdout, and in `out` when given."""
    print(text, end="")
    if out is not None:
        out.write_text(text, encoding="utf-8")


def plain_edges(prediction: EpisodePrediction) -> list[Edge]:
    """A prediction's edges without their verdicts, as the program returned them."""
    return [Edge.model_validate(edge.model_dump(include=set(Edge.model_fields))) for edge in prediction.edges]


def rescored(episode: LabeledEpisode, prediction: EpisodePrediction) -> tuple[list[Edge], EpisodeScore]:
    """The prediction's edges and their score again, which must give the bench's own edge counts (a
    replay that starts from edges the metric would now judge otherwise would measure the metric)."""
    edges = plain_edges(prediction)
    score = score_episode(episode, edges)
    if (score.tp, score.fp, score.fn) != (prediction.tp, prediction.fp, prediction.fn):
        raise SystemExit(
            f"{prediction.program} {episode.id}: scored again, the counts differ from the bench's"
        )
    return edges, score


def command_line(script: str, argv: list[str] | None) -> str:
    """The command that reproduces a report, as its results file states it: `script` (a path) run with
    `argv`, or the command line itself when `argv` is None."""
    words = sys.argv if argv is None else [f"benchmarks/{Path(script).name}", *argv]
    return "python " + " ".join(words)
