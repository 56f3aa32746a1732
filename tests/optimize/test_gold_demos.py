"""Gold demos: labeled training episodes as worked examples, covering sources and types in a budget."""

from __future__ import annotations

from typing import Any

import pytest

from edgewise.domain.gold import LabeledEpisode
from edgewise.optimize.gold_demos import estimated_tokens, gold_demo, select_gold_demos
from edgewise.signatures.replies import CompactEdge, ExtractedEdge


def episode(
    i: int, source: str, types: list[str], *, exhaustive: bool = True, words: int = 5
) -> LabeledEpisode:
    data: dict[str, Any] = {
        "id": f"{source}-{i}",
        "source": source,
        "license": "CC0-1.0",
        "exhaustive": exhaustive,
        "episodeContent": " ".join(["word"] * words) + f" Ann{i} and Co{i}.",
        "entities": [{"name": f"Ann{i}"}, {"name": f"Co{i}"}],
        "referenceTime": "2025-01-01T00:00:00Z",
        "edgeTypes": [{"name": name, "description": f"{name} meaning"} for name in [*types, "A", "B", "C", "D", "E", "F"]],
        "edges": [
            {"relationshipType": t, "sourceEntityName": f"Ann{i}", "targetEntityName": f"Co{i}", "fact": t,
             "validAt": "2021-03-05T00:00:00Z"}
            for t in types
        ],
    }  # fmt: skip
    return LabeledEpisode.model_validate(data)


TRAIN = [
    episode(1, "chat", ["WORKS_AT"]),
    episode(2, "chat", ["WORKS_AT", "LIVES_IN"]),
    episode(3, "docs", ["FOUNDED"], words=400),
    episode(4, "docs", ["LOCATED_IN"]),
    episode(5, "partial", ["BORN_IN"], exhaustive=False),
]


def test_a_gold_demo_is_the_episode_s_inputs_with_its_labels_as_the_reply() -> None:
    labeled = TRAIN[1]
    seed = gold_demo(labeled, "seed")
    assert seed["episode_content"] == labeled.episode_content
    assert [edge.relationshipType for edge in seed["edges"]] == ["WORKS_AT", "LIVES_IN"]
    assert isinstance(seed["edges"][0], ExtractedEdge) and seed["edges"][0].validAt == "2021-03-05T00:00:00Z"
    compact = gold_demo(labeled, "compact")
    assert isinstance(compact["edges"][0], CompactEdge) and compact["edges"][0].validAt == "2021-03-05"
    assert compact["gold_episode_id"] == labeled.id
    # the types its gold uses, and only a few others
    assert {"WORKS_AT", "LIVES_IN"} <= set(seed["relationship_types"]) and len(
        seed["relationship_types"]
    ) == 6


def test_selection_goes_round_robin_over_sources_exhaustive_ones_first() -> None:
    chosen = select_gold_demos(TRAIN, "seed", max_demos=3)
    sources = [episode_id.split("-")[0] for episode_id in chosen.episode_ids]
    assert sorted(sources) == ["chat", "docs", "partial"]
    assert sources[-1] == "partial"  # a partly labeled source comes after the fully labeled ones
    assert "chat-2" in chosen.episode_ids  # two types teach more than one
    assert "docs-4" in chosen.episode_ids  # the short document, not the 400-word one
    assert chosen.estimated_tokens == sum(estimated_tokens(demo) for demo in chosen.demos)


def test_the_token_budget_is_never_exceeded_and_seeds_vary_the_pick() -> None:
    one = estimated_tokens(gold_demo(TRAIN[0], "seed"))
    chosen = select_gold_demos(TRAIN, "seed", max_demos=5, token_budget=2 * one + 5)
    assert chosen.estimated_tokens <= 2 * one + 5 and len(chosen.demos) == 2
    picks = {tuple(select_gold_demos(TRAIN, "seed", max_demos=2, seed=s).episode_ids) for s in range(8)}
    assert len(picks) > 1
    with pytest.raises(ValueError):
        select_gold_demos(TRAIN, "seed", max_demos=-1)
