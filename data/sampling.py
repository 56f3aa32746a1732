"""Seeded samples of labeled episodes that keep every source's share: bench limits, dev selection."""

from __future__ import annotations

import random
from collections.abc import Sequence

from edgewise.domain.errors import UsageError
from edgewise.domain.gold import LabeledEpisode


def stratified_sample(episodes: Sequence[LabeledEpisode], limit: int, seed: int) -> list[LabeledEpisode]:
    """`limit` episodes drawn without replacement so that each source keeps its share, in input order.

    Each source gets `limit * size / total` episodes, rounded down, and the remaining slots go to the
    sources with the largest remainders (ties: the larger source, then its name). Inside a source the
    episodes are a `random.Random(f"{seed}:{source}")` sample, so a source's pick does not change when
    another source is added. The result keeps the input order, so a given (file, limit, seed) always
    runs the same episodes in the same order.
    """
    if limit < 0:
        raise UsageError(f"limit must be >= 0, got {limit}")
    if limit >= len(episodes):
        return list(episodes)
    by_source: dict[str, list[int]] = {}
    for index, episode in enumerate(episodes):
        by_source.setdefault(episode.source, []).append(index)
    total = len(episodes)
    quotas = {name: limit * len(idx) // total for name, idx in by_source.items()}
    remainders = sorted(
        by_source, key=lambda name: (-(limit * len(by_source[name]) % total), -len(by_source[name]), name)
    )
    for name in remainders[: limit - sum(quotas.values())]:
        quotas[name] += 1
    chosen: list[int] = []
    for name, indices in by_source.items():
        chosen.extend(random.Random(f"{seed}:{name}").sample(indices, quotas[name]))
    return [episodes[index] for index in sorted(chosen)]
