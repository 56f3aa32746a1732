"""The labeled splits as a Hugging Face `datasets.DatasetDict`, with every column's type declared.

The JSONL files are what edgewise reads (a line keeps every value exactly as written, and a bad
line is an error naming its field); a `DatasetDict` is what the rest of the ecosystem reads:
`save_to_disk`, Parquet, the Hub, Arrow-native filtering and joins. `splits_dataset` builds one from
the validated episodes with explicit `Features`, so no type is inferred from the data: the
reference time and dates stay ISO 8601 strings with their "Z" (Arrow inference would drop it), and
edge attributes, whose value kinds differ between edge types, are one JSON string per edge (its labeled
nulls included: a null there is an answer, "the text does not say", not a missing value).
`edgewise data export` writes it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from edgewise.data.loader import SPLITS
from edgewise.domain.gold import LabeledEpisode


def features() -> Any:
    """The declared column types of a labeled-episode dataset."""
    from datasets import Features, List, Value

    text = Value("string")
    entity = {"name": text, "type": text, "summary": text}
    attribute = {"name": text, "kind": text, "description": text}
    edge_type = {
        "name": text,
        "description": text,
        "sourceTypes": List(text),
        "targetTypes": List(text),
        "symmetric": Value("bool"),
        "attributes": List(attribute),
    }
    edge = {
        "relationshipType": text,
        "sourceEntityName": text,
        "targetEntityName": text,
        "fact": text,
        "validAt": text,
        "invalidAt": text,
        "attributes": text,  # JSON: value kinds differ between edge types
        "aliases": List(text),
        "validAtGranularity": text,
        "invalidAtGranularity": text,
    }
    return Features(
        {
            "id": text,
            "source": text,
            "license": text,
            "exhaustive": Value("bool"),
            "exhaustiveEntities": Value("bool"),
            "episodeContent": text,
            "previousEpisodes": List(text),
            "entities": List(entity),
            "referenceTime": text,
            "edgeTypes": List(edge_type),
            "customPrompt": text,
            "edges": List(edge),
        }
    )


def row(episode: LabeledEpisode) -> dict[str, Any]:
    """One episode as a row of `features()`: the JSONL line's values, attributes as JSON text."""
    data = episode.to_json_dict()
    for edge in data["edges"]:
        edge["attributes"] = json.dumps(edge.get("attributes") or {}, sort_keys=True)
    return {name: data.get(name) for name in features()}


def to_dataset(episodes: Iterable[LabeledEpisode]) -> Any:
    """A `datasets.Dataset` of labeled episodes with the declared `features()`."""
    from datasets import Dataset

    return Dataset.from_list([row(episode) for episode in episodes], features=features())


def splits_dataset(splits: Sequence[str] = SPLITS) -> Any:
    """The shipped splits as a `datasets.DatasetDict` (train, dev, test, smoke by default)."""
    from datasets import DatasetDict

    from edgewise.data.loader import load_episodes

    return DatasetDict({name: to_dataset(load_episodes(name)) for name in splits})


def from_row(data: dict[str, Any]) -> LabeledEpisode:
    """A dataset row back to the `LabeledEpisode` it was made from (the inverse of `row`)."""
    clean = _drop_nulls({**data, "edges": [dict(edge) for edge in data.get("edges") or []]})
    for edge in clean["edges"]:  # after the nulls are dropped: a labeled null attribute is kept
        edge["attributes"] = json.loads(edge.get("attributes") or "{}")
    return LabeledEpisode.model_validate(clean)


def _drop_nulls(value: Any) -> Any:
    """Absent optional fields come back from Arrow as null; the model's defaults stand for them."""
    if isinstance(value, dict):
        return {key: _drop_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_drop_nulls(item) for item in value]
    return value
