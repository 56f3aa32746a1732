"""The whole build: every converter, the splits, and the JSONL files, reproducible byte for byte.

Each source is converted with its own fixed seed, the episodes are split by document, and each split
is written sorted by id with one compact JSON object per line, so that rebuilding from the same raw
files gives the same bytes. The hand-written conversations (`data/converters/handwritten/`) follow, in the
split each file declares, so that adding them changes no line before them.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Final

from edgewise.data.converters.common import DataBuildError
from edgewise.data.converters.dialogre import build_dialogre_episodes
from edgewise.data.converters.redocred import build_redocred_episodes
from edgewise.data.converters.splits import append_declared, smoke_subset, split_episodes
from edgewise.data.converters.temporal import build_tempreason_episodes, build_timeqa_episodes
from edgewise.data.loader import SPLITS, check_episode
from edgewise.domain.gold import LabeledEpisode

#: Episodes drawn from each public source. With about 90 conversational episodes the total is
#: about 550, which the splits divide 150 / 100 / 300.
SOURCE_COUNTS: Final[dict[str, int]] = {"redocred": 180, "dialogre": 110, "tempreason": 85, "timeqa": 90}
CONVERSATIONAL_MODULE: Final[str] = "edgewise.data.converters.conversational"

_BUILDERS: Final[dict[str, Callable[[Path, int], list[LabeledEpisode]]]] = {
    "redocred": build_redocred_episodes,
    "dialogre": build_dialogre_episodes,
    "tempreason": build_tempreason_episodes,
    "timeqa": build_timeqa_episodes,
}


def default_raw_dir() -> Path:
    """`../shared/data/raw` beside the source checkout (the raw files are not shipped)."""
    return Path(__file__).resolve().parents[2].parent / "shared" / "data" / "raw"


def default_out_dir() -> Path:
    """The package's own `episodes/` folder, which the loader reads."""
    return Path(__file__).resolve().parents[1] / "episodes"


def _conversational_module(log: Callable[[str], None]) -> ModuleType | None:
    try:
        return importlib.import_module(CONVERSATIONAL_MODULE)
    except ModuleNotFoundError as error:
        if error.name != CONVERSATIONAL_MODULE:
            raise
        log(f"skipping source 'conversational': {CONVERSATIONAL_MODULE} is not present")
        return None


def conversational_episodes(log: Callable[[str], None] = print) -> list[LabeledEpisode]:
    """The hand-written conversational episodes, or none (with a message) if that module is absent."""
    module = _conversational_module(log)
    if module is None:
        return []
    episodes = [LabeledEpisode.model_validate(item) for item in module.build_conversational_episodes()]
    for episode in episodes:
        if episode.source != "conversational":
            raise ValueError(f"conversational episode {episode.id} has source {episode.source!r}")
    return episodes


def handwritten_episodes(
    folder: Path | None = None, log: Callable[[str], None] = print
) -> dict[str, list[LabeledEpisode]]:
    """The episodes of the hand-written files (default: the module's `handwritten/`), by declared split."""
    module = _conversational_module(lambda _message: None)
    if module is None:
        return {}
    by_split: dict[str, list[LabeledEpisode]] = {}
    for item in module.build_handwritten_episodes(folder or module.HANDWRITTEN_DIR):
        by_split.setdefault(item.split, []).append(LabeledEpisode.model_validate(item.episode))
    for split, members in sorted(by_split.items()):
        log(
            f"hand-written ({split}): {len(members)} episodes, {sum(len(e.edges) for e in members)} gold edges"
        )
    return by_split


def build_all(
    raw_dir: Path, log: Callable[[str], None] = print, handwritten_dir: Path | None = None
) -> dict[str, list[LabeledEpisode]]:
    """Convert every source, split the result into train, dev, test and smoke, and append the
    hand-written episodes (of `handwritten_dir`, default the shipped folder) to their declared splits."""
    if not raw_dir.is_dir():
        raise FileNotFoundError(f"raw data folder not found: {raw_dir} (pass --raw DIR)")
    episodes: list[LabeledEpisode] = []
    for source, build in _BUILDERS.items():
        built = build(raw_dir, SOURCE_COUNTS[source])
        log(f"{source}: {len(built)} episodes, {sum(len(e.edges) for e in built)} gold edges")
        episodes.extend(built)
    conversational = conversational_episodes(log)
    if conversational:
        log(
            f"conversational: {len(conversational)} episodes, {sum(len(e.edges) for e in conversational)} gold edges"
        )
    episodes.extend(conversational)
    declared = handwritten_episodes(handwritten_dir, log)
    every = episodes + [episode for members in declared.values() for episode in members]
    ids = [episode.id for episode in every]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise DataBuildError(f"duplicate episode ids: {duplicates[:5]}")
    problems = [f"{e.id}: {field}: {reason}" for e in every for field, reason in check_episode(e)]
    if problems:
        raise DataBuildError("built episodes break the file rules:\n" + "\n".join(problems[:20]))
    splits = split_episodes(episodes)
    splits["smoke"] = smoke_subset(splits["dev"])
    return append_declared(splits, declared)


def episode_line(episode: LabeledEpisode) -> str:
    """One JSONL line: camelCase keys, nulls and an empty `injections` left out, compact, UTF-8 as is.

    Only the injection set labels injections, so the split files keep the shape they had before the field.
    """
    data = episode.model_dump(mode="json", by_alias=True, exclude_none=True)
    if not data.get("injections"):
        data.pop("injections", None)
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def write_splits(splits: dict[str, list[LabeledEpisode]], out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name in SPLITS:
        path = out_dir / f"{name}.jsonl"
        text = "".join(episode_line(episode) + "\n" for episode in splits[name])
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def main(raw_dir: Path | None = None, out_dir: Path | None = None) -> int:
    raw = raw_dir or default_raw_dir()
    out = out_dir or default_out_dir()
    try:
        splits = build_all(raw, log=lambda message: print(message, file=sys.stderr))
    except FileNotFoundError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for path in write_splits(splits, out):
        count = sum(1 for _ in path.open(encoding="utf-8"))
        print(f"wrote {path} ({count} episodes)", file=sys.stderr)
    return 0
