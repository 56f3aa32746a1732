"""The labeled splits as a Hugging Face dataset: declared column types, and an exact round trip."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgewise.cli import main
from edgewise.data.hf import features, from_row, to_dataset
from edgewise.data.loader import load_episodes

datasets = pytest.importorskip("datasets")


@pytest.mark.parametrize("split", ["dev", "smoke"])
def test_every_episode_comes_back_from_its_row_unchanged(split: str) -> None:
    episodes = load_episodes(split)
    dataset = to_dataset(episodes)
    assert dataset.features == features() and len(dataset) == len(episodes)
    assert [from_row(row) for row in dataset] == episodes


def test_dates_stay_iso_strings_and_attributes_json() -> None:
    dataset = to_dataset(load_episodes("smoke"))
    assert dataset.features["referenceTime"] == datasets.Value("string")
    assert all(row["referenceTime"].endswith("Z") for row in dataset)
    edges = [edge for row in dataset for edge in row["edges"]]
    assert all(isinstance(edge["attributes"], str) for edge in edges)
    assert "{}" in {edge["attributes"] for edge in edges}  # a type without attributes


def test_a_labeled_null_attribute_survives_the_round_trip() -> None:
    """Arrow's nulls stand for absent fields, but a null attribute value is an answer and comes back."""
    episode = next(e for e in load_episodes("dev") if any(None in g.attributes.values() for g in e.edges))
    (row,) = to_dataset([episode])
    written = [json.loads(edge["attributes"]) for edge in row["edges"]]
    assert written == [edge.attributes for edge in episode.edges]
    assert from_row(row).edges == episode.edges


def test_cli_export_writes_a_dataset_dict_and_parquet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["data", "export", str(tmp_path / "hf"), "--split", "smoke"]) == 0
    loaded = datasets.load_from_disk(str(tmp_path / "hf"))
    assert list(loaded) == ["smoke"] and len(loaded["smoke"]) == len(load_episodes("smoke"))
    assert main(["data", "export", str(tmp_path / "pq"), "--split", "smoke", "--format", "parquet"]) == 0
    table = datasets.Dataset.from_parquet(str(tmp_path / "pq" / "smoke.parquet"))
    assert [from_row(row) for row in table] == load_episodes("smoke")
    assert "wrote" in capsys.readouterr().out
