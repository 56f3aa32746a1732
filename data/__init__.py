"""Labeled episodes: the shipped splits, the loader that validates them, and their statistics.

`load_episodes("test")` reads a shipped split (train, dev, test, smoke) or any JSONL path and
returns validated `LabeledEpisode`s; `to_examples` turns them into `dspy.Example`s whose input is
the episode and whose label is the whole labeled line.
"""

from edgewise.data.loader import (
    SPLITS,
    DatasetError,
    check_episode,
    load_episodes,
    split_path,
    to_examples,
    validate_file,
)
from edgewise.data.stats import compute_stats, format_table, interval_hint

__all__ = [
    "SPLITS",
    "DatasetError",
    "check_episode",
    "compute_stats",
    "format_table",
    "interval_hint",
    "load_episodes",
    "split_path",
    "to_examples",
    "validate_file",
]
