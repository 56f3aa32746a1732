"""Per model x program of bench folders: the share of its edges each relationship type has, and the alias-aware edge-F1.

Reads each folder's `episodes.jsonl` and `predictions.jsonl` (no model call), merges the folders (the
first folder that scored an episode of a model x program wins, as `paired_from_results.py` does),
and prints one Markdown table: edges written, distinct types, alias-aware and plain micro edge-F1
(`edgewise.eval.open_vocabulary`), then the most written types with their share of the edges beside
the gold's share of the same type. "Over half" flags a type written for more than half of the edges
where the gold uses it less often, the failure of a small model given no vocabulary.

    python benchmarks/type_shares.py benchmarks/results/test-conversational-graphiti-1.5b/chunk-*
    python benchmarks/type_shares.py runs/open-vocabulary --top 5
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

from edgewise.domain.gold import LabeledEpisode
from edgewise.eval.episode_log import EpisodePrediction, read_episodes, read_predictions
from edgewise.eval.open_vocabulary import TypeShare, alias_aware_score, dominant_type, type_shares
from edgewise.eval.scoring import aggregate, score_episode

Key = tuple[str, str]


def merged(folders: list[Path]) -> tuple[dict[str, LabeledEpisode], dict[Key, dict[str, EpisodePrediction]]]:
    """The folders' episodes by id, and each model x program's predictions by episode id."""
    episodes: dict[str, LabeledEpisode] = {}
    runs: dict[Key, dict[str, EpisodePrediction]] = defaultdict(dict)
    for folder in folders:
        for episode in read_episodes(folder):
            episodes.setdefault(episode.id, episode)
        for line in read_predictions(folder):
            runs[(line.model, line.program)].setdefault(line.id, line)
    return episodes, runs


def _shares_text(shares: list[TypeShare], top: int) -> str:
    return ", ".join(f"{s.type} {s.share:.2f} (gold {s.gold_share:.2f})" for s in shares[:top]) or "-"


def table(folders: list[Path], top: int = 3) -> str:
    """The Markdown table of every model x program in `folders`."""
    episodes, runs = merged(folders)
    lines = [
        (
            "| model | program | episodes | edges written | types | alias-aware edge-F1 | edge-F1 | "
            f"most written types (share, gold share), top {top} | over half |"
        ),
        "|---|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for (model, program), by_id in runs.items():
        golds = [episodes[episode_id] for episode_id in by_id]
        predicted = [line.edges for line in by_id.values()]
        plain = aggregate(score_episode(gold, edges) for gold, edges in zip(golds, predicted, strict=True))
        aware = aggregate(
            alias_aware_score(gold, edges) for gold, edges in zip(golds, predicted, strict=True)
        )
        shares = type_shares(
            [edge for edges in predicted for edge in edges], [edge for gold in golds for edge in gold.edges]
        )
        over = dominant_type(shares)
        lines.append(
            f"| {model} | {program} | {len(golds)} | {sum(len(edges) for edges in predicted)} | {len(shares)} | "
            f"{aware.edge_f1:.3f} | {plain.edge_f1:.3f} | {_shares_text(shares, top)} | "
            f"{over.type if over else 'none'} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path, help="bench output folders")
    parser.add_argument("--top", type=int, default=3, help="most written types to list (default 3)")
    args = parser.parse_args(argv)
    sys.stdout.write(table(args.folders, top=args.top))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
