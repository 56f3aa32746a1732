"""The train and dev splits of a run, with the provenance its manifest records.

A manifest says which episodes a program was compiled and selected on: the split's file name (or how
many episodes were given in memory) and the sha256 of its bytes, so a run can be reproduced and a
program checked against the data it claims.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from edgewise.data.loader import load_episodes, resolve
from edgewise.data.sampling import stratified_sample
from edgewise.domain.gold import LabeledEpisode
from edgewise.optimize.budget import selection_dev_size
from edgewise.optimize.settings import OptimizeSettings

Dataset = Sequence[LabeledEpisode] | str | Path
"""A split name (`train`, `dev`, ...), a JSONL path, or the episodes themselves."""


class Split(NamedTuple):
    """Episodes of one split with where they came from: a file name and the sha256 of its bytes."""

    name: str
    episodes: list[LabeledEpisode]
    sha256: str


def load_split(data: Dataset, role: str) -> Split:
    """Episodes with their provenance; in-memory episodes are hashed as the JSONL they would be."""
    if isinstance(data, str | Path):
        path = resolve(data)
        return Split(path.name, load_episodes(path), hashlib.sha256(path.read_bytes()).hexdigest())
    episodes = list(data)
    text = "".join(episode.model_dump_json(by_alias=True) + "\n" for episode in episodes)
    return Split(
        f"<{len(episodes)} {role} episodes in memory>", episodes, hashlib.sha256(text.encode()).hexdigest()
    )


class DevSelection(NamedTuple):
    """The dev episodes a run scores and selects on, and how the manifest describes them."""

    split: Split
    """The sample (the whole split when nothing is left out); its sha256 is the whole split's."""
    description: str
    total: int
    """Episodes in the whole dev split."""

    @property
    def sampled(self) -> bool:
        return len(self.split.episodes) < self.total

    def note(self, settings: OptimizeSettings) -> str | None:
        """The progress line that says dev is sampled, and what set the sample's size (None: not sampled)."""
        if not self.sampled:
            return None
        why = "--dev-size" if settings.dev_size is not None else f"what --budget {settings.budget} affords"
        return (
            f"selecting on {len(self.split.episodes)} of {self.total} dev episodes, stratified by source "
            f"(seed {settings.seed}; {why})"
        )


def selection_dev(dev: Split, settings: OptimizeSettings) -> DevSelection:
    """All of dev, or the source-stratified sample `--dev-size` or `--budget` sets (seeded by `--seed`)."""
    total = len(dev.episodes)
    used = selection_dev_size(settings, total)
    if used == total:
        return DevSelection(dev, split_description(dev), total)
    sample = dev._replace(episodes=stratified_sample(dev.episodes, used, seed=settings.seed))
    description = f"{dev.name} ({used} of {total} episodes, stratified by source, seed {settings.seed})"
    return DevSelection(sample, description, total)


def split_description(split: Split) -> str:
    """How the manifest names a split used whole: `train.jsonl (120 episodes)`."""
    return f"{split.name} ({len(split.episodes)} episodes)"
