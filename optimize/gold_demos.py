"""Gold demos: labeled training episodes shown to the model as worked examples, within a token budget.

A gold demo is a training episode's inputs with its labeled edges as the reply, written in the
program's reply shape. Bootstrapped demos are only as good as the teacher that wrote them (a 1.5B
model's traces repeat one or two types); gold demos show the labels' own conventions: which type,
which direction, which date. They are a fixed prefix of every request, which llama-server's prompt
cache evaluates once, so their cost per episode after the first is small (measured by the bench).

`select_gold_demos` picks demos round-robin over sources, sources that label every fact first
(`exhaustive`: a partial label would teach the model to leave facts out), until `max_demos` or
`token_budget` is reached. With seed 0 it takes, in each source, the episode with the most types no
earlier demo showed (short texts first on a tie); another seed draws a random episode of each source.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from typing import Any, Final, NamedTuple

import dspy

from edgewise.domain.errors import UsageError
from edgewise.domain.gold import LabeledEpisode
from edgewise.modules.context import extraction_inputs
from edgewise.signatures.extract_edges import OutputShape, reply_edge

DEFAULT_DEMO_TOKEN_BUDGET: Final = 2500
"""Estimated prompt tokens all gold demos together may take (about 4 characters a token)."""

DEMO_OTHER_TYPES: Final = 4
"""Types a demo lists besides those its gold uses, so that it still shows a choice among types."""

CHARS_PER_TOKEN: Final = 4.0
"""The estimate's ratio: English text and JSON with the Qwen2.5 tokenizer run 3.5-4.5 characters a
token; the bench reports the real prompt tokens."""


class GoldDemos(NamedTuple):
    """The chosen demos, the episodes they came from, and their estimated prompt tokens."""

    demos: list[dspy.Example]
    episode_ids: list[str]
    estimated_tokens: int


def gold_demo(
    labeled: LabeledEpisode, shape: OutputShape, *, other_types: int = DEMO_OTHER_TYPES
) -> dspy.Example:
    """`labeled` as a demo of the extract step: its inputs, and its gold edges as the reply.

    Its RELATIONSHIP TYPES keep the types its gold uses and the first `other_types` others: a
    document source lists some 60 types per episode, which would make one demo cost 1,500 tokens.
    """
    inputs = extraction_inputs(labeled.episode())
    used = {edge.relationship_type for edge in labeled.edges}
    others = [name for name in inputs["relationship_types"] if name not in used][:other_types]
    inputs["relationship_types"] = {
        name: meaning
        for name, meaning in inputs["relationship_types"].items()
        if name in used or name in others
    }
    edges = [reply_edge(edge, shape) for edge in labeled.edges]
    # `gold_episode_id` is provenance only: adapters format a demo's signature fields, nothing else.
    return dspy.Example(**inputs, edges=edges, gold_episode_id=labeled.id).with_inputs(*inputs)


def estimated_tokens(demo: dspy.Example) -> int:
    """Prompt tokens one demo adds, estimated from its JSON size."""
    data = {key: value for key, value in demo.items() if key not in ("edges", "gold_episode_id")}
    data["edges"] = [
        edge.model_dump() if hasattr(edge, "model_dump") else edge for edge in demo.get("edges", [])
    ]
    return int(len(json.dumps(data, ensure_ascii=False)) / CHARS_PER_TOKEN) + 1


def select_gold_demos(
    train: Sequence[LabeledEpisode],
    shape: OutputShape,
    *,
    max_demos: int,
    token_budget: int = DEFAULT_DEMO_TOKEN_BUDGET,
    seed: int = 0,
) -> GoldDemos:
    """Up to `max_demos` gold demos from `train` covering its sources and types, within `token_budget`."""
    if max_demos < 0 or token_budget < 0:
        raise UsageError("max_demos and token_budget must be >= 0")
    rng = random.Random(seed)
    by_source: dict[str, list[tuple[LabeledEpisode, dspy.Example, int]]] = {}
    for labeled in train:
        if labeled.edges:
            demo = gold_demo(labeled, shape)
            by_source.setdefault(labeled.source, []).append((labeled, demo, estimated_tokens(demo)))
    sources = sorted(by_source)
    for source in sources:
        rng.shuffle(by_source[source])
    rng.shuffle(sources)
    sources.sort(key=lambda name: not any(item[0].exhaustive for item in by_source[name]))  # stable
    chosen: list[tuple[LabeledEpisode, dspy.Example, int]] = []
    seen_types: set[str] = set()
    spent = 0
    while len(chosen) < max_demos and any(by_source.values()):
        progressed = False
        for source in sources:
            if len(chosen) >= max_demos:
                break
            pool = [item for item in by_source[source] if spent + item[2] <= token_budget]
            if not pool:
                by_source[source] = []
                continue
            # Seed 0 takes the most telling demo of each source; other seeds a random one (a random
            # search over source-stratified demo sets then has different sets to compare).
            best = max(pool, key=lambda item: _value(item, seen_types)) if seed == 0 else rng.choice(pool)
            by_source[source].remove(best)
            chosen.append(best)
            spent += best[2]
            seen_types |= {edge.relationship_type for edge in best[0].edges}
            progressed = True
        if not progressed:
            break
    return GoldDemos([item[1] for item in chosen], [item[0].id for item in chosen], spent)


def _value(item: tuple[LabeledEpisode, dspy.Example, int], seen_types: set[str]) -> tuple[Any, ...]:
    """Exhaustive labels first, then new types, then the shorter text (random order broke ties)."""
    labeled, _, tokens = item
    new_types = len({edge.relationship_type for edge in labeled.edges} - seen_types)
    return (labeled.exhaustive, new_types, -tokens)
