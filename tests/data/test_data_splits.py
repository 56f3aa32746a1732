"""Splits: no document in two splits (on synthetic sets and on the shipped files), stratified, reproducible."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgewise.data.converters.pipeline import default_raw_dir, write_splits
from edgewise.data.converters.splits import group_key, smoke_subset, split_episodes
from edgewise.data.loader import SPLITS, split_path
from edgewise.domain.gold import LabeledEpisode
from edgewise.domain.types import Entity


def episode(source: str, document: str, part: int) -> LabeledEpisode:
    episode_id = f"conv-{document}-{part}" if source == "conversational" else f"{source}-{document}-s{part}"
    return LabeledEpisode(
        id=episode_id,
        source=source,
        license="test",
        episode_content="A met B.",
        entities=[Entity(name="A"), Entity(name="B")],
        reference_time=datetime(2024, 1, 1, tzinfo=UTC),
    )


def test_group_key_reads_the_document_from_the_id() -> None:
    assert group_key("redocred-Anna_Berg-s3", "redocred") == "wikipedia:anna_berg"
    assert group_key("timeqa-Anna_Berg-s0", "timeqa") == "wikipedia:anna_berg"  # same page, same key
    assert group_key("dialogre-dev0007-0", "dialogre") == "dialogre:dev0007"
    assert group_key("conv-007-job-change-2", "conversational") == "conversational:conv-007"


documents = st.lists(
    st.tuples(
        st.sampled_from(["redocred", "timeqa", "dialogre", "conversational"]),
        st.sampled_from([f"{n:03d}" for n in range(25)]),
        st.integers(min_value=0, max_value=4),
    ),
    min_size=1,
    max_size=120,
    unique=True,
)


@settings(max_examples=40, deadline=None)
@given(documents)
def test_no_document_lands_in_two_splits(rows: list[tuple[str, str, int]]) -> None:
    episodes = [episode(source, document, part) for source, document, part in rows]
    splits = split_episodes(episodes)
    seen: dict[str, str] = {}
    for name, members in splits.items():
        for member in members:
            key = group_key(member.id, member.source)
            assert seen.setdefault(key, name) == name, f"{key} is in {seen[key]} and {name}"
    assert sorted(e.id for members in splits.values() for e in members) == sorted(e.id for e in episodes)


def test_each_source_is_divided_in_the_target_proportions() -> None:
    episodes = [episode(source, f"{n:03d}", 0) for source in ("dialogre", "redocred") for n in range(110)]
    splits = split_episodes(episodes)
    for source in ("dialogre", "redocred"):
        counts = {name: sum(1 for e in members if e.source == source) for name, members in splits.items()}
        assert counts == {"train": 30, "dev": 20, "test": 60}


def test_smoke_subset_is_short_dev_episodes_from_every_source() -> None:
    dev = [episode(source, f"{n:03d}", 0) for source in ("a", "b", "c", "d", "e") for n in range(8)]
    dev = [e.model_copy(update={"edges": []}) for e in dev[:2]] + [
        e.model_copy(update={"edges": [_edge()]}) for e in dev[2:]
    ]
    smoke = smoke_subset(dev)
    assert len(smoke) == 24
    assert Counter(e.source for e in smoke) == {"a": 5, "b": 5, "c": 5, "d": 5, "e": 4}
    assert all(e.edges for e in smoke) and {e.id for e in smoke} <= {e.id for e in dev}


def _edge():
    from edgewise.domain.gold import GoldEdge

    return GoldEdge(relationship_type="MET", source_entity_name="A", target_entity_name="B", fact="A met B.")


def shipped_ids(name: str) -> list[tuple[str, str]]:
    import json

    with split_path(name).open(encoding="utf-8") as handle:
        return [(row["id"], row["source"]) for row in map(json.loads, handle)]


def test_shipped_splits_share_no_document_and_smoke_comes_from_dev() -> None:
    keys = {name: {group_key(i, s) for i, s in shipped_ids(name)} for name in ("train", "dev", "test")}
    assert not keys["train"] & keys["dev"]
    assert not keys["train"] & keys["test"]
    assert not keys["dev"] & keys["test"]
    smoke = {i for i, _ in shipped_ids("smoke")}
    assert len(smoke) == 24 and smoke <= {i for i, _ in shipped_ids("dev")}
    assert {s for _, s in shipped_ids("smoke")} == {
        s for name in ("train", "dev", "test") for _, s in shipped_ids(name)
    }


@pytest.mark.skipif(not default_raw_dir().is_dir(), reason="raw data not present beside this checkout")
def test_rebuild_reproduces_the_shipped_files_byte_for_byte(tmp_path: Path) -> None:
    from edgewise.data.converters.pipeline import build_all

    write_splits(build_all(default_raw_dir(), log=lambda _message: None), tmp_path)
    for name in SPLITS:
        assert (tmp_path / f"{name}.jsonl").read_bytes() == split_path(name).read_bytes(), name
