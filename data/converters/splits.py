"""Train / dev / test splits stratified by source, with no document in two splits, and the smoke set.

A document is what an episode was cut from: a Wikipedia page (shared by Re-DocRED, TempReason and
TimeQA, so the same page never lands in two splits even across sources), a DialogRE dialogue, or a
conversation of the conversational set. Its key is read from the episode id, so anyone can check
the property on the shipped files.

Episodes whose file declares their split (the hand-written conversations) are not drawn: they are
appended to that split after the drawn ones (`append_declared`).
"""

from __future__ import annotations

import random
import re
from collections import defaultdict
from typing import Final

from edgewise.data.converters.common import DataBuildError
from edgewise.domain.gold import LabeledEpisode

SPLIT_TARGETS: Final[dict[str, int]] = {"train": 150, "dev": 100, "test": 300}
SMOKE_SIZE: Final[int] = 24
#: Smoke episodes are short: at most this many words in the episode and in its previous episodes.
SMOKE_MAX_WORDS: Final[int] = 80
SEED: Final[int] = 20240104
#: Sources whose documents are Wikipedia pages; their group key is the page, shared across them.
WIKIPEDIA_SOURCES: Final[frozenset[str]] = frozenset({"redocred", "tempreason", "timeqa"})
_CONVERSATION_ID: Final[re.Pattern[str]] = re.compile(r"^(conv-\d+)")


def group_key(episode_id: str, source: str) -> str:
    """The document an episode comes from, read from its id.

    Ids are "<source>-<document>-<part>" (the document part has no dash); Wikipedia pages share one
    namespace across sources. Conversational ids start "conv-<number>-" and that prefix is the key.
    """
    if source == "conversational":
        match = _CONVERSATION_ID.match(episode_id)
        return f"conversational:{match[1] if match else episode_id}"
    parts = episode_id.split("-")
    document = parts[1] if len(parts) >= 3 else episode_id
    if source in WIKIPEDIA_SOURCES:
        return f"wikipedia:{document.lower()}"
    return f"{source}:{document}"


def split_episodes(
    episodes: list[LabeledEpisode], targets: dict[str, int] | None = None, seed: int = SEED
) -> dict[str, list[LabeledEpisode]]:
    """Assign whole documents to splits so that each source is divided in the target proportions.

    Per source (in name order), documents are shuffled with a fixed seed and each goes to the split
    furthest below its share of that source; a document already placed by an earlier source (the
    same Wikipedia page) follows its first placement.
    """
    targets = targets or SPLIT_TARGETS
    total_target = sum(targets.values())
    by_source: dict[str, dict[str, list[LabeledEpisode]]] = defaultdict(lambda: defaultdict(list))
    for episode in episodes:
        by_source[episode.source][group_key(episode.id, episode.source)].append(episode)
    placed: dict[str, str] = {}
    splits: dict[str, list[LabeledEpisode]] = {name: [] for name in targets}
    for source in sorted(by_source):
        groups = by_source[source]
        size = sum(len(members) for members in groups.values())
        quota = {name: size * target / total_target for name, target in targets.items()}
        filled = dict.fromkeys(targets, 0)
        keys = sorted(groups)
        random.Random(f"{seed}:{source}").shuffle(keys)
        for key in keys:
            name = placed.get(key) or max(
                targets, key=lambda n: (quota[n] - filled[n], -list(targets).index(n))
            )
            placed[key] = name
            filled[name] += len(groups[key])
            splits[name].extend(groups[key])
    return {name: sorted(members, key=lambda e: e.id) for name, members in splits.items()}


def _words(episode: LabeledEpisode) -> tuple[int, int]:
    return len(episode.episode_content.split()), sum(len(p.split()) for p in episode.previous_episodes)


def smoke_subset(dev: list[LabeledEpisode], size: int = SMOKE_SIZE, seed: int = SEED) -> list[LabeledEpisode]:
    """`size` short dev episodes with at least one gold edge, spread evenly over the sources.

    Drawn from dev (not a fourth split): smoke runs check that a pipeline works end to end on CPU in
    minutes, and their scores are never reported as results.
    """
    sources = sorted({episode.source for episode in dev})
    rng = random.Random(seed)
    chosen: list[LabeledEpisode] = []
    for position, source in enumerate(sources):
        share = size // len(sources) + (1 if position < size % len(sources) else 0)
        short = [
            e for e in dev if e.source == source and e.edges and all(w <= SMOKE_MAX_WORDS for w in _words(e))
        ]
        short.sort(key=lambda e: e.id)
        chosen.extend(rng.sample(short, min(share, len(short))))
    if len(chosen) < size:  # a source with too few short episodes: fill from the others
        rest = sorted(
            (e for e in dev if e not in chosen and e.edges and max(_words(e)) <= SMOKE_MAX_WORDS),
            key=lambda e: e.id,
        )
        chosen.extend(rng.sample(rest, min(size - len(chosen), len(rest))))
    return sorted(chosen, key=lambda e: e.id)


def append_declared(
    splits: dict[str, list[LabeledEpisode]], declared: dict[str, list[LabeledEpisode]]
) -> dict[str, list[LabeledEpisode]]:
    """`splits` with each split's `declared` episodes after its drawn ones, sorted by id.

    Drawing fills per-source quotas, so drawing these with the rest would move existing documents
    between splits. Appended, they leave every drawn line where it was, and the smoke set (drawn from
    the dev episodes before) the same.
    """
    unknown = sorted(set(declared) - set(splits))
    if unknown:
        raise DataBuildError(f"declared split(s) {unknown} are not among {sorted(splits)}")
    return {
        name: members + sorted(declared.get(name, []), key=lambda e: e.id) for name, members in splits.items()
    }
